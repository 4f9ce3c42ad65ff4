#pragma once
// The HTTP/3 codec (internal, not installed): nghttp3's server connection on a QUIC connection
// (quic.hpp), its streams' requests on the exchange. Declared here, defined by concern:
//   h3_conn.cpp      the connection: streams, request heads and bodies, the app call (inline or pooled);
//   h3_response.cpp  responses: the exchange's sink for a stream, bodies read out to nghttp3, writers,
//                    interim responses.
#include "csgi/adapters/standalone/detail/http3/h3.hpp"

#include <nghttp3/nghttp3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/exchange/fields.hpp"
#include "csgi/adapters/standalone/detail/exchange/request.hpp"
#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"
#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"
#include "csgi/adapters/standalone/detail/exchange/stream_body.hpp"
#include "csgi/adapters/standalone/detail/exchange/wire_fields.hpp"
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail::h3 {

constexpr std::uint64_t h3_no_error = NGHTTP3_H3_NO_ERROR;
constexpr std::size_t file_chunk = 16384;  // a file body is read this much at a time

class H3;

/// A request stream's env and what its values point into, shared by the stream, the app's call and a
/// delayed response's Responder and Writer (APP-4); its cleanup handlers run when the last of them goes.
struct H3Request final : Input, Informational {
  std::int64_t id = 0;
  std::shared_ptr<const void> keep_conn, keep_tls;
  std::unique_ptr<Env> env = std::make_unique<Env>();
  CleanupHandlers cleanup;
  RequestBody body;
  bool head = false;
  std::weak_ptr<H3> codec;
  IoThread* thread = nullptr;
  ~H3Request() override {
    if (env && cleanup.size() > 0) cleanup.run(*env);
  }
  std::size_t read(char* buf, std::size_t n) override { return body.read(buf, n); }
  bool seekable() const override { return true; }
  void rewind() override { body.rewind(); }
  bool send(int status, const Headers& headers) override;
};

/// The bytes of a response handed to nghttp3, kept until the peer acknowledged them.
struct Chunk {
  BodyPiece piece;
  std::size_t acked = 0;
};

struct Stream {
  std::int64_t id = 0;
  std::shared_ptr<H3Request> req;
  // The request head as it comes.
  std::size_t header_bytes = 0, header_count = 0;
  std::string_view method, path, authority, host, cookie;
  int bad_status = 0;
  std::string why;
  std::optional<std::uint64_t> content_length;
  bool head_done = false, complete = false, dispatched = false, responded = false, reported = false;
  std::uint64_t buffered = 0;  // body bytes counted against the connection's budget
  bool window_shut = false;    // its response waits for the peer's flow-control window
  // The response.
  int status = 0;
  StreamBody body;
  bool in_app = false;  // its app call (or delayed response's callable) has not returned
  std::deque<Chunk> chunks;  // the body's pieces handed to nghttp3, until acknowledged
};

/// The connection's own values (REMOTE_ADDR, SERVER_PORT, …), which requests' envs point into.
struct ConnText {
  std::string server_name, server_port, remote_addr, remote_port, script_name;
};

class H3 final : public QuicApp, public std::enable_shared_from_this<H3> {
public:
  H3(QuicStreams& q, IoThread& t, const ListenSocket& l);
  ~H3() override { detach(); }

  // QuicApp.
  bool start() override;
  bool received(std::int64_t id, const std::uint8_t* data, std::size_t n, bool fin) override;
  bool acked(std::int64_t id, std::uint64_t n) override { return !h3_ || ok(nghttp3_conn_add_ack_offset(h3_, id, n)); }
  bool stream_closed(std::int64_t id, std::uint64_t code) override;
  bool stream_reset(std::int64_t id) override { return !h3_ || ok(nghttp3_conn_shutdown_stream_read(h3_, id)); }
  bool unblocked(std::int64_t id) override {
    if (Stream* s = find(id)) s->window_shut = false;
    return !h3_ || ok(nghttp3_conn_unblock_stream(h3_, id));
  }
  long pending(std::int64_t& id, bool& fin, QuicVec* v, std::size_t max) override;
  bool wrote(std::int64_t id, std::size_t n) override { return !h3_ || ok(nghttp3_conn_add_write_offset(h3_, id, n)); }
  void blocked(std::int64_t id) override {
    if (Stream* s = find(id)) s->window_shut = true;
    if (h3_) nghttp3_conn_block_stream(h3_, id);
  }
  void write_shut(std::int64_t id) override {
    if (h3_) nghttp3_conn_shutdown_stream_write(h3_, id);
  }
  void shutdown() override;
  std::size_t busy() const override { return streams_.size() + in_app_; }
  bool app_at_work() const override {
    if (in_app_ > 0) return true;
    for (const auto& [id, s] : streams_)
      if (s->body.is_writer() && !s->body.ended()) return true;
    return false;
  }
  Clock::time_point deadline() override;
  void expired() override;
  std::uint64_t error() const override { return error_; }
  void detach() noexcept override;

  // The exchange's answers, on the io thread.
  void on_app_done(std::int64_t id, Response res);
  void on_app_left(std::int64_t id);
  void on_writer_start(std::int64_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w);
  void on_writer_flush(std::int64_t id);
  void on_responder_dropped(std::int64_t id);
  bool interim(std::int64_t id, int status, const Headers& headers);
  void log_error(std::string_view what) noexcept;
  Shared& shared() { return t_.shared; }
  IoThread& thread() { return t_; }

private:
  auto head_of(Stream& s);
  bool ok(int rv) {
    if (rv == 0) return true;
    error_ = nghttp3_err_infer_quic_app_error_code(rv);
    return false;
  }
  Stream* find(std::int64_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }
  static H3& self(void* p) { return *static_cast<H3*>(p); }
  template <class F>
  static int guard(void* p, F&& f) noexcept {
    try {
      return f();
    } catch (...) {
      self(p).error_ = NGHTTP3_H3_INTERNAL_ERROR;
      return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
  }
  void dispatch();
  void finish_head(Stream& s);
  void request_complete(Stream& s);
  void run_inline(const std::shared_ptr<H3Request>& req);
  void run_pooled(const std::shared_ptr<H3Request>& req);
  void respond(std::int64_t id, Response res);
  void submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length);
  bool submit_trailers(Stream& s);
  void report(Stream& s, bool complete) noexcept;

  // nghttp3's callbacks.
  static int on_acked(nghttp3_conn*, std::int64_t id, std::uint64_t n, void* p, void*);
  static int on_stream_close(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*);
  static int on_recv_data(nghttp3_conn*, std::int64_t id, const std::uint8_t* data, std::size_t n, void* p, void*);
  static int on_deferred_consume(nghttp3_conn*, std::int64_t id, std::size_t n, void* p, void*) {
    if (self(p).q_) self(p).q_->consumed(id, n);
    return 0;
  }
  static int on_begin_headers(nghttp3_conn*, std::int64_t id, void* p, void*);
  static int on_recv_header(nghttp3_conn*, std::int64_t id, std::int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                            std::uint8_t, void* p, void*);
  static int on_end_headers(nghttp3_conn*, std::int64_t id, int fin, void* p, void*);
  static int on_end_stream(nghttp3_conn*, std::int64_t id, void* p, void*);
  static nghttp3_ssize read_data(nghttp3_conn*, std::int64_t id, nghttp3_vec* vec, std::size_t veccnt,
                                 std::uint32_t* flags, void* p, void*);

  QuicStreams* q_;
  IoThread& t_;
  nghttp3_conn* h3_ = nullptr;
  std::shared_ptr<const ConnText> text_;
  ::csgi::ConnectionInfo conn_;
  std::shared_ptr<const TlsInfo> tls_;
  std::unordered_map<std::int64_t, std::unique_ptr<Stream>> streams_;
  WireFields<nghttp3_nv> fields_;  // a field section being submitted (kept for its capacity)
  std::vector<std::int64_t> ready_;  // complete requests, handed to the app after the bytes are read
  std::size_t in_app_ = 0;
  std::uint64_t error_ = 0;
  std::uint64_t buffered_ = 0;  // request body bytes held by the open streams (within max_body_bytes)
  // The deadline (as HTTP/2's): the send timeout while response bytes wait for the peer, renewed by bytes
  // it acknowledges; the body timeout while a request is incomplete, within what --body-min-rate allows.
  BodyPace pace_;
  bool pacing_ = false, waiting_ = false, body_moved_ = false;
  std::uint64_t acked_ = 0, acked_seen_ = 0;
  Clock::time_point send_at_{}, body_at_{};
  bool reading_ = false;
  struct Log final : ExchangeLog {
    H3* h;
    explicit Log(H3* c) : h(c) {}
    void error(std::string_view what) noexcept override { h->log_error(what); }
  };
  Log log_{this};
};

/// The route of a delayed response on an HTTP/3 stream: its connection's codec, while there.
class H3Route final : public ResponseRoute {
public:
  H3Route(std::weak_ptr<H3> c, std::int64_t id) : c_(std::move(c)), id_(id) {}
  void respond(Response r) override {
    if (auto c = c_.lock()) c->on_app_done(id_, std::move(r));
  }
  void start(const std::shared_ptr<WriterState>& w, int status, Headers headers) override {
    if (auto c = c_.lock()) c->on_writer_start(id_, status, std::move(headers), w);
    else w->gone();
  }
  void flush(const std::shared_ptr<WriterState>& w) override {
    {
      std::lock_guard lock(w->mu);
      w->flush_posted = false;
    }
    if (auto c = c_.lock()) c->on_writer_flush(id_);
  }
  void dropped() override {
    if (auto c = c_.lock()) c->on_responder_dropped(id_);
  }

private:
  std::weak_ptr<H3> c_;
  std::int64_t id_;
};

}  // namespace csgi::standalone::detail::h3
