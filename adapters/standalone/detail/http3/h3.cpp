// HTTP/3 over QUIC: nghttp3's server connection and its requests on the exchange (see h3.hpp).
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
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace {

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
  std::string own;
  std::string_view data;
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
  // The response.
  int status = 0;
  std::uint64_t sent = 0;
  enum class Src { none, view, file, pull, writer } src = Src::none;
  std::shared_ptr<const void> keep;
  std::string out;
  std::string_view view;
  bool view_given = false;
  std::shared_ptr<FileHandle> file;
  std::uint64_t file_off = 0, file_left = 0;
  StreamPtr pull;
  std::shared_ptr<WriterState> writer;
  std::optional<std::uint64_t> declared;
  Headers trailers;
  bool eof = false, deferred = false;
  bool in_app = false;  // its app call (or delayed response's callable) has not returned
  std::deque<Chunk> chunks;
  std::uint64_t inflight = 0;

  ~Stream() {
    if (pull) {
      try {
        pull->close();
      } catch (...) {
      }
    }
    if (writer) writer->gone();
  }
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
  bool unblocked(std::int64_t id) override { return !h3_ || ok(nghttp3_conn_unblock_stream(h3_, id)); }
  long pending(std::int64_t& id, bool& fin, QuicVec* v, std::size_t max) override;
  bool wrote(std::int64_t id, std::size_t n) override { return !h3_ || ok(nghttp3_conn_add_write_offset(h3_, id, n)); }
  void blocked(std::int64_t id) override {
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
      if (s->src == Stream::Src::writer && !s->eof) return true;
    return false;
  }
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
  struct Sink;
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
  std::size_t fill(Stream& s, nghttp3_vec* v);
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
  csgi::ConnectionInfo conn_;
  std::shared_ptr<const TlsInfo> tls_;
  std::unordered_map<std::int64_t, std::unique_ptr<Stream>> streams_;
  std::vector<std::int64_t> ready_;  // complete requests, handed to the app after the bytes are read
  std::size_t in_app_ = 0;
  std::uint64_t error_ = 0;
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

// csgix.informational: sent at once on the io thread; from another thread through its mailbox (that
// thread waits).
bool H3Request::send(int status, const Headers& headers) {
  auto here = [&] {
    auto c = codec.lock();
    return c && c->interim(id, status, headers);
  };
  if (thread->ioc.get_executor().running_in_this_thread()) return here();
  if (thread->exited.load(std::memory_order_acquire)) return false;
  return call_on_io(*thread->mailbox, thread->exited, here);
}

H3::H3(QuicStreams& q, IoThread& t, const ListenSocket& l) : q_(&q), t_(t) {
  auto text = std::make_shared<ConnText>();
  text->server_name = l.server_name;
  text->server_port = l.server_port;
  text->remote_addr = q.peer_addr();
  text->remote_port = q.peer_port();
  text->script_name = t.shared.opt.script_name;
  conn_.server_name = text->server_name;
  conn_.server_port = text->server_port;
  conn_.remote_addr = text->remote_addr;
  conn_.remote_port = text->remote_port;
  conn_.url_scheme = "https";
  conn_.script_name = text->script_name;
  text_ = std::move(text);
}

bool H3::start() {
  if (h3_) return true;
  auto tls = std::make_shared<TlsInfo>();
  tls->protocol = "TLSv1.3";  // the only version QUIC runs on (RFC 9001)
  tls->cipher = q_->tls_cipher();
  tls->sni = q_->tls_sni();
  tls_ = std::move(tls);
  nghttp3_callbacks cb{};
  cb.acked_stream_data = &H3::on_acked;
  cb.deferred_consume = &H3::on_deferred_consume;
  // No exception crosses nghttp3: one ends the connection (H3_INTERNAL_ERROR).
  cb.stream_close = [](nghttp3_conn* c, std::int64_t id, std::uint64_t code, void* p, void* sp) {
    return guard(p, [&] { return on_stream_close(c, id, code, p, sp); });
  };
  cb.recv_data = [](nghttp3_conn* c, std::int64_t id, const std::uint8_t* data, std::size_t n, void* p, void* sp) {
    return guard(p, [&] { return on_recv_data(c, id, data, n, p, sp); });
  };
  cb.begin_headers = [](nghttp3_conn* c, std::int64_t id, void* p, void* sp) {
    return guard(p, [&] { return on_begin_headers(c, id, p, sp); });
  };
  cb.recv_header = [](nghttp3_conn* c, std::int64_t id, std::int32_t t, nghttp3_rcbuf* n, nghttp3_rcbuf* v,
                      std::uint8_t f, void* p, void* sp) {
    return guard(p, [&] { return on_recv_header(c, id, t, n, v, f, p, sp); });
  };
  cb.end_headers = [](nghttp3_conn* c, std::int64_t id, int fin, void* p, void* sp) {
    return guard(p, [&] { return on_end_headers(c, id, fin, p, sp); });
  };
  cb.end_stream = [](nghttp3_conn* c, std::int64_t id, void* p, void* sp) {
    return guard(p, [&] { return on_end_stream(c, id, p, sp); });
  };
  // A stream nghttp3 finds malformed (RFC 9114 §4.1.2): it asks for the stream to be stopped both ways.
  cb.stop_sending = [](nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
    if (self(p).q_) self(p).q_->stop_reading(id, code);
    return 0;
  };
  cb.reset_stream = [](nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
    if (self(p).q_) self(p).q_->reset(id, code);
    return 0;
  };
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  const ServerOptions& opt = t_.shared.opt;
  settings.max_field_section_size = opt.max_header_bytes;
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_server_new(&h3_, &cb, &settings, nullptr, this) != 0) {
    h3_ = nullptr;
    error_ = NGHTTP3_H3_INTERNAL_ERROR;
    return false;
  }
  nghttp3_conn_set_max_client_streams_bidi(h3_, opt.h2_max_streams > 0 ? opt.h2_max_streams : 100);
  std::int64_t ctrl, enc, dec;
  if (!q_->open_uni(ctrl) || !q_->open_uni(enc) || !q_->open_uni(dec)) {
    error_ = NGHTTP3_H3_STREAM_CREATION_ERROR;
    return false;
  }
  return ok(nghttp3_conn_bind_control_stream(h3_, ctrl)) && ok(nghttp3_conn_bind_qpack_streams(h3_, enc, dec));
}

