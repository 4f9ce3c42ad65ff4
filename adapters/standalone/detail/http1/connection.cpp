// One connection of the standalone server: reading requests, the env and the app call, closing (see conn.hpp).
#include "csgi/adapters/standalone/detail/http1/conn.hpp"
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
  if (body_.writer) {
    writer_gone(*body_.writer);
  }
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

// The connection's own bytes begin: requests are read.
void Conn::serve() {
  phase_ = Phase::reading;
  wait_read();
}

// Reads with async_read_some: Asio tries the recv at once (a speculative read). Boost 1.74's reactor
// stops trying at once only after a read that returned nothing, so after each keep-alive response this
// recv finds nothing (EAGAIN) before the connection waits for the next epoll edge. Waiting first
// (async_wait(wait_read)) would not save it: an op queued without that read costs an
// epoll_ctl(EPOLL_CTL_MOD) per call there instead, the same one syscall per request.
void Conn::wait_read() {
  if (link_.reading || phase_ == Phase::closed || link_.peer_eof) return;
  if (!make_room()) {
    if (phase_ == Phase::lingering) in_.begin = in_.end = 0;
    else {
      reject(431, "request header too large");
      return;
    }
  }
  link_.reading = true;
  if (tls_) {
    tls_wait_read();
    return;
  }
  socket_.async_read_some(asio::buffer(in_.buf.get() + in_.end, in_.cap - in_.end),
                          [self = shared_from_this()](error_code ec, std::size_t n) {
                            self->link_.reading = false;
                            self->on_read(ec, n);
                          });
}

void Conn::on_read(error_code ec, std::size_t n) {
  if (phase_ == Phase::closed || ec == asio::error::operation_aborted) return;
  if (phase_ == Phase::lingering) {
    if (ec) {
      close_now();
      return;
    }
    in_.begin = in_.end = 0;  // discard
    wait_read();
    return;
  }
  if (ec == asio::error::eof) {
    link_.peer_eof = true;
  } else if (ec) {
    link_.dead = true;
    close_now();
    return;
  } else {
    in_.end += n;
  }
  if (phase_ == Phase::reading) process();
}

