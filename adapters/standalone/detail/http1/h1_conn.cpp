// The HTTP/1 codec: its life (close, timeouts, graceful stop, faults), the env and the app call of a
// request, interim responses and csgix.io (see h1_conn.hpp).
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"
#include "csgi/adapters/standalone/detail/exchange/request.hpp"
#include "csgi/core/app_failure.hpp"

namespace csgi::standalone::detail {

H1Conn::H1Conn(Transport& t) : Codec(t), t_(t.thread()), sh_(t.shared()) {
  in_.buf.reset(new char[initial_buffer]);
  in_.cap = initial_buffer;
  link_.h2_possible = sh_.opt.h2_max_streams > 0;
}

H1Conn::~H1Conn() {
  if (std::holds_alternative<StreamBody>(body_)) drop_body();
  drop_env();  // before a writer learns that the client is gone: it may read the env at once
  drop_body();
  release_body_buffer();
}

void H1Conn::drop_body() noexcept {
  if (auto* w = std::get_if<WriterBody>(&body_)) w->writer->gone();
  if (auto* s = std::get_if<StreamBody>(&body_)) {
    try {
      s->stream->close();
    } catch (...) {
    }
  }
  body_ = std::monostate{};
}

// The request's header is parsed (and a small body buffered): build the rest of the env and call the app,
// here or on the pool.
void H1Conn::request_ready() {
  Env& env = *env_;
  req_.keep_alive = req_.keep_alive && parser_->keep_alive() && !t_.stopping;
  if (!req_.expect.empty() && !iequals(req_.expect, "100-continue")) {
    req_.keep_alive = false;
    handle(Response::error(417, "unsupported expectation"));
    return;
  }
  if (try_h2c_upgrade()) return;
  set_connection_env(env);
  clear_deadline();
  if (!inside_mount(sh_, env)) {
    handle(Response::error(404));
    return;
  }
  if (sh_.app_on_pool()) {
    run_in_pool();
    return;
  }
  phase_ = Phase::app;
  int failed = 0;
  Response res = [&] {
    AppScope scope(t_.fault_slot, &tr_);
    return call_app(sh_, env, failed);
  }();
  if (phase_ == Phase::closed) return;
  after_app(std::move(res), failed);
}

void H1Conn::set_connection_env(Env& env) {
  RequestObjects o;
  o.input = &body_in_;
  o.cleanup = &cleanup_;
  o.informational = this;
  o.websocket = this;
  if (!tr_.tls()) o.io = this;  // no raw socket under TLS
  set_server_env(env, sh_, o, tr_.peer().https);
  if (const TlsInfo* tls = tr_.tls_info()) tls->set_env(env);
}

// Back on the io thread with the app's response.
void H1Conn::after_app(Response&& res, int failed) {
  if (failed == 408 || failed == 413 || failed == 400) req_.keep_alive = false;
  phase_ = Phase::reading;
  if (link_.hijacked) {
    // The app owns the connection now; drop our descriptor without touching the connection. Nothing will
    // be sent: a delayed response's callable is not called.
    phase_ = Phase::closed;
    tr_.forget();
    t_.release_env(std::move(env_));
    return;
  }
  if (ws_handler_ && res.status == 101 && !std::holds_alternative<Delayed>(res.body)) return begin_websocket(res);
  ws_handler_.reset();
  handle(std::move(res));
}

void H1Conn::reject(int status, std::string_view why) {
  // Framing is lost: answer, then close (the bytes after this request are never served: no smuggling).
  if (!env_) env_ = t_.acquire_env();
  req_.keep_alive = false;
  req_.stage = Request::active;
  in_.body_base = in_.begin;
  in_.begin = in_.end;  // nothing after a bad request is parsed
  parser_.reset();
  Response r = Response::error(status, why);
  phase_ = Phase::reading;
  handle(std::move(r));
}

void H1Conn::linger() {
  // Half-close and read until the client closes (or 2 s), so the client reads our last response
  // instead of a reset caused by bytes we never read.
  if (tr_.dead()) {
    close_now();
    return;
  }
  phase_ = Phase::lingering;
  tr_.half_close();
  set_deadline(std::chrono::seconds(2));
  if (link_.peer_eof) {
    close_now();
    return;
  }
  in_.begin = in_.end = 0;
  wait_read();
}

// The transport closed.
void H1Conn::on_close() noexcept {
  if (phase_ == Phase::closed) return;
  bool app_running = phase_ == Phase::pooled;
  if (env_ && req_.stage == Request::active && req_.status != 0) log_cut_short();
  phase_ = Phase::closed;
  set_idle(false);
  self_hold_.reset();
  // While the app runs on the pool, the env (with the buffer its views point into, and the body) stays
  // until it returns (on_pooled_done). Otherwise the env goes first: a writer that learns the client is
  // gone may read the env at once.
  if (!app_running) drop_env();
  drop_body();
  if (ws_) std::exchange(ws_, nullptr)->abort();
}

// The request's env, when the connection closes: handed to the delayed response's Responder or Writer
// while that response is not complete (APP-4), else its cleanup handlers run and it goes back to the pool.
void H1Conn::drop_env() noexcept {
  if (!env_) return;
  if (auto k = keeper_.lock()) {
    keeper_.reset();
    try {
      if (hand_over(*k)) return;
    } catch (...) {
    }
  }
  if (cleanup_.size() > 0) cleanup_.run(*env_);
  env_->clear();
  t_.release_env(std::move(env_));
  release_head();
}

// Moves the env, what its views point into and the cleanup handlers into a HeldRequest, and points the
// env's connection objects at it; only values of existing keys are overwritten (the app's thread may be
// reading the env). csgi.errors stays valid: the Responder and Writer keep the error stream through their
// mailbox. Never back to the pool: the holder may end on another thread.
bool H1Conn::hand_over(RequestKeeper& k) {
  std::lock_guard lock(k.mu);
  if (k.complete) return false;
  auto h = std::make_unique<HeldRequest>();
  // The buffer the env's views point into goes with it: the head's own while the body has its buffer.
  std::unique_ptr<char[]> fresh(in_.head ? nullptr : new char[in_.cap]);
  Env& env = *env_;
  // Values that point into the connection or the server rather than the read buffer: copied.
  for (std::string_view key : {keys::REMOTE_ADDR, keys::REMOTE_PORT, keys::SERVER_NAME, keys::SERVER_PORT,
                               keys::SCRIPT_NAME, keys::HTTPS, keys::SSL_PROTOCOL, keys::SSL_CIPHER,
                               keys::SSL_TLS_SNI, keys::SSL_CLIENT_VERIFY, keys::SSL_CLIENT_S_DN,
                               keys::SSL_CLIENT_CERT}) {
    std::string v(env.get(key));
    if (!v.empty()) env.set(key, v);
  }
  env.set_object<Input>(keys::input, static_cast<Input*>(h.get()));
  if (env.contains(keys::x::io)) env.set_object<Hijack>(keys::x::io, static_cast<Hijack*>(h.get()));
  env.set_object<Informational>(keys::x::informational, static_cast<Informational*>(h.get()));
  if (env.contains(keys::x::websocket))
    env.set_object<websocket::Handshake>(keys::x::websocket, static_cast<websocket::Handshake*>(h.get()));
  env.set_object<CleanupHandlers>(keys::x::cleanup_handlers, &h->cleanup);
  cleanup_.move_to(h->cleanup);
  h->buf = in_.head ? std::move(in_.head) : std::exchange(in_.buf, std::move(fresh));
  h->env = std::move(env_);
  k.held = std::move(h);
  return true;
}

void H1Conn::on_timeout() {
  if (phase_ == Phase::closed) return;
  clear_deadline();
  if (phase_ == Phase::pooled) {
    pooled_timeout();
    return;
  }
  if (phase_ == Phase::reading && (in_.end > in_.begin || req_.stage == Request::active) && !response_started()) {
    // Slow header or body: 408, then close.
    if (!req_.body_begun) reject(408, "request timeout");
    else if (pace_.too_slow(t_.now, sh_.opt.body_timeout, sh_.opt.body_min_rate))
      reject(408, "request body slower than " + std::to_string(sh_.opt.body_min_rate) + " bytes/s");
    else reject(408, "timed out reading the request body");
    return;
  }
  close_now();
}

std::string H1Conn::abandon(int status) noexcept {
  std::string what;
  try {
    if (env_) what = std::string(env_->get(keys::REQUEST_METHOD)) + " " + std::string(env_->get(keys::REQUEST_URI));
  } catch (...) {
  }
  if (phase_ == Phase::closed || link_.hijacked) return what;
  // Nothing of this response nor of an earlier pipelined one is pending: a 500 (504) is in order. One
  // non-blocking write; if it does not fit, the client gets the half-close alone (the transport's).
  if (!tr_.tls() && !response_started() && !tr_.dead() && !out_.pending()) {
    static constexpr std::string_view r500 =
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
        "Connection: close\r\n\r\nInternal Server Error\n";
    static constexpr std::string_view r504 =
        "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
        "Connection: close\r\n\r\nGateway Timeout\n";
    std::string_view r = status == 504 ? r504 : r500;
    iovec one{const_cast<char*>(r.data()), r.size()};
    (void)tr_.writev(&one, 1, false);
  }
  phase_ = Phase::closed;
  return what;
}

void H1Conn::on_shutdown(bool hurry) {
  req_.keep_alive = false;
  if (phase_ == Phase::websocket) {
    if (ws_) ws_->going_away();
    return;
  }
  // A graceful stop does not close an idle keep-alive connection (nor one accepted whose request has not
  // arrived): its client may be sending a request right now, and closing would race it into a failed
  // request (RFC 9112 §9.6). The connection keeps its deadline (idle or header timeout), bounded by the
  // graceful timeout, and a request that arrives is answered with Connection: close. A second stop
  // request (hurry) closes idle connections at once.
  bool waiting = phase_ == Phase::reading;
  if (hurry && waiting && req_.stage != Request::active && in_.begin == in_.end && !out_.pending()) close_now();
}

// From another thread (the app pool, or the thread a delayed response is answered from: a language
// host's) the io thread hands the connection over while that thread waits, as for an interim response.
int H1Conn::take(std::string& pending) {
  if (!on_io_thread()) {
    int fd = -1;
    run_on_io([&] { fd = take_here(pending); });
    return fd;
  }
  return take_here(pending);
}

int H1Conn::take_here(std::string& pending) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled && phase_ != Phase::delayed) || link_.hijacked || tr_.tls())
    return -1;
  int fd = tr_.dup_blocking();
  if (fd < 0) return -1;
  // Whatever was written (100 Continue, 103) goes out first.
  if (out_.pos < out_.size()) tr_.blocking_send(std::string_view(out_.buf).substr(out_.pos));
  out_.buf.clear();
  out_.pos = 0;
  pending.append(in_.unparsed());
  in_.begin = in_.end;
  link_.hijacked = true;
  if (phase_ == Phase::delayed) {
    // No app call returns here to end the connection: it ends now, the env going to the delayed
    // response's Responder (APP-4), whose answer is then ignored.
    tr_.forget();
    on_close();
  }
  return fd;
}