bool H3::received(std::int64_t id, const std::uint8_t* data, std::size_t n, bool fin) {
  if (!h3_ && !start()) return false;
  reading_ = true;
  nghttp3_ssize r = nghttp3_conn_read_stream(h3_, id, data, n, fin ? 1 : 0);
  reading_ = false;
  if (r < 0) {
    error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(r));
    return false;
  }
  if (q_) q_->consumed(id, static_cast<std::size_t>(r));
  dispatch();
  return true;
}

long H3::pending(std::int64_t& id, bool& fin, QuicVec* v, std::size_t max) {
  id = -1;
  fin = false;
  if (!h3_) return 0;
  int f = 0;
  nghttp3_ssize n = nghttp3_conn_writev_stream(h3_, &id, &f, reinterpret_cast<nghttp3_vec*>(v), max);
  if (n < 0) {
    error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(n));
    return -1;
  }
  fin = f != 0;
  return static_cast<long>(n);
}

bool H3::stream_closed(std::int64_t id, std::uint64_t code) {
  if (!h3_) return true;
  int rv = nghttp3_conn_close_stream(h3_, id, code);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
    if ((id & 0x3) == 0 && q_) q_->allow_stream();  // a request stream that carried nothing
    return true;
  }
  return ok(rv);
}

void H3::shutdown() {
  if (!h3_) return;
  nghttp3_conn_shutdown(h3_);
  if (q_) q_->wake();
}

void H3::detach() noexcept {
  q_ = nullptr;
  for (auto& [id, s] : streams_) report(*s, false);
  streams_.clear();
  if (h3_) nghttp3_conn_del(h3_);
  h3_ = nullptr;
}

void H3::log_error(std::string_view what) noexcept {
  try {
    std::string line = "csgi: ";
    line += what;
    line += " (HTTP/3)";
    t_.shared.errors.write(line);
  } catch (...) {
  }
}

