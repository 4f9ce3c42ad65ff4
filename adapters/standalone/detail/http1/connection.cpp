// An HTTP/1 connection: its life (start, close, timeouts, graceful stop, faults), the env and the app
// call of a request, interim responses and csgix.io (see conn.hpp).
#include "csgi/adapters/standalone/detail/http1/conn.hpp"
#include "csgi/adapters/standalone/detail/exchange/request.hpp"
#include "csgi/core/app_failure.hpp"

namespace csgi::standalone::detail {

Conn::Conn(IoThread& t, Socket s, const ListenSocket& l)
    : t_(t), sh_(t.shared), socket_(std::move(s)), fd_(socket_.native_handle()), listener_(l) {
  sh_.connections.fetch_add(1, std::memory_order_relaxed);
  t_.open.fetch_add(1, std::memory_order_relaxed);
  in_.buf.reset(new char[initial_buffer]);
  in_.cap = initial_buffer;
  error_code ec;
  socket_.native_non_blocking(true, ec);
  link_.h2_possible = sh_.opt.h2_max_streams > 0;
  if (listener_.tls && sh_.tls) {
    std::string why;
    tls_ = sh_.tls->accept(fd_, why);
    if (!tls_) sh_.errors.write("csgi: TLS connection setup failed: " + why);
  }
  if (listener_.tcp) {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      if (ss.ss_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &in->sin_addr, peer_.addr, sizeof peer_.addr);
        std::to_chars(peer_.port, peer_.port + sizeof peer_.port - 1, ntohs(in->sin_port));
      } else if (ss.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, peer_.addr, sizeof peer_.addr);
        std::to_chars(peer_.port, peer_.port + sizeof peer_.port - 1, ntohs(in6->sin6_port));
      }
    }
  }
}

Conn::~Conn() {
  if (body_.stream) {
    try {
      body_.stream->close();
    } catch (...) {
    }
  }
  drop_env();  // first: a writer that learns the client is gone may read the env at once
  if (body_.writer) body_.writer->gone();
  sh_.connections.fetch_sub(1, std::memory_order_relaxed);
  t_.open.fetch_sub(1, std::memory_order_relaxed);
}

void Conn::start() {
  t_.add(*this);
  sh_.stats->connection_opened();
  if (sh_.slot) sh_.slot->connections_open.fetch_add(1, std::memory_order_relaxed);
  set_deadline(sh_.opt.header_timeout);
  if (listener_.tls && !tls_) {
    close_now();
    return;
  }
  if (sh_.proxy.enabled() && listener_.tcp) read_proxy_header();  // serve() follows the header
  else serve();
}

// The request's header is parsed (and a small body buffered): build the rest of the env and call the app,
// here or on the pool.
void Conn::request_ready() {
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
    AppScope scope(t_.fault_slot, this);
    return call_app(sh_, env, failed);
  }();
  if (phase_ == Phase::closed) return;
  after_app(std::move(res), failed);
}

void Conn::set_connection_env(Env& env) {
  RequestObjects o;
  o.input = &body_in_;
  o.cleanup = &cleanup_;
  o.informational = this;
  o.websocket = this;
  if (!tls_) o.io = this;  // no raw socket under TLS
  set_server_env(env, sh_, o, peer_.https);
  if (tls_ && tls_info_) tls_info_->set_env(env);
}

// Back on the io thread with the app's response.
void Conn::after_app(Response&& res, int failed) {
  if (failed == 408 || failed == 413 || failed == 400) req_.keep_alive = false;
  phase_ = Phase::reading;
  if (link_.hijacked) {
    // The app owns the connection now; drop our descriptor without touching the connection. Nothing will
    // be sent: a delayed response's callable is not called.
    error_code ec;
    socket_.close(ec);
    phase_ = Phase::closed;
    sh_.stats->connection_closed();  // the app owns it now: no longer one of ours
    if (sh_.slot) sh_.slot->connections_open.fetch_sub(1, std::memory_order_relaxed);
    t_.release_env(std::move(env_));
    return;
  }
  if (ws_handler_ && res.status == 101 && !std::holds_alternative<Delayed>(res.body)) return begin_websocket(res);
  ws_handler_.reset();
  handle(std::move(res));
}