bool Conn::make_room() {
  if (in_.end < in_.cap) return true;
  if (req_.stage != Request::active && in_.begin > 0) {
    std::memmove(in_.buf.get(), in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin;
    in_.begin = 0;
    return in_.end < in_.cap;
  }
  if (req_.stage != Request::active) {
    std::size_t limit = sh_.opt.max_header_bytes + 1024;
    if (in_.cap >= limit) return false;
    std::size_t ncap = std::min(in_.cap * 2, limit);
    std::unique_ptr<char[]> nb(new char[ncap]);
    std::memcpy(nb.get(), in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin;
    in_.begin = 0;
    in_.buf = std::move(nb);
    in_.cap = ncap;
    return true;
  }
  // An active request: only the body region behind its header may be compacted.
  if (in_.begin > in_.body_base) {
    std::memmove(in_.buf.get() + in_.body_base, in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin - in_.body_base;
    in_.begin = in_.body_base;
  }
  return in_.end < in_.cap;
}

void Conn::begin_request() {
  if (!env_) env_ = t_.acquire_env();
  csgi::ConnectionInfo conn;
  conn.server_name = listener_.server_name;
  conn.server_port =
      peer_.server_port[0] ? std::string_view(peer_.server_port) : std::string_view(listener_.server_port);
  if (peer_.https) conn.url_scheme = "https";
  conn.remote_addr = peer_.addr;
  conn.remote_port = peer_.port;
  conn.script_name = sh_.opt.script_name;
  if (tls_) tls_begin_request(conn);
  req_ = {};
  body_in_.reset();
  parser_.emplace(*env_, sh_.opt, conn);
  ws_handler_.reset();  // a handler an earlier request took but did not answer with its 101
}

// Parses and serves every complete request in the buffer, then waits for more bytes. Each step says
// what comes next: the following step, the loop again, waiting for bytes, or nothing (it took over).
void Conn::process() {
  while (phase_ == Phase::reading) {
    Step step = req_.stage != Request::active ? read_head() : Step::next;
    if (step == Step::next) step = read_body();
    if (step == Step::stop) return;
    if (step == Step::again) continue;
    if (step == Step::wait) break;
    request_ready();
    if (phase_ != Phase::reading) return;  // a delayed, pooled, streaming, file or closing response took over
    if (out_.unsent() > flush_threshold || !out_.ext.empty()) {
      if (!flush()) {
        wait_write();
        return;
      }
    }
  }
  if (phase_ == Phase::reading) wait_for_request();
}

// Parses the next request's head once it is all in the buffer (the env's views point into it), within
// the request-line and header limits.
Conn::Step Conn::read_head() {
  if (!parser_) {
    Step step = start_request();
    if (step != Step::next) return step;
  }
  if (!head_complete(in_.unparsed(), req_.scanned, req_.folded)) return head_incomplete();
  return parse_head();
}

// The first bytes of a request: HTTP/1 (a new request begins) or, on a new connection, maybe HTTP/2.
Conn::Step Conn::start_request() {
  // RFC 9112 §2.2: ignore empty lines before a request-line.
  while (in_.begin < in_.end && (in_.buf[in_.begin] == '\r' || in_.buf[in_.begin] == '\n')) ++in_.begin;
  if (in_.begin == in_.end) {
    in_.begin = in_.end = 0;
    return Step::wait;
  }
  if (link_.h2_possible) {
    // Plain: the preface starts HTTP/2 (prior knowledge). TLS: ALPN chose, during the handshake that
    // the first read made; the session checks the preface (RFC 9113 §3.3, §3.4).
    int m = tls_ ? (tls_->alpn() == "h2" ? 1 : -1) : h2_preface_match(in_.unparsed());
    if (m == 0) return Step::wait;
    link_.h2_possible = false;
    if (m > 0) return start_h2(), Step::stop;
  }
  begin_request();
  set_idle(false);
  set_deadline(sh_.opt.header_timeout);
  return Step::next;
}

// Header incomplete: enforce the request-line and header-size limits on what we have.
Conn::Step Conn::head_incomplete() {
  std::string_view have = in_.unparsed();
  std::size_t eol = have.find('\n');
  if (eol == std::string_view::npos ? have.size() > sh_.opt.max_request_line : eol > sh_.opt.max_request_line + 1) {
    reject(414, "request line too long");
    return Step::stop;
  }
  if (have.size() > sh_.opt.max_header_bytes) {
    reject(431, "request header too large");
    return Step::stop;
  }
  return Step::wait;
}

// The whole head is buffered: Beast parses it in one call, so env views into it stay valid.
Conn::Step Conn::parse_head() {
  // RFC 9112 §5.2: obs-fold is refused. Before parsing: Beast unfolds such a value into a buffer of its
  // own, and the env's views (and the parser's checks of Host, Content-Length, Expect) would point there.
  if (req_.folded) {
    reject(400, "obs-fold in header");
    return Step::stop;
  }
  error_code ec;
  std::size_t used = parser_->put(asio::buffer(in_.unparsed()), ec);
  if (ec == http::error::need_more) ec = http::error::bad_line_ending;
  req_.http10 = parser_->http10;
  req_.head = parser_->head;
  if (ec) {
    reject(parser_->status_for(ec), parser_->reject_why[0] ? parser_->reject_why : "malformed request");
    return Step::stop;
  }
  in_.begin += used;
  in_.body_base = in_.begin;
  req_.stage = Request::active;
  if (parser_->reject_status) {
    reject(parser_->reject_status, parser_->reject_why);
    return Step::stop;
  }
  req_.expect = parser_->expect;
  bool has_body = !parser_->is_done();
  if (has_body && !parser_->chunked()) req_.content_length = parser_->content_length().value_or(0);
  // Expect: 100-continue (RFC 9110 §10.1.1): the 100 goes out when read_body() begins the body.
  if (!req_.expect.empty() && iequals(req_.expect, "100-continue")) req_.continue_pending = !req_.http10 && has_body;
  return Step::next;
}

// The request's body is read whole into body_in_ (memory, then a temporary file) before the app runs,
// as the bytes come, whatever the app's mode: no app ever waits on the network. Chunked bodies are
// decoded. The body ends in 413 past --max-body-bytes, 400 when malformed, 408 when slower than
// body_deadline() allows (on_timeout).
Conn::Step Conn::read_body() {
  if (parser_->is_done()) return Step::next;
  if (!req_.body_begun) {
    req_.body_begun = true;
    pace_.begin(t_.now);
    if (req_.continue_pending) {
      req_.continue_pending = false;
      out_.append("HTTP/1.1 100 Continue\r\n\r\n");
    }
    std::string why;
    if (!body_in_.expect(req_.content_length, sh_.body_limits, why)) {
      log_error(why);
      reject(500, "cannot store the request body");
      return Step::stop;
    }
  }
  char chunk[16384];
  return store_body(chunk, sizeof chunk);
}

Conn::Step Conn::store_body(char* chunk, std::size_t cap) {
  for (;;) {
    parser_->sink = chunk;
    parser_->sink_cap = cap;
    parser_->sink_len = 0;
    error_code ec;
    std::size_t used = in_.begin < in_.end || parser_->chunked() ? parser_->put(asio::buffer(in_.unparsed()), ec) : 0;
    in_.begin += used;
    pace_.received(used);
    if (ec && ec != http::error::need_more) {
      if (ec == http::error::body_limit)
        reject(413, "request body larger than " + std::to_string(sh_.opt.max_body_bytes) + " bytes");
      else reject(400, "malformed request body: " + ec.message());
      return Step::stop;
    }
    std::string why;
    if (!body_in_.append(chunk, parser_->sink_len, sh_.body_limits, why)) {
      log_error(why);
      reject(500, "cannot store the request body");
      return Step::stop;
    }
    if (parser_->is_done()) return Step::next;
    if (used > 0 || parser_->sink_len > 0) continue;
    if (link_.peer_eof) {
      reject(400, "connection closed before the end of the body");
      return Step::stop;
    }
    if (!make_room()) {
      reject(400, "chunk header too long");
      return Step::stop;
    }
    body_deadline();
    return Step::wait;
  }
}

// The body's deadline after a piece: --body-timeout from now, within what --body-min-rate allows.
void Conn::body_deadline() {
  deadline_ = pace_.deadline(t_.now, sh_.opt.body_timeout, sh_.opt.body_min_rate);
}

// Every complete request is answered: write what is pending, then wait for the next request (or close
// after a client's half-close).
void Conn::wait_for_request() {
  if (out_.pending()) {
    if (!flush()) {
      wait_write();
      return;
    }
  }
  if (link_.peer_eof) {
    // Client half-closed and every complete request is answered.
    close_now();
    return;
  }
  // Idle: also while stopping, when the connection is kept until its idle timeout or the graceful timeout
  // (see on_shutdown); a request that still comes is answered with Connection: close.
  if (req_.stage != Request::active && in_.begin == in_.end) {
    set_deadline(sh_.opt.idle_timeout);
    set_idle(true);
  }
  wait_read();
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
  if (!sh_.opt.script_name.empty() && env.get(keys::SCRIPT_NAME).empty()) {
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
    return call_app(env, failed);
  }();
  if (phase_ == Phase::closed) return;
  after_app(std::move(res), failed);
}

namespace {
/// Sets `key`, a constant of keys.hpp: its bytes are static, so the env keeps the view without copying it.
inline void put_key(Env& env, std::string_view key, Value v) { *env.emplace(key, v, false).first = v; }
}  // namespace

void Conn::set_connection_env(Env& env) {
  put_key(env, keys::input, Value::of_object(static_cast<Input*>(&body_in_)));
  put_key(env, keys::errors, Value::of_object(static_cast<ErrorStream*>(&sh_.errors)));
  put_key(env, keys::multithread, Value::of_bool(sh_.multithread));
  put_key(env, keys::multiprocess, Value::of_bool(sh_.multiprocess));
  put_key(env, keys::run_once, Value::of_bool(false));
  put_key(env, keys::nonblocking, Value::of_bool(false));
  put_key(env, keys::streaming, Value::of_bool(true));
  if (!tls_) put_key(env, keys::x::io, Value::of_object(static_cast<Hijack*>(this)));  // no raw socket under TLS
  else if (tls_info_) tls_info_->set_env(env);
  put_key(env, keys::x::cleanup, Value::of_bool(true));
  put_key(env, keys::x::cleanup_handlers, Value::of_object(&cleanup_));
  put_key(env, keys::x::informational, Value::of_object(static_cast<Informational*>(this)));
  put_key(env, keys::x::websocket, Value::of_object(static_cast<websocket::Upgrade*>(this)));
  put_key(env, keys::x::request_body_limit, Value::of_int(static_cast<std::int64_t>(sh_.opt.max_body_bytes)));
  put_key(env, keys::x::server_stats, Value::of_object(sh_.stats));
  if (peer_.https) env.set_view(keys::HTTPS, "on");
}

// Calls the app on this thread (the io thread, or a pool thread: then only `env` and the shared state
// are touched). An exception becomes the response app_failure_response() gives (logged where the server
// is at fault); `failed` is its status (0 when the app returned).
Response Conn::call_app(Env& env, int& failed) {
  try {
    // An inline call under app_inline_first is timed (a pool thread calls only once the watch said so).
    InlineWatch::Call watch(sh_.inline_watch && sh_.inline_watch->inline_now() ? sh_.inline_watch : nullptr);
    return sh_.app(env);
  } catch (...) {
    try {
      Response res = app_failure_response(env, std::current_exception());
      failed = res.status;
      return res;
    } catch (...) {  // building the answer failed too (out of memory)
    }
  }
  failed = 500;
  Response res;
  res.status = 500;
  return res;
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
  if (body_.writer) {
    writer_gone(*body_.writer);
  }
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


void start_connection(IoThread& t, Socket socket, const ListenSocket& listener) {
  auto c = std::make_shared<Conn>(t, std::move(socket), listener);
  c->start();
}

void IoThread::add(Conn& c) {
  conns_.push_back(c.node());
  if (stopping && !sweeping_) {
    // A connection accepted late in a stop (an accept that had completed, one posted by another thread):
    // served like the others, so the timers that maybe_finish_stop cancelled run again.
    arm_sweep();
    arm_stop_timer();
  }
}

void IoThread::arm_sweep() {
  sweeping_ = true;
  sweeper_.expires_after(std::chrono::milliseconds(stopping ? 100 : 500));
  sweeper_.async_wait([this](error_code ec) {
    if (!ec) sweep();
  });
}

void IoThread::arm_stop_timer() {
  stop_timer_.expires_at(stop_deadline_);
  stop_timer_.async_wait([this](error_code ec) {
    if (!ec) ioc.stop();  // graceful timeout: what is still open is closed with the io thread
  });
}

void IoThread::sweep() {
  now = Clock::now();
  if (index == 0) {
    // After a burst of connections (thousands at once) most of the heap they used is free but still
    // resident; hand it back to the kernel once the burst is over.
    std::size_t open_now = shared.connections.load(std::memory_order_relaxed);
    peak_ = std::max(peak_, open_now);
    if (peak_ > open_now + 500 && open_now < peak_ / 2) {
      ::malloc_trim(0);
      peak_ = open_now;
    }
  }
  std::vector<std::shared_ptr<Conn>> expired;
  for (ConnNode& n : conns_)
    if (n.conn->expired(now)) expired.push_back(n.conn->shared_from_this());
  for (auto& c : expired) c->on_timeout();
  sweeping_ = false;
  if (stopping) {
    maybe_finish_stop();
    if (conns_.empty()) return;
  }
  arm_sweep();
}

void IoThread::begin_stop() {
  if (stopping) {
    // A second stop request: idle connections are closed now instead of at their timeout.
    std::vector<std::shared_ptr<Conn>> all;
    for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
    for (auto& c : all) c->on_shutdown(true);
    maybe_finish_stop();
    return;
  }
  stopping = true;
  stop_deadline_ = Clock::now() + shared.opt.graceful_timeout;
  if (on_stop) on_stop();
  for (auto& l : listeners_) {
    if (l->pause) l->pause->cancel();
    if (l->own) drain_accept_queue(*l);
    error_code ec;
    l->acceptor->close(ec);
  }
  // Once no thread accepts any more, no thread can be handed a connection: the threads may finish.
  if (shared.accepting.fetch_sub(1, std::memory_order_acq_rel) == 1)
    for (IoThread* t : shared.threads) asio::post(t->ioc, [t] { t->hold_.reset(); });
  std::vector<std::shared_ptr<Conn>> all;
  for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
  for (auto& c : all) c->on_shutdown(false);
  arm_stop_timer();
  maybe_finish_stop();
}

void IoThread::drain_accept_queue(Listener& l) {
  // An SO_REUSEPORT socket of this process's own: closing it resets the connections in its accept queue
  // (the other sockets of the group do not inherit them unless net.ipv4.tcp_migrate_req=1). Accept
  // what is queued and serve it first; a handshake completing between this and the close below is
  // still reset (docs/reliability.md §4).
  for (int n = 0; n < 4096; ++n) {
    error_code ec;
    Socket s(ioc);
    l.acceptor->accept(s, ec);
    if (ec) break;
    open.fetch_add(1, std::memory_order_relaxed);
    try {
      start_connection(*this, std::move(s), *l.info);
    } catch (const std::exception& e) {
      shared.errors.write(std::string("csgi: connection setup failed: ") + e.what());
    }
    open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void IoThread::close_all_connections() noexcept {
  std::vector<std::shared_ptr<Conn>> left;
  for (ConnNode& n : conns_) left.push_back(n.conn->shared_from_this());
  for (auto& c : left) {
    try {
      c->force_close();
    } catch (...) {
    }
  }
}

void IoThread::maybe_finish_stop() {
  if (!stopping || !conns_.empty()) return;
  stop_timer_.cancel();
  sweeper_.cancel();
}

void IoThread::stop() {
  shared.stopping = true;
  if (shared.stats) shared.stats->begin_drain();
  asio::post(ioc, [this] { begin_stop(); });
}

}  // namespace csgi::standalone::detail