// The stream's response ended (complete, or cut short): the stats, and what went out for its cleanup
// handlers (the access log).
void H3::report(Stream& s, bool complete) noexcept {
  if (s.reported || !s.responded) return;
  s.reported = true;
  (void)complete;
  if (s.req) response_done(t_.shared, s.req->cleanup, s.status, s.sent);
  else response_done(t_.shared, CleanupHandlers{}, s.status, s.sent);
}

int H3::on_stream_close(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
  H3& h = self(p);
  auto it = h.streams_.find(id);
  if (it == h.streams_.end()) {
    if ((id & 0x3) == 0 && h.q_) h.q_->allow_stream();  // a request stream that never sent a head
    return 0;
  }
  Stream& s = *it->second;
  h.report(s, code == h3_no_error && s.eof);
  // The peer may open another request stream, once this one's app call is done (a client resetting
  // streams whose apps still run gets no more: CVE-2023-44487).
  if (!s.in_app && h.q_) h.q_->allow_stream();
  h.streams_.erase(it);
  return 0;
}

int H3::on_acked(nghttp3_conn*, std::int64_t id, std::uint64_t n, void* p, void*) {
  Stream* s = self(p).find(id);
  if (!s) return 0;
  s->inflight -= std::min<std::uint64_t>(s->inflight, n);
  while (n > 0 && !s->chunks.empty()) {
    Chunk& c = s->chunks.front();
    std::uint64_t take = std::min<std::uint64_t>(n, c.data.size() - c.acked);
    c.acked += take;
    n -= take;
    if (c.acked == c.data.size()) s->chunks.pop_front();
  }
  if (s->writer) {
    std::lock_guard lock(s->writer->mu);
    s->writer->unsent = s->inflight;
    s->writer->cv.notify_all();
  }
  return 0;
}

int H3::on_begin_headers(nghttp3_conn*, std::int64_t id, void* p, void*) {
  H3& h = self(p);
  if (h.find(id)) return 0;
  auto s = std::make_unique<Stream>();
  s->id = id;
  s->req = std::make_shared<H3Request>();
  s->req->id = id;
  s->req->codec = h.weak_from_this();
  s->req->thread = &h.t_;
  h.streams_.emplace(id, std::move(s));
  return 0;
}

int H3::on_recv_header(nghttp3_conn*, std::int64_t id, std::int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                       std::uint8_t, void* p, void*) {
  H3& h = self(p);
  Stream* s = h.find(id);
  if (!s) return 0;
  nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
  nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
  const ServerOptions& opt = h.t_.shared.opt;
  s->header_bytes += n.len + v.len + 32;
  if (s->header_bytes > 4 * opt.max_header_bytes + 65536) {  // a QPACK bomb: the connection ends
    h.error_ = NGHTTP3_H3_EXCESSIVE_LOAD;
    return NGHTTP3_ERR_CALLBACK_FAILURE;
  }
  if (s->head_done || s->bad_status) return 0;  // trailers are not part of the env
  if (s->header_bytes > opt.max_header_bytes) {
    s->bad_status = 431;
    s->why = "request header too large";
    return 0;
  }
  if (++s->header_count > opt.max_header_count + 4) {
    s->bad_status = 431;
    s->why = "too many header fields";
    return 0;
  }
  Env& env = *s->req->env;
  auto copy = [&](const nghttp3_vec& b) {
    char* c = env.allocate(b.len);
    if (b.len) std::memcpy(c, b.base, b.len);
    return std::string_view(c, b.len);
  };
  std::string_view key(reinterpret_cast<const char*>(n.base), n.len);
  std::string_view val = copy(v);
  if (!key.empty() && key[0] == ':') {
    if (key == ":method") s->method = val;
    else if (key == ":path") s->path = val;
    else if (key == ":authority") s->authority = val;
    return 0;
  }
  if (key == "host") {
    if (!s->host.empty() && s->host != val) {
      s->bad_status = 400;
      s->why = "repeated Host";
    }
    s->host = val;
    return 0;
  }
  if (key == "cookie") {
    if (s->cookie.empty()) {
      s->cookie = val;
    } else {
      char* c = env.allocate(s->cookie.size() + 2 + val.size());
      std::memcpy(c, s->cookie.data(), s->cookie.size());
      std::memcpy(c + s->cookie.size(), "; ", 2);
      if (!val.empty()) std::memcpy(c + s->cookie.size() + 2, val.data(), val.size());
      s->cookie = {c, s->cookie.size() + 2 + val.size()};
    }
    return 0;
  }
  if (key == "content-length") {
    auto len = parse_length(val);
    if (!len || (s->content_length && *s->content_length != *len)) {
      s->bad_status = 400;
      s->why = "malformed Content-Length";
      return 0;
    }
    s->content_length = len;
  }
  try {
    add_header(env, copy({n.base, n.len}), val);
  } catch (const std::exception&) {
    s->bad_status = 431;
    s->why = "request header too large";
  }
  return 0;
}

