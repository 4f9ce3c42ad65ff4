#pragma once
// The HTTP/2 codec of a connection (internal, not installed): a connection whose first bytes are the
// HTTP/2 preface, whose TLS handshake chose h2 by ALPN, or whose HTTP/1.1 request asked for h2c, is
// handed by its HTTP/1 codec to this sibling on the transport (transport/transport.hpp), which reads
// into the H2Session, writes what the session produces, runs the app for each complete request (inline on the io thread, or on the
// app pool) and keeps the connection's deadline (idle, body, send timeouts) in the io thread's list.
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <unordered_map>

#include <boost/system/error_code.hpp>

#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"
#include "csgi/adapters/standalone/detail/transport/transport.hpp"

namespace csgi::standalone::detail {

class WsSession;
class ByteBudget;

/// How `bytes` (the first bytes of a connection) compare with the HTTP/2 client preface (RFC 9113 §3.4):
/// 1 all of it, 0 a prefix of it (wait for more), -1 something else.
int h2_preface_match(std::string_view bytes) noexcept;

class H2Conn final : public H2Host, public Codec {
public:
  /// `url_scheme` is the connection's: "http" on a plain socket, "https" over TLS.
  explicit H2Conn(Transport& t, std::string_view url_scheme = "http");
  ~H2Conn() override;
  /// Starts the session with the bytes already read from the transport (the preface and what followed
  /// it).
  void start(std::string_view initial);
  /// The same after an HTTP/1.1 `Upgrade: h2c` request: a 101 goes first, then the session with that
  /// request as stream 1 (`settings`: its decoded HTTP2-Settings; `env`: its env, copied).
  void start_upgraded(std::string_view settings, std::unique_ptr<Env> env, bool head, std::string_view initial);

  // Codec.
  void on_read(error_code ec, std::size_t n) override;
  void on_written(error_code ec) override;
  void on_timeout() override;
  void on_shutdown(bool hurry) override;
  /// The connection is closed: the session and its streams go (writers fail from now on).
  void on_close() noexcept override;
  std::string abandon(int status) noexcept override;
  std::string abandon_pooled(int status, std::atomic<bool>& answered) noexcept override;

  // H2Host.
  void on_request(std::shared_ptr<H2Request> req) override;
  void on_response_done(const H2Request& req, int status, std::uint64_t body_bytes, bool complete) override;
  void log_error(std::string_view what) override;
  std::unique_ptr<Env> acquire_env() override;
  void release_env(std::unique_ptr<Env> env) override;

  // Posted to the io thread by the app's threads.
  /// `ws`: the WebSocket handler the app took (csgix.websocket), run when `res` is its 101.
  void on_app_done(std::int32_t id, Response res, std::shared_ptr<websocket::Handler> ws = nullptr);
  void on_app_left();
  void on_writer_start(std::int32_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w);
  void on_writer_flush(std::int32_t id);
  void on_responder_dropped(std::int32_t id);
  bool interim_here(std::int32_t id, int status, const Headers& headers);
  void pump();

  // WebSocket over a stream (RFC 8441; h2_websocket.cpp), for its pipe.
  void ws_consume(std::int32_t id, std::size_t n);
  void ws_more(std::int32_t id);
  void ws_reset(std::int32_t id);
  void ws_ended(std::int32_t id);

private:
  void begin_websocket(std::int32_t id, Response& res, websocket::Handler handler);
  void set_env(H2Request& req);
  void run_inline(const std::shared_ptr<H2Request>& req);
  void run_pooled(const std::shared_ptr<H2Request>& req);
  void answer(const std::shared_ptr<H2Request>& req, Response res, std::shared_ptr<websocket::Handler> ws = nullptr);
  void open();
  void receive_first(std::string_view initial);
  bool receive(const char* data, std::size_t n);
  void wait_read();
  void update_deadline();
  void finish();

  std::string_view url_scheme_;
  std::unique_ptr<H2Session> session_;
  std::unique_ptr<char[]> rbuf_;
  std::string out_;           // the bytes of the write in flight
  std::string prefix_;        // bytes to write before the first frame (an upgrade's 101)
  bool reading_ = false;
  bool writing_ = false;
  bool receiving_ = false;    // inside H2Session::receive (or upgrade): pump() does not end the connection
  bool finishing_ = false;    // close once the write in flight is done
  bool blocked_ = false;      // the last update_deadline() saw bytes waiting on the peer
  std::uint64_t data_sent_ = 0;  // the session's data_sent() at the last update_deadline()
  // While requests are incomplete: the bytes received since they began, for --body-min-rate.
  BodyPace pace_;
  bool pacing_ = false;
  bool stopping_ = false;
  std::shared_ptr<H2Interim> interim_;
  std::shared_ptr<const TlsInfo> tls_info_;       // the connection's, shared by its requests' envs
  std::vector<std::unique_ptr<Env>> spare_envs_;  // envs of closed streams, for the next ones
  std::size_t in_app_ = 0;  // requests whose app call (or delayed response's callable) has not returned
  std::unordered_map<std::int32_t, std::shared_ptr<WsSession>> ws_;  // the WebSocket sessions of streams
  std::shared_ptr<ByteBudget> ws_budget_;  // their incoming bytes (ServerOptions::ws_connection_buffer_bytes)
};

}  // namespace csgi::standalone::detail
