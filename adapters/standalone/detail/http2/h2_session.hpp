#pragma once
// One HTTP/2 connection of the standalone server as bytes in, bytes out (internal, not installed): an
// nghttp2 server session (RFC 9113) that turns each request stream into its own env and each response
// into frames, with HTTP/2 flow control. It never touches a socket: the plain-fd driver (h2_conn.cpp)
// feeds it what it reads and writes what it produces, and a TLS stream can do the same. Everything here
// runs on the connection's io thread; the app's threads reach a stream only through the driver.
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"
#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/adapters/standalone/detail/exchange/wire_fields.hpp"
#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi::standalone::detail {

/// Where csgix.informational of a stream goes (the driver's, one per connection).
class H2Interim {
public:
  virtual ~H2Interim() = default;
  virtual bool send(std::int32_t id, int status, const Headers& headers) = 0;
};

/// A request stream's env and what its values point into. Shared by the stream, the app's call and a
/// delayed response's Responder and Writer, so that the env lives until the last of them is done (APP-4);
/// its cleanup handlers run then (or, when the stream is its last holder, the session recycles the env
/// through its host). It is the env's csgi.input (the whole body, read before the app runs) and
/// csgix.informational (forwarded to `interim`, set by the driver). On an RFC 8441 extended CONNECT
/// (`websocket`) it is also csgix.websocket: the handler the app gives during its call (`in_app`) is
/// kept for the driver, which runs it once the app answered 101.
struct H2Request final : Input, Informational, websocket::Handshake {
  std::int32_t id = 0;
  // What the env's connection values point into (REMOTE_ADDR, SERVER_PORT, …; HTTPS, SSL_* over TLS):
  // the connection's, shared rather than copied into each env.
  std::shared_ptr<const void> keep_conn, keep_tls;
  std::unique_ptr<Env> env;
  CleanupHandlers cleanup;
  RequestBody body;  // memory, then a temporary file (request_body.hpp)
  bool head = false;
  // Handed to another thread (the app pool, a Responder or Writer): its env is never recycled, since
  // the last holder may be on that thread.
  bool escaped = false;
  std::shared_ptr<H2Interim> interim;
  bool websocket = false;
  std::atomic<bool> in_app{false};
  std::unique_ptr<websocket::Handler> ws_handler;
  ~H2Request() override;
  std::size_t read(char* buf, std::size_t n) override { return body.read(buf, n); }
  bool seekable() const override { return true; }
  void rewind() override { body.rewind(); }
  bool send(int status, const Headers& headers) override { return interim && interim->send(id, status, headers); }
  bool take(websocket::Handler handler) override;
  const std::vector<std::string>* origins = nullptr;  // ServerOptions::ws_allowed_origins
  const std::vector<std::string>& allowed_origins() const override {
    return origins ? *origins : websocket::Handshake::allowed_origins();
  }
};

struct H2WsPipe;

/// The limits of an HTTP/2 connection (ServerOptions' h2_* and request limits).
struct H2Limits {
  std::uint32_t max_streams = 100;
  std::uint32_t initial_window = 65535;
  std::size_t max_header_bytes = 16384;
  std::size_t max_header_count = 100;
  std::size_t max_request_line = 8192;
  std::uint64_t max_body_bytes = 64ull << 20;
  bool websocket = true;  // SETTINGS_ENABLE_CONNECT_PROTOCOL: WebSocket over a stream (RFC 8441)
  BodyLimits body;        // where request bodies go (the server's, with its process-wide memory cap)
  const std::vector<std::string>* ws_allowed_origins = nullptr;  // the options' own, which outlive sessions
  static H2Limits from(const ServerOptions& opt);
};

/// What the session asks of its driver.
class H2Host {
public:
  virtual ~H2Host() = default;
  /// A request is complete (head and body): run the app for it, then answer with respond() and friends.
  virtual void on_request(std::shared_ptr<H2Request> req) = 0;
  /// A response ended (sent, or its stream reset): for the access log and the stats.
  virtual void on_response_done(const H2Request& req, int status, std::uint64_t body_bytes, bool complete) = 0;
  /// A message for csgi.errors.
  virtual void log_error(std::string_view what) = 0;
  /// An empty env for a new stream, and one back from a stream that was its request's last holder.
  virtual std::unique_ptr<Env> acquire_env() { return std::make_unique<Env>(); }
  virtual void release_env(std::unique_ptr<Env>) {}
};

class H2Session {
public:
  H2Session(H2Host& host, const H2Limits& limits, const csgi::ConnectionInfo& conn);
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  /// Feeds bytes read from the peer. False on a fatal protocol error (a GOAWAY is queued: send what
  /// produce() gives, then close). Complete requests go to the host after the bytes are processed.
  bool receive(const char* data, std::size_t n);
  /// Appends frames to send to `out`, until it holds about `max` bytes or nothing is left to send.
  /// False on a fatal error.
  bool produce(std::string& out, std::size_t max);
  /// False once the session has ended: a GOAWAY both ways and no stream open, or a fatal error.
  bool alive() const;
  bool want_write() const;