int H3::on_end_headers(nghttp3_conn*, std::int64_t id, int fin, void* p, void*) {
  H3& h = self(p);
  Stream* s = h.find(id);
  if (!s || s->head_done) return 0;
  h.finish_head(*s);
  if (fin || s->bad_status) h.request_complete(*s);
  return 0;
}

int H3::on_end_stream(nghttp3_conn*, std::int64_t id, void* p, void*) {
  H3& h = self(p);
  if (Stream* s = h.find(id)) {
    if (s->content_length && s->req->body.size() != *s->content_length && !s->bad_status) {
      s->bad_status = 400;
      s->why = "request body shorter than its Content-Length";
    }
    h.request_complete(*s);
  }
  return 0;
}

int H3::on_recv_data(nghttp3_conn*, std::int64_t id, const std::uint8_t* data, std::size_t n, void* p, void*) {
  H3& h = self(p);
  if (h.q_) h.q_->consumed(id, n);  // held in the request body (memory or its file), within the limits
  Stream* s = h.find(id);
  if (!s || s->bad_status || s->complete) return 0;
  const ServerOptions& opt = h.t_.shared.opt;
  std::uint64_t size = s->req->body.size() + n;
  if (size > opt.max_body_bytes || (s->content_length && size > *s->content_length)) {
    s->bad_status = size > opt.max_body_bytes ? 413 : 400;
    s->why = s->bad_status == 413 ? "request body larger than " + std::to_string(opt.max_body_bytes) + " bytes"
                                  : "request body longer than its Content-Length";
    h.request_complete(*s);
    if (h.q_) h.q_->stop_reading(id, h3_no_error);
    nghttp3_conn_shutdown_stream_read(h.h3_, id);
    return 0;
  }
  std::string why;
  if (!s->req->body.append(reinterpret_cast<const char*>(data), n, h.t_.shared.body_limits, why)) {
    h.log_error(why);
    s->bad_status = 500;
    s->why = "cannot store the request body";
    h.request_complete(*s);
    return 0;
  }
  return 0;
}

void H3::finish_head(Stream& s) {
  s.head_done = true;
  const ServerOptions& opt = t_.shared.opt;
  Env& env = *s.req->env;
  if (!s.bad_status) {
    if (s.method.size() + s.path.size() + 10 > opt.max_request_line) {
      s.bad_status = 414;
      s.why = "request line too long";
    } else if (s.content_length && *s.content_length > opt.max_body_bytes) {
      s.bad_status = 413;
      s.why = "request body larger than " + std::to_string(opt.max_body_bytes) + " bytes";
    } else if (std::string why; s.content_length && !s.req->body.expect(*s.content_length, t_.shared.body_limits, why)) {
      log_error(why);
      s.bad_status = 500;
      s.why = "cannot store the request body";
    } else if (s.method == "CONNECT") {
      s.bad_status = 501;
      s.why = "CONNECT is not served over HTTP/3";
    }
  }
  if (!s.bad_status) {
    std::string_view host = s.authority.empty() ? s.host : s.authority;
    if (!s.authority.empty() && !s.host.empty() && s.host != s.authority) {
      s.bad_status = 400;
      s.why = "Host differs from :authority";
    } else if (host.empty() || !valid_host(host)) {
      s.bad_status = 400;
      s.why = host.empty() ? "missing :authority and Host" : "malformed :authority";
    } else {
      try {
        populate_env(env, RequestHead{s.method, s.path, "HTTP/3"}, conn_);
        s.req->keep_conn = text_;
        env.set_view(keys::HTTP_HOST, host);
        if (!s.cookie.empty()) env.set_view(keys::HTTP_COOKIE, s.cookie);
        set_server_from_host(env);
      } catch (const HttpError& e) {
        s.bad_status = e.status();
        s.why = "bad request target";
      }
    }
  }
  s.req->head = s.method == "HEAD";
}

