// HTTP/3 over QUIC: the connection's streams and their requests on the exchange (see h3_conn.hpp).
#include "csgi/adapters/standalone/detail/http3/h3_conn.hpp"

#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {
namespace h3 {

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
  if (s.req) response_done(t_.shared, s.req->cleanup, s.status, s.body.sent());
  else response_done(t_.shared, CleanupHandlers{}, s.status, s.body.sent());
}

int H3::on_stream_close(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* p, void*) {
  H3& h = self(p);
  auto it = h.streams_.find(id);
  if (it == h.streams_.end()) {
    if ((id & 0x3) == 0 && h.q_) h.q_->allow_stream();  // a request stream that never sent a head
    return 0;
  }
  Stream& s = *it->second;
  h.buffered_ -= s.buffered;
  h.report(s, code == h3_no_error && s.body.ended());
  // The peer may open another request stream, once this one's app call is done (a client resetting
  // streams whose apps still run gets no more: CVE-2023-44487).
  if (!s.in_app && h.q_) h.q_->allow_stream();
  h.streams_.erase(it);
  return 0;
}

int H3::on_acked(nghttp3_conn*, std::int64_t id, std::uint64_t n, void* p, void*) {
  Stream* s = self(p).find(id);
  if (!s) return 0;
  self(p).acked_ += n;
  s->body.acked(n);
  while (n > 0 && !s->chunks.empty()) {
    Chunk& c = s->chunks.front();
    std::uint64_t take = std::min<std::uint64_t>(n, c.piece.data.size() - c.acked);
    c.acked += take;
    n -= take;
    if (c.acked == c.piece.data.size()) s->chunks.pop_front();
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
  if (has_ctl(val, true)) {  // NUL, CR, LF…: a malformed field (RFC 9114 §4.2), never in the env (ENV-9)
    s->bad_status = 400;
    s->why = "control character in a header field value";
    return 0;
  }
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
  if (h.pacing_) h.pace_.received(n);
  h.body_moved_ = true;
  const ServerOptions& opt = h.t_.shared.opt;
  std::uint64_t size = s->req->body.size() + n;
  if (size <= opt.max_body_bytes && h.buffered_ + n > opt.max_body_bytes) {
    // The bodies buffered on this connection at once stay within one --max-body-bytes: this one is
    // refused unprocessed (H3_REQUEST_REJECTED: the client may retry it).
    h.buffered_ -= s->buffered;
    s->buffered = 0;
    s->req->body.reset();
    s->complete = s->dispatched = true;
    if (h.q_) h.q_->reset(id, NGHTTP3_H3_REQUEST_REJECTED);
    return 0;
  }
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
  s->buffered += n;
  h.buffered_ += n;
  return 0;
}

Clock::time_point H3::deadline() {
  const ServerOptions& opt = t_.shared.opt;
  Clock::time_point now = Clock::now();
  bool waiting = false, awaiting = false;
  for (const auto& [id, s] : streams_) {
    waiting = waiting || s->window_shut || !s->chunks.empty();
    awaiting = awaiting || !s->complete;
  }
  bool progress = acked_ != acked_seen_;
  acked_seen_ = acked_;
  Clock::time_point at = Clock::time_point::max();
  if (waiting) {
    if (!waiting_ || progress) send_at_ = now + opt.send_timeout;
    at = send_at_;
  } else if (awaiting) {
    if (!pacing_) pace_.begin(now);
    if (!pacing_ || body_moved_) body_at_ = pace_.deadline(now, opt.body_timeout, opt.body_min_rate);
    pacing_ = true;
    at = body_at_;
  }
  if (waiting || !awaiting) pacing_ = false;
  waiting_ = waiting;
  body_moved_ = false;
  return at;
}

void H3::expired() {
  const ServerOptions& opt = t_.shared.opt;
  if (waiting_) {
    log_error("the peer took no response bytes for --send-timeout: connection closed");
    error_ = NGHTTP3_H3_NO_ERROR;
  } else if (pace_.too_slow(Clock::now(), opt.body_timeout, opt.body_min_rate)) {
    log_error("request bodies slower than " + std::to_string(opt.body_min_rate) + " bytes/s: connection closed");
    error_ = NGHTTP3_H3_REQUEST_INCOMPLETE;
  } else {
    log_error("no request body bytes for --body-timeout: connection closed");
    error_ = NGHTTP3_H3_REQUEST_INCOMPLETE;
  }
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

}  // namespace h3

std::shared_ptr<QuicApp> make_h3(QuicStreams& streams, IoThread& thread, const ListenSocket& listener) {
  return std::make_shared<h3::H3>(streams, thread, listener);
}

std::vector<std::unique_ptr<QuicEndpoint>> open_http3(IoThread& thread) {
  std::vector<std::unique_ptr<QuicEndpoint>> out;
  if (!thread.shared.opt.http3) return out;
  for (const ListenSocket& l : thread.shared.listeners)
    if (l.tls && l.tcp) {
      out.push_back(open_quic(thread, l, &make_h3));
      if (thread.index == 0)  // once per process
        thread.shared.alt_svc.emplace_back(l.server_port, "h3=\":" + l.server_port + "\"; ma=86400");
    }
  return out;
}

}  // namespace csgi::standalone::detail