void Conn::reject(int status, std::string_view why) {
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

void Conn::linger() {
  // Half-close and read until the client closes (or 2 s), so the client reads our last response
  // instead of a reset caused by bytes we never read.
  if (link_.dead) {
    close_now();
    return;
  }
  phase_ = Phase::lingering;
  if (tls_) tls_->shutdown();  // close_notify, as far as the socket takes it now
  ::shutdown(fd_, SHUT_WR);
  deadline_ = t_.now + std::chrono::seconds(2);
  if (link_.peer_eof) {
    close_now();
    return;
  }
  in_.begin = in_.end = 0;
  wait_read();
}

void Conn::close_now() {
  if (phase_ == Phase::closed) return;
  bool app_running = phase_ == Phase::pooled;
  if (env_ && req_.stage == Request::active && req_.status != 0) log_cut_short();
  phase_ = Phase::closed;
  sh_.stats->connection_closed();
  set_idle(false);
  if (sh_.slot) sh_.slot->connections_open.fetch_sub(1, std::memory_order_relaxed);
  self_hold_.reset();
  clear_deadline();
  error_code ec;
  socket_.close(ec);
  // While the app runs on the pool, the env (with the buffer its views point into, and the body) stays
  // until it returns (on_pooled_done). Otherwise the env goes first: a writer that learns the client is
  // gone may read the env at once.
  if (!app_running) drop_env();
  if (body_.writer) body_.writer->gone();
  if (body_.stream) {
    try {
      body_.stream->close();
    } catch (...) {
    }
    body_.stream.reset();
  }
  body_.file.reset();
  if (ws_) std::exchange(ws_, nullptr)->abort();
  if (h2_) h2_->on_close();
  node_.unlink();
}

// The request's env, when the connection closes: handed to the delayed response's Responder or Writer
// while that response is not complete (APP-4), else its cleanup handlers run and it goes back to the pool.
void Conn::drop_env() noexcept {
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
}

// Moves the env, what its views point into and the cleanup handlers into a HeldRequest, and points the
// env's connection objects at it; only values of existing keys are overwritten (the app's thread may be
// reading the env). csgi.errors stays valid: the Responder and Writer keep the error stream through their
// mailbox. Never back to the pool: the holder may end on another thread.
bool Conn::hand_over(RequestKeeper& k) {
  std::lock_guard lock(k.mu);
  if (k.complete) return false;
  auto h = std::make_unique<HeldRequest>();
  std::unique_ptr<char[]> fresh(new char[in_.cap]);
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
    env.set_object<websocket::Upgrade>(keys::x::websocket, static_cast<websocket::Upgrade*>(h.get()));
  env.set_object<CleanupHandlers>(keys::x::cleanup_handlers, &h->cleanup);
  cleanup_.move_to(h->cleanup);
  h->buf = std::exchange(in_.buf, std::move(fresh));
  h->env = std::move(env_);
  k.held = std::move(h);
  return true;
}

void Conn::on_timeout() {
  if (phase_ == Phase::closed) return;
  if (h2_) return h2_->on_timeout();
  clear_deadline();
  if (phase_ == Phase::proxy) {
    proxy_timeout();
    return;
  }
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

std::string Conn::abandon(int status) noexcept {
  std::string what;
  try {
    if (env_) what = std::string(env_->get(keys::REQUEST_METHOD)) + " " + std::string(env_->get(keys::REQUEST_URI));
  } catch (...) {
  }
  if (phase_ == Phase::closed || link_.hijacked) return what;
  // Nothing of this response nor of an earlier pipelined one is pending: a 500 (504) is in order. One
  // non-blocking send; if it does not fit, the client gets the half-close alone.
  if (!tls_ && !response_started() && !link_.dead && !out_.pending()) {
    static constexpr std::string_view r500 =
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
        "Connection: close\r\n\r\nInternal Server Error\n";
    static constexpr std::string_view r504 =
        "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
        "Connection: close\r\n\r\nGateway Timeout\n";
    std::string_view r = status == 504 ? r504 : r500;
    (void)::send(fd_, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd_, SHUT_WR);
  // The descriptor stays open until the worker exits (closing it here could reuse the number while the
  // frozen thread still holds it); nothing reads or writes this connection again.
  phase_ = Phase::closed;
  clear_deadline();
  node_.unlink();
  return what;
}

std::string abandon_faulted(Conn& c, int status) noexcept { return c.abandon(status); }

void Conn::on_shutdown(bool hurry) {
  if (h2_) return h2_->on_shutdown(hurry);
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
  bool waiting = phase_ == Phase::proxy || phase_ == Phase::reading;
  if (hurry && waiting && req_.stage != Request::active && in_.begin == in_.end && !out_.pending()) close_now();
}

bool Conn::blocking_send(std::string_view data) {
  while (!data.empty()) {
    iovec one{const_cast<char*>(data.data()), data.size()};
    ssize_t w = tls_ ? tls_writev(&one, 1) : ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (w > 0) {
      data.remove_prefix(static_cast<std::size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, tls_ && !tls_->want_write() ? short(POLLIN) : short(POLLOUT), 0};
      if (::poll(&p, 1, static_cast<int>(sh_.opt.send_timeout.count())) <= 0) return false;
      if (tls_ && !tls_fill()) {
        link_.dead = true;
        return false;
      }
      continue;
    }
    link_.dead = true;
    return false;
  }
  return true;
}

int Conn::take(std::string& pending) {
  if (sh_.pool && !on_io_thread()) {
    int fd = -1;
    run_on_io([&] { fd = take_here(pending); });
    return fd;
  }
  if (!on_io_thread()) return -1;
  return take_here(pending);
}

int Conn::take_here(std::string& pending) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled) || link_.hijacked || tls_) return -1;
  int fd = ::dup(fd_);
  if (fd < 0) return -1;
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  // Whatever was written (100 Continue, 103) goes out first.
  if (out_.pos < out_.size()) blocking_send(std::string_view(out_.buf).substr(out_.pos));
  out_.buf.clear();
  out_.pos = 0;
  pending.append(in_.unparsed());
  in_.begin = in_.end;
  link_.hijacked = true;
  return fd;
}

bool Conn::send(int status, const Headers& headers) {
  if (sh_.pool && !on_io_thread()) {
    bool ok = false;
    run_on_io([&] { ok = send_interim(status, headers); });
    return ok;
  }
  // From another thread (a delayed response's app) nothing of the connection is read: false at once.
  if (!on_io_thread()) return false;
  return send_interim(status, headers);
}

bool Conn::send_interim(int status, const Headers& headers) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled) || req_.http10 || link_.hijacked || link_.dead ||
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
  // Interim responses go out now, ahead of the final one (a partial write completes with it; in pool
  // mode the io thread finishes it while the app runs).
  if (!flush() && !link_.dead && phase_ == Phase::pooled) wait_write();
  return !link_.dead;
}


}  // namespace csgi::standalone::detail