void H3::request_complete(Stream& s) {
  if (s.complete) return;
  s.complete = true;
  ready_.push_back(s.id);
}

// The requests the bytes just read completed: each to the app (or its refusal).
void H3::dispatch() {
  std::vector<std::int64_t> ready;
  ready.swap(ready_);
  for (std::int64_t id : ready) {
    Stream* s = find(id);
    if (!s || s->dispatched) continue;
    s->dispatched = true;
    if (s->bad_status) {
      respond(id, Response::error(s->bad_status, s->why));
      continue;
    }
    std::shared_ptr<H3Request> req = s->req;
    RequestObjects o;
    o.input = req.get();
    o.cleanup = &req->cleanup;
    o.informational = req.get();
    set_server_env(*req->env, t_.shared, o, false);
    tls_->set_env(*req->env);
    req->keep_tls = tls_;
    if (!inside_mount(t_.shared, *req->env)) {
      respond(id, Response::error(404));
      continue;
    }
    ++in_app_;
    s->in_app = true;
    if (t_.shared.app_on_pool()) run_pooled(req);
    else run_inline(req);
    if (!h3_) return;  // the connection went while the app ran
  }
  if (q_) q_->wake();
}

std::shared_ptr<ResponderImpl> stream_responder(std::weak_ptr<H3> c, std::shared_ptr<Mailbox> mailbox,
                                                std::chrono::milliseconds send_timeout,
                                                const std::shared_ptr<H3Request>& req) {
  auto keeper = std::make_shared<RequestKeeper>();
  keeper->held = req;
  return make_responder(std::make_shared<H3Route>(std::move(c), req->id), std::move(mailbox), send_timeout,
                        std::move(keeper));
}

void H3::run_inline(const std::shared_ptr<H3Request>& req) {
  int failed = 0;
  Response res;
  {
    AppScope scope(t_.fault_slot, nullptr);
    res = call_app(t_.shared, *req->env, failed);
  }
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed fn = std::move(*d);
    auto responder = stream_responder(weak_from_this(), t_.mailbox, t_.shared.opt.send_timeout, req);
    RequestLog log(t_.shared.errors, req->env.get());
    AppScope scope(t_.fault_slot, nullptr);
    call_delayed(fn, std::move(responder), log);
    on_app_left(req->id);
    return;
  }
  on_app_left(req->id);
  respond(req->id, std::move(res));
}

// On the pool: the app, then its response goes to the io thread (a pull stream and a delayed response's
// callable run on the pool, answering through a Responder).
void H3::run_pooled(const std::shared_ptr<H3Request>& req) {
  auto job = [self = shared_from_this(), req = req]() mutable {
    Shared& sh = self->shared();
    int failed = 0;
    Response res = call_app(sh, *req->env, failed);
    std::weak_ptr<H3> wc = self;
    std::shared_ptr<Mailbox> mailbox = self->thread().mailbox;
    auto responder = [&] { return stream_responder(wc, mailbox, sh.opt.send_timeout, req); };
    std::int64_t id = req->id;
    bool answered = answer_on_pool(res, req->head, true, *req->env, sh.errors, responder);
    req.reset();
    auto back = [self = std::move(self), id, answered, r = std::make_shared<Response>(std::move(res))]() mutable {
      self->on_app_left(id);
      if (!answered) self->on_app_done(id, std::move(*r));
      self.reset();
    };
    mailbox->post(back);
  };
  if (!t_.shared.pool->post(std::move(job))) {
    on_app_left(req->id);
    respond(req->id, Response::error(503, "server stopping"));
  }
}

void H3::on_app_left(std::int64_t id) {
  if (in_app_ > 0) --in_app_;
  if (Stream* s = find(id)) s->in_app = false;
  else if (q_) q_->allow_stream();  // its stream closed meanwhile
}