  // Responses (the io thread). A stream reset in the meantime makes them no-ops.
  void respond(std::int32_t id, Response res);
  void start_writer(std::int32_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w);
  /// New bytes (or the end) in a stream's writer.
  void pull_writer(std::int32_t id);
  bool interim(std::int32_t id, int status, const Headers& headers);
  /// The app failed to answer: 500 when the head is not out yet, else the stream is reset.
  void fail(std::int32_t id);
  /// WebSocket over the stream (RFC 8441): its 200 with `headers`, then DATA from and to `pipe`. False
  /// when the stream is gone or answered.
  bool start_websocket(std::int32_t id, const Headers& headers, const std::shared_ptr<H2WsPipe>& pipe);
  /// The WebSocket session read `n` bytes: the peer may send as many more.
  void ws_consume(std::int32_t id, std::size_t n);
  /// The WebSocket session wrote (or ended its side): DATA to send.
  void ws_more(std::int32_t id);
  /// Resets the stream (CANCEL).
  void reset(std::int32_t id);
  /// The request of an open stream (nullptr when it is gone).
  H2Request* request(std::int32_t id) const;

  /// HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2): the upgraded request, complete, becomes stream 1 with
  /// `env`; `settings` is its decoded HTTP2-Settings. False when nghttp2 refuses them.
  bool upgrade(std::string_view settings, std::unique_ptr<Env> env, bool head);
  /// Graceful stop: GOAWAY, the streams in flight finish, no new one is accepted.
  void shutdown();
  /// The connection is gone: each stream whose response head went out and whose body did not end is
  /// reported done (not complete) with the body bytes it got.
  void report_cut_short() noexcept;
  /// Streams opened and not closed.
  std::size_t open_streams() const noexcept { return open_; }
  /// Streams that have a response body waiting for the peer's flow-control window.
  bool blocked_on_window() const;
  /// Response body bytes handed to DATA frames so far (progress, for the send timeout).
  std::uint64_t data_sent() const noexcept { return data_sent_; }
  /// Streams waiting for the rest of their request (head or body).
  bool awaiting_request() const noexcept { return awaiting_ > 0; }

  struct Stream;

private:
  friend struct H2Callbacks;
  auto head_of(Stream& s);
  Stream* find(std::int32_t id) const;
  using StreamMap = std::unordered_map<std::int32_t, std::unique_ptr<Stream>>;
  Stream* heading(nghttp2_session* ng, std::int32_t id) const;
  std::unique_ptr<Stream> new_stream();
  void insert(std::unique_ptr<Stream> s);
  void recycle(StreamMap::node_type node) noexcept;
  void dispatch();
  void submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length);
  void refuse(Stream& s, int status, std::string_view why);
  void finish_head(Stream& s, bool end_stream);
  void request_complete(Stream& s);
  void close_stream(std::int32_t id, std::uint32_t error);
  bool submit_trailers(Stream& s);

  H2Host& host_;
  // The host's log, for the exchange's pieces.
  struct Log final : ExchangeLog {
    H2Host* host;
    explicit Log(H2Host* h) : host(h) {}
    void error(std::string_view what) noexcept override {
      try {
        host->log_error(what);
      } catch (...) {
      }
    }
  };
  Log log_{&host_};
  H2Limits limits_;
  csgi::ConnectionInfo conn_;                    // views into conn_text_
  std::shared_ptr<const std::string> conn_text_;
  struct Blocks;
  std::unique_ptr<Blocks> blocks_;  // nghttp2's memory (freed after the session)
  nghttp2_session* ng_ = nullptr;
  StreamMap streams_;
  std::vector<std::int32_t> ready_;  // complete requests, handed to the host after receive()
  std::vector<StreamMap::node_type> spare_streams_;  // closed streams' nodes and objects, emptied, for the next ones
  std::vector<StreamMap::node_type> spare_nodes_;    // their nodes once new_stream() took the object
  Stream* heading_ = nullptr;  // the stream whose request header block is being received (open)
  WireFields<nghttp2_nv> fields_;  // a field section being submitted (kept for its capacity)
  std::size_t open_ = 0;
  std::size_t awaiting_ = 0;
  std::uint64_t buffered_ = 0;      // request body bytes held by the open streams (within max_body_bytes)
  std::uint64_t data_sent_ = 0;
  std::uint64_t empty_frames_ = 0;  // DATA frames without payload nor END_STREAM (a flood)
  bool fatal_ = false;
  bool calm_ = false;                // the peer abused the protocol: GOAWAY ENHANCE_YOUR_CALM
};

}  // namespace csgi::standalone::detail