// From another thread (the app pool, or whatever thread a delayed response is answered from: a language
// host's) the io thread sends it while that thread waits, as for an HTTP/2 stream.
bool H1Conn::send(int status, const Headers& headers) {
  if (!on_io_thread()) {
    bool ok = false;
    run_on_io([&] { ok = send_interim(status, headers); });
    return ok;
  }
  return send_interim(status, headers);
}

bool H1Conn::send_interim(int status, const Headers& headers) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled && phase_ != Phase::delayed) || req_.http10 || link_.hijacked ||
      tr_.dead() ||
      status < 100 || status > 199 || status == 101)
    return false;
  if (status == 100) req_.continue_pending = false;
  out_.append(sh_.status_line(status));
  for (const Header& h : headers) {
    if (!is_token(h.name) || has_ctl(h.value, true)) continue;
    out_.append(h.name);
    out_.append(": ");
    out_.append(h.value);
    out_.append("\r\n");
  }
  out_.append("\r\n");
  // Interim responses go out now, ahead of the final one (a partial write completes with it; while the
  // app runs elsewhere or a delayed response waits, the io thread finishes it meanwhile).
  if (!flush() && !tr_.dead() && phase_ != Phase::app) wait_write();
  return !tr_.dead();
}


}  // namespace csgi::standalone::detail