void H3::on_app_done(std::int64_t id, Response res) {
  respond(id, std::move(res));
  if (q_) q_->wake();
}

// Where the exchange hands a stream's response (drive_response): its head submitted, its body kept as
// what read_data gives nghttp3.
struct H3::Sink final : ResponseSink {
  H3& h;
  Stream& s;
  Sink(H3& c, Stream& st) : h(c), s(st) {}
  void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) override {
    std::uint64_t n = length.value_or(0);
    s.eof = true;
    h.submit(s, status, headers, false, length ? &n : nullptr);
  }
  void text(int status, Headers& headers, std::string& body) override {
    s.out = std::move(body);
    s.view = s.out;
    s.src = Stream::Src::view;
    std::uint64_t n = s.out.size();
    h.submit(s, status, headers, true, &n);
  }
  void bytes(int status, Headers& headers, const SharedBytes& body) override {
    s.view = *body;
    s.keep = body;
    s.src = Stream::Src::view;
    std::uint64_t n = body->size();
    h.submit(s, status, headers, true, &n);
  }
  void file(int status, Headers& headers, FileSpan span) override {
    s.file = std::move(span.file);
    s.file_off = span.offset;
    s.file_left = span.length;
    s.src = Stream::Src::file;
    h.submit(s, status, headers, true, &span.length);
  }
  void stream(int status, Headers& headers, StreamPtr stream, std::string first,
              std::optional<std::uint64_t> declared) override {
    s.pull = std::move(stream);
    s.out = std::move(first);
    s.src = Stream::Src::pull;
    s.declared = declared;
    std::uint64_t n = declared.value_or(0);
    h.submit(s, status, headers, true, declared ? &n : nullptr);
  }
  void trailers_only(int status, Headers& headers, Headers trailers) override {
    s.trailers = std::move(trailers);
    s.src = Stream::Src::view;
    std::uint64_t zero = 0;
    h.submit(s, status, headers, true, &zero);
  }
};

void H3::respond(std::int64_t id, Response res) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->responded) return;
  Sink sink(*this, *s);
  drive_response(res, s->req->head, true, sink, log_);
}

void H3::submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
  s.responded = true;
  s.status = status;
  std::vector<nghttp3_nv> nva;
  std::vector<std::string> names;
  names.reserve(headers.size());
  char code[4];
  std::to_chars(code, code + 3, status);
  auto add = [&](std::string_view n, std::string_view v) {
    nva.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)v.data(), n.size(), v.size(), NGHTTP3_NV_FLAG_NONE});
  };
  add(":status", std::string_view(code, 3));
  bool has_date = false;
  for (const Header& hd : headers) {
    if (iequals(hd.name, "content-length") || connection_specific(hd.name)) continue;
    if (!is_token(hd.name) || has_ctl(hd.value, true)) {
      log_error("response header \"" + hd.name + "\" has a bad name or control characters; dropped");
      continue;
    }
    names.push_back(to_lower(hd.name));
  }
  std::size_t k = 0;
  for (const Header& hd : headers) {
    if (iequals(hd.name, "content-length") || connection_specific(hd.name)) continue;
    if (!is_token(hd.name) || has_ctl(hd.value, true)) continue;
    const std::string& n = names[k++];
    if (n == "date") has_date = true;
    add(n, hd.value);
  }
  std::string_view date = has_date ? std::string_view() : http_date_now();
  if (!has_date) add("date", date);
  char len[24];
  if (length) {
    auto r = std::to_chars(len, len + sizeof len, *length);
    add("content-length", std::string_view(len, r.ptr - len));
  }
  nghttp3_data_reader dr{&H3::read_data};
  if (nghttp3_conn_submit_response(h3_, s.id, nva.data(), nva.size(), has_body ? &dr : nullptr) != 0 && q_)
    q_->reset(s.id, NGHTTP3_H3_INTERNAL_ERROR);
  if (q_) q_->wake();
}

bool H3::submit_trailers(Stream& s) {
  std::vector<std::string> names;
  std::vector<const Header*> fields;
  for (const Header& hd : s.trailers) {
    if (trailer_field_forbidden(hd.name) || connection_specific(hd.name) || !is_token(hd.name) ||
        has_ctl(hd.value, true))
      continue;
    names.push_back(to_lower(hd.name));
    fields.push_back(&hd);
  }
  if (names.empty()) return false;
  std::vector<nghttp3_nv> nva;
  for (std::size_t i = 0; i < names.size(); ++i)
    nva.push_back({(std::uint8_t*)names[i].data(), (std::uint8_t*)fields[i]->value.data(), names[i].size(),
                   fields[i]->value.size(), NGHTTP3_NV_FLAG_NONE});
  return nghttp3_conn_submit_trailers(h3_, s.id, nva.data(), nva.size()) == 0;
}

// The next piece of a stream's body into `v` (kept in its chunks until acknowledged): its size, or -1
// when none is there yet (a writer's).
std::size_t H3::fill(Stream& s, nghttp3_vec* v) {
  auto give = [&](std::string own, std::string_view data) {
    Chunk& back = s.chunks.emplace_back();
    back.own = std::move(own);
    back.data = back.own.empty() ? data : std::string_view(back.own);
    v->base = (std::uint8_t*)back.data.data();
    v->len = back.data.size();
    s.inflight += back.data.size();
    return back.data.size();
  };
  switch (s.src) {
    case Stream::Src::view:
      s.eof = true;
      if (s.view_given || s.view.empty()) return 0;
      s.view_given = true;
      return give({}, s.view);
    case Stream::Src::file: {
      std::string buf(static_cast<std::size_t>(std::min<std::uint64_t>(file_chunk, s.file_left)), '\0');
      ssize_t r;
      do r = ::pread(s.file->fd(), buf.data(), buf.size(), static_cast<off_t>(s.file_off));
      while (r < 0 && errno == EINTR);
      if (r <= 0 && !buf.empty())
        throw std::runtime_error(r == 0 ? "the file shrank while it was sent" : std::strerror(errno));
      buf.resize(static_cast<std::size_t>(r));
      s.file_off += buf.size();
      s.file_left -= buf.size();
      if (s.file_left == 0) s.eof = true;
      return buf.empty() ? 0 : give(std::move(buf), {});
    }
    case Stream::Src::pull: {
      std::string chunk = std::move(s.out);
      s.out.clear();
      if (chunk.empty()) {
        bool more;
        do more = s.pull->next(chunk);
        while (more && chunk.empty());
        if (!more) {
          s.eof = true;
          s.trailers = stream_trailers(*s.pull, log_);
          close_stream(*s.pull, log_);
          s.pull.reset();
          return 0;
        }
      }
      return give(std::move(chunk), {});
    }
    case Stream::Src::writer: {
      std::lock_guard lock(s.writer->mu);
      std::string chunk;
      chunk.swap(s.writer->pending);
      if (s.writer->aborted) throw std::runtime_error("a streaming Writer was dropped without close()");
      if (chunk.empty() && s.writer->overrun > 0)
        throw std::length_error(length_error(s.writer->declared, s.writer->overrun, true, "the stream is reset"));
      if (chunk.empty() && s.writer->closed) {
        s.eof = true;
        s.trailers = std::move(s.writer->trailers);
        return 0;
      }
      if (chunk.empty()) {
        s.deferred = true;
        return static_cast<std::size_t>(-1);
      }
      std::size_t n = give(std::move(chunk), {});
      s.writer->unsent = s.inflight;
      s.writer->cv.notify_all();
      return n;
    }
    case Stream::Src::none:
      break;
  }
  s.eof = true;
  return 0;
}

nghttp3_ssize H3::read_data(nghttp3_conn*, std::int64_t id, nghttp3_vec* vec, std::size_t veccnt, std::uint32_t* flags,
                            void* p, void*) {
  H3& h = self(p);
  Stream* s = h.find(id);
  if (!s || veccnt == 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  try {
    std::size_t n = h.fill(*s, vec);
    if (n == static_cast<std::size_t>(-1)) return NGHTTP3_ERR_WOULDBLOCK;
    if (s->declared && s->sent + n > *s->declared) {
      h.log_error(length_error(*s->declared, s->sent + n, true, "the stream is reset"));
      return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    s->sent += n;
    if (s->eof) {
      if (s->declared && s->sent < *s->declared) {
        h.log_error(length_error(*s->declared, s->sent, false, "the stream is reset"));
        return NGHTTP3_ERR_CALLBACK_FAILURE;
      }
      *flags |= NGHTTP3_DATA_FLAG_EOF;
      // The trailing HEADERS frame ends the stream instead of the last DATA frame (ADP-17).
      if (h.submit_trailers(*s)) *flags |= NGHTTP3_DATA_FLAG_NO_END_STREAM;
    }
    return n == 0 ? 0 : 1;
  } catch (const std::length_error& e) {
    h.log_error(e.what());
  } catch (const std::exception& e) {
    h.log_error(std::string("the response body failed: ") + e.what() + "; the stream is reset");
  } catch (...) {
    h.log_error("the response body failed; the stream is reset");
  }
  if (h.q_) h.q_->reset(id, NGHTTP3_H3_INTERNAL_ERROR);
  return NGHTTP3_ERR_WOULDBLOCK;
}

void H3::on_writer_start(std::int64_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  Stream* sp = h3_ ? find(id) : nullptr;
  if (!sp || sp->responded) return w->gone();
  Stream& s = *sp;
  if (status < 200 || status > 999) status = 500;
  bool no_body = status_has_no_body(status) || s.req->head;
  std::optional<std::uint64_t> d = declared_length(headers);
  s.writer = w;
  w->begin(no_body, d);
  std::uint64_t dl = d.value_or(0);
  if (no_body) return submit(s, status, headers, false, d && !status_has_no_body(status) ? &dl : nullptr);
  s.src = Stream::Src::writer;
  s.declared = d;
  submit(s, status, headers, true, d ? &dl : nullptr);
}

void H3::on_writer_flush(std::int64_t id) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->src != Stream::Src::writer || !s->deferred) return;
  s->deferred = false;
  nghttp3_conn_resume_stream(h3_, id);
  if (q_) q_->wake();
}

void H3::on_responder_dropped(std::int64_t id) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s) return;
  log_error("500: the delayed response's Responder was dropped without an answer (ADP-11)");
  if (!s->responded) return respond(id, Response::error(500));
  if (q_) q_->reset(id, NGHTTP3_H3_INTERNAL_ERROR);
}

bool H3::interim(std::int64_t id, int status, const Headers& headers) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->responded || status < 100 || status > 199 || status == 101) return false;
  std::vector<std::string> names;
  std::vector<const Header*> fields;
  for (const Header& hd : headers) {
    if (!is_token(hd.name) || has_ctl(hd.value, true) || connection_specific(hd.name)) continue;
    names.push_back(to_lower(hd.name));
    fields.push_back(&hd);
  }
  char code[4];
  std::to_chars(code, code + 3, status);
  std::vector<nghttp3_nv> nva;
  nva.push_back({(std::uint8_t*)":status", (std::uint8_t*)code, 7, 3, NGHTTP3_NV_FLAG_NONE});
  for (std::size_t i = 0; i < names.size(); ++i)
    nva.push_back({(std::uint8_t*)names[i].data(), (std::uint8_t*)fields[i]->value.data(), names[i].size(),
                   fields[i]->value.size(), NGHTTP3_NV_FLAG_NONE});
  bool sent = nghttp3_conn_submit_info(h3_, id, nva.data(), nva.size()) == 0;
  if (sent && q_) q_->wake();
  return sent;
}

}  // namespace

std::shared_ptr<QuicApp> make_h3(QuicStreams& streams, IoThread& thread, const ListenSocket& listener) {
  return std::make_shared<H3>(streams, thread, listener);
}

std::vector<std::unique_ptr<QuicEndpoint>> open_http3(IoThread& thread) {
  std::vector<std::unique_ptr<QuicEndpoint>> out;
  if (!thread.shared.opt.http3) return out;
  for (const ListenSocket& l : thread.shared.listeners)
    if (l.tls && l.tcp) {
      out.push_back(open_quic(thread, l, &make_h3));
      thread.shared.alt_svc.emplace_back(l.server_port, "h3=\":" + l.server_port + "\"; ma=86400");
    }
  return out;
}

}  // namespace csgi::standalone::detail
