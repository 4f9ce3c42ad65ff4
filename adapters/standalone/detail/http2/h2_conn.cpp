// The driver of an HTTP/2 connection, and the Responder and Writer of its streams (see h2_conn.hpp).
#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"

#include <boost/asio/write.hpp>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/http1/conn.hpp"
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"

namespace csgi::standalone::detail {

namespace {
constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t read_size = 16384;
constexpr std::size_t out_high = 64 * 1024;  // produce and buffer up to this much before writing
constexpr std::chrono::milliseconds exit_check{100};
constexpr std::size_t spare_envs_max = 32;  // envs of closed streams a connection keeps for its next ones

// Runs `f` on the io thread behind `mailbox` and waits for its result; false when that thread is gone.
bool call_on_io(IoThread& t, const std::function<bool()>& f) {
  auto c = std::make_shared<PoolCall>();
  bool result = false;
  auto call = [c, &f, &result] {
    std::lock_guard lock(c->mu);
    if (c->abandoned) return;
    try {
      result = f();
    } catch (...) {
    }
    c->done = true;
    c->cv.notify_all();
  };
  if (!t.mailbox->post(call)) return false;
  std::unique_lock lock(c->mu);
  while (!c->cv.wait_for(lock, exit_check, [&] { return c->done; })) {
    if (t.exited.load(std::memory_order_acquire)) {
      c->abandoned = true;
      return false;
    }
  }
  return result;
}

/// A streaming Writer of an HTTP/2 stream: bytes go through H2WriterState to the io thread; a producer
/// on another thread waits while too much is unsent (the stream's flow-control window holds it too).
class H2Writer final : public Writer {
public:
  H2Writer(std::shared_ptr<H2WriterState> st, std::weak_ptr<Conn> conn, std::shared_ptr<Mailbox> mailbox,
           std::int32_t id, std::chrono::milliseconds send_timeout, std::shared_ptr<H2Request> req)
      : st_(std::move(st)), conn_(std::move(conn)), mailbox_(std::move(mailbox)), id_(id),
        send_timeout_(send_timeout), req_(std::move(req)) {}
  ~H2Writer() override {
    std::lock_guard lock(st_->mu);
    if (!st_->closed && !st_->dead) {
      st_->closed = true;
      st_->aborted = true;
      post_flush();
    }
  }
  bool write(std::string_view chunk) override {
    std::unique_lock lock(st_->mu);
    if (st_->dead || st_->closed) return false;
    if (chunk.empty() || st_->head_only) return true;
    st_->pending.append(chunk);
    post_flush();
    if (st_->pending.size() + st_->unsent > writer_high_water && !st_->dead && !mailbox_->on_io_thread()) {
      bool ok = st_->cv.wait_for(lock, send_timeout_, [&] {
        return st_->dead || st_->pending.size() + st_->unsent < writer_low_water;
      });
      if (!ok) st_->dead = true;
    }
    return !st_->dead;
  }
  void close() override {
    std::lock_guard lock(st_->mu);
    if (st_->closed) return;
    st_->closed = true;
    if (!st_->dead) post_flush();
  }
  void set_trailers(Headers trailers) override {
    std::lock_guard lock(st_->mu);
    if (!st_->closed) st_->trailers = std::move(trailers);
  }

private:
  // With st_->mu held.
  void post_flush() {
    if (st_->flush_posted) return;
    st_->flush_posted = true;
    auto call = [c = conn_, id = id_, st = st_] {
      {
        std::lock_guard lock(st->mu);
        st->flush_posted = false;
      }
      if (auto conn = c.lock(); conn && conn->h2()) conn->h2()->on_writer_flush(id, st);
    };
    if (!mailbox_->post(call)) {
      st_->dead = true;
      st_->cv.notify_all();
    }
  }
  std::shared_ptr<H2WriterState> st_;
  std::weak_ptr<Conn> conn_;
  std::shared_ptr<Mailbox> mailbox_;
  std::int32_t id_;
  std::chrono::milliseconds send_timeout_;
  std::shared_ptr<H2Request> req_;  // the env lives while the Writer does (APP-4)
};

/// The Responder of a delayed response on an HTTP/2 stream; it holds the request (APP-4) and reaches
/// the connection only through the io thread's mailbox.
class H2Responder final : public ResponderImpl {
public:
  H2Responder(std::weak_ptr<Conn> conn, std::shared_ptr<Mailbox> mailbox, std::shared_ptr<H2Request> req,
              std::chrono::milliseconds send_timeout)
      : conn_(std::move(conn)), mailbox_(std::move(mailbox)), req_(std::move(req)), id_(req_->id),
        send_timeout_(send_timeout) {}
  ~H2Responder() override {
    if (answered_.exchange(true)) return;
    auto call = [c = conn_, id = id_] {
      if (auto conn = c.lock(); conn && conn->h2()) conn->h2()->on_responder_dropped(id);
    };
    try {
      mailbox_->post(call);
    } catch (...) {
    }
  }
  void respond(Response r) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    if (r.is_delayed()) throw std::logic_error("csgi: Responder::respond given a delayed response");
    auto call = [c = conn_, id = id_, shared = std::make_shared<Response>(std::move(r))] {
      if (auto conn = c.lock(); conn && conn->h2()) conn->h2()->on_app_done(id, std::move(*shared));
    };
    mailbox_->post(call);
  }
  WriterPtr start(int status, Headers headers) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    auto st = std::make_shared<H2WriterState>();
    auto call = [c = conn_, id = id_, st, status, h = std::make_shared<Headers>(std::move(headers))] {
      auto conn = c.lock();
      if (conn && conn->h2()) {
        conn->h2()->on_writer_start(id, status, std::move(*h), st);
        return;
      }
      std::lock_guard lock(st->mu);
      st->dead = true;
    };
    if (!mailbox_->post(call)) st->dead = true;
    return std::make_shared<H2Writer>(st, conn_, mailbox_, id_, send_timeout_, req_);
  }

private:
  std::weak_ptr<Conn> conn_;
  std::shared_ptr<Mailbox> mailbox_;
  std::shared_ptr<H2Request> req_;
  std::int32_t id_;
  std::chrono::milliseconds send_timeout_;
  std::atomic<bool> answered_{false};
};

// The WebSocket handler the app gave csgix.websocket during its call, when its answer is the 101 (else
// the handler is dropped and the answer sent as it is).
std::shared_ptr<websocket::Handler> taken_websocket(H2Request& req, const Response& res) {
  std::unique_ptr<websocket::Handler> h = std::move(req.ws_handler);
  if (!h || res.status != 101 || std::holds_alternative<Delayed>(res.body)) return nullptr;
  return std::shared_ptr<websocket::Handler>(std::move(h));
}

void call_delayed(Shared& sh, Delayed& fn, std::shared_ptr<ResponderImpl> responder) {
  try {
    fn(Responder(std::move(responder)));
  } catch (const std::exception& e) {
    sh.errors.write(std::string("csgi: the delayed response's callable threw: ") + e.what());
  } catch (...) {
    sh.errors.write("csgi: the delayed response's callable threw a non-standard exception");
  }
}

// The trailers() of a pull stream that ended (RES-15); one that throws is logged and none are sent.
Headers pool_trailers(Shared& sh, Stream& stream) {
  std::string error;
  Headers trailers = ended_stream_trailers(stream, error);
  if (!error.empty()) sh.errors.write("csgi: " + error);
  return trailers;
}

// A pull stream on the app's pool thread: pulled there and written through a Writer (its back-pressure
// holds the thread while the client is slow). An exception before the first chunk is a 500 (ADP-5).
void pull_through_writer(Shared& sh, StreamPtr stream, int status, Headers headers,
                         const std::shared_ptr<ResponderImpl>& responder) {
  auto close_stream = [&] {
    try {
      stream->close();
    } catch (...) {
    }
  };
  std::string chunk;
  bool more = false;
  try {
    do more = stream->next(chunk);
    while (more && chunk.empty());
  } catch (const std::exception& e) {
    sh.errors.write(std::string("csgi: 500: the response stream's first next() threw: ") + e.what());
    close_stream();
    responder->respond(Response::error(500));
    return;
  } catch (...) {
    close_stream();
    responder->respond(Response::error(500));
    return;
  }
  if (!more) {
    Headers trailers = pool_trailers(sh, *stream);
    close_stream();
    if (trailers.empty()) return responder->respond(Response{status, std::move(headers), std::string()});
    WriterPtr w = responder->start(status, std::move(headers));  // trailers-only: no DATA, then the trailers
    w->set_trailers(std::move(trailers));
    w->close();
    return;
  }
  WriterPtr w = responder->start(status, std::move(headers));
  try {
    while (w->write(chunk)) {
      do more = stream->next(chunk);
      while (more && chunk.empty());
      if (!more) {
        w->set_trailers(pool_trailers(sh, *stream));
        w->close();
        break;
      }
    }
  } catch (const std::exception& e) {
    sh.errors.write(std::string("csgi: the response stream's next() threw after the head was sent: ") + e.what());
  } catch (...) {
  }
  close_stream();
}
}  // namespace

int h2_preface_match(std::string_view bytes) noexcept {
  std::size_t n = std::min(bytes.size(), preface.size());
  if (bytes.substr(0, n) != preface.substr(0, n)) return -1;
  return n == preface.size() ? 1 : 0;
}

H2Conn::H2Conn(Conn& c, std::string_view url_scheme) : c_(c), url_scheme_(url_scheme) {}

H2Conn::~H2Conn() = default;

namespace {
/// The plain socket under a session: Asio's reads and writes on the connection's socket.
class PlainTransport final : public H2Transport {
public:
  PlainTransport(Socket& socket, std::weak_ptr<Conn> conn) : socket_(socket), conn_(std::move(conn)) {}
  void read_some(char* buf, std::size_t n) override {
    socket_.async_read_some(asio::buffer(buf, n), [self = conn_.lock()](error_code ec, std::size_t got) {
      if (self->h2()) self->h2()->on_read(ec, got);
    });
  }
  void write(std::string_view data) override {
    asio::async_write(socket_, asio::buffer(data.data(), data.size()), [self = conn_.lock()](error_code ec, std::size_t) {
      if (self->h2()) self->h2()->on_written(ec);
    });
  }

private:
  Socket& socket_;
  std::weak_ptr<Conn> conn_;
};
}  // namespace

void H2Conn::open(std::unique_ptr<H2Transport> transport) {
  transport_ = std::move(transport);
  csgi::ConnectionInfo conn;
  conn.server_name = c_.listener_.server_name;
  conn.server_port = c_.listener_.server_port;
  conn.remote_addr = c_.peer_.addr;
  conn.remote_port = c_.peer_.port;
  conn.url_scheme = url_scheme_;
  conn.script_name = c_.sh_.opt.script_name;
  H2Limits limits = H2Limits::from(c_.sh_.opt);
  limits.body = c_.sh_.body_limits;
  session_ = std::make_unique<H2Session>(*this, limits, conn);
  rbuf_.reset(new char[read_size]);
}

void H2Conn::start(std::string_view initial, std::unique_ptr<H2Transport> transport) {
  open(std::move(transport));
  receive_first(initial);
}

// The bytes read before the session began, then reading.
void H2Conn::receive_first(std::string_view initial) {
  if (c_.t_.stopping) {
    stopping_ = true;
    session_->shutdown();
  }
  bool ok = receive(initial.data(), initial.size());
  pump();
  if (!ok) return finish();
  wait_read();
}

void H2Conn::start_upgraded(std::string_view settings, std::unique_ptr<Env> env, bool head, std::string_view initial,
                            std::unique_ptr<H2Transport> transport) {
  open(std::move(transport));
  prefix_ = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  receiving_ = true;  // the upgraded request's app may run now
  bool upgraded = session_->upgrade(settings, std::move(env), head);
  receiving_ = false;
  if (!upgraded) {
    log_error("the HTTP2-Settings of an Upgrade: h2c request were refused");
    session_->shutdown();
  }
  receive_first(initial);
}

void H2Conn::wait_read() {
  if (reading_ || !session_ || c_.phase_ == Conn::Phase::closed) return;
  // Back-pressure: a peer that does not read what it asked for, or keeps more requests in the app than
  // it may have streams (reset streams whose app still runs count: CVE-2023-44487), is not read from.
  if (writing_ || in_app_ >= c_.sh_.opt.h2_max_streams) return;
  reading_ = true;
  transport_->read_some(rbuf_.get(), read_size);
}

void H2Conn::on_read(error_code ec, std::size_t n) {
  reading_ = false;
  if (!session_ || c_.phase_ == Conn::Phase::closed || ec == asio::error::operation_aborted) return;
  if (ec) return c_.close_now();
  c_.t_.now = Clock::now();
  bool ok = receive(rbuf_.get(), n);
  pump();
  if (!ok) return finish();
  wait_read();
}

// Feeds the session; the apps of the requests it completes run meanwhile (inline mode): what they send
// (a 103) is written at once, but the connection does not end under the session's feet.
bool H2Conn::receive(const char* data, std::size_t n) {
  receiving_ = true;
  if (pacing_) pace_.received(n);
  bool ok = session_->receive(data, n);
  receiving_ = false;
  return ok;
}

// Produces frames and starts writing them (one write in flight); ends the connection when the session
// is done and everything is written (not while it is receiving: the next pump() does that).
void H2Conn::pump() {
  if (!session_ || c_.phase_ == Conn::Phase::closed || writing_) return;
  out_.clear();
  if (!prefix_.empty()) out_.swap(prefix_);  // the 101 of an upgrade goes first
  bool ok = session_->produce(out_, out_high);
  if (!out_.empty()) {
    writing_ = true;
    transport_->write(out_);
  } else if (!ok || !session_->alive()) {
    if (!receiving_) finish();
    return;
  }
  update_deadline();
}

void H2Conn::on_written(error_code ec) {
  writing_ = false;
  if (!session_ || c_.phase_ == Conn::Phase::closed || ec == asio::error::operation_aborted) return;
  if (ec || finishing_) {
    c_.link_.dead = c_.link_.dead || ec;
    if (!ec) transport_->end();
    return c_.close_now();
  }
  pump();
  wait_read();
}

// The connection's deadline: the send timeout while bytes wait for the peer (a write in flight, or a
// response held by the peer's window: one never opened is a slow read), renewed only by response body
// bytes going out (a peer that keeps the window shut and sends PINGs is not making progress); the body
// timeout while a request is incomplete, within what --body-min-rate allows for the bytes received since
// requests began to wait (the same pace as an HTTP/1 body's); the idle timeout with nothing open; none
// while only apps run.
void H2Conn::update_deadline() {
  bool blocked = writing_ || session_->blocked_on_window();
  bool progress = session_->data_sent() != data_sent_;
  data_sent_ = session_->data_sent();
  if (blocked) {
    if (!blocked_ || progress) c_.set_deadline(c_.sh_.opt.send_timeout);
  } else if (session_->awaiting_request()) {
    if (!pacing_) pace_.begin(c_.t_.now);
    pacing_ = true;
    c_.deadline_ = pace_.deadline(c_.t_.now, c_.sh_.opt.body_timeout, c_.sh_.opt.body_min_rate);
  } else if (session_->open_streams() == 0 && in_app_ == 0) {
    c_.set_deadline(c_.sh_.opt.idle_timeout);
  } else {
    c_.clear_deadline();
  }
  if (blocked || !session_->awaiting_request()) pacing_ = false;
  blocked_ = blocked;
}

void H2Conn::on_timeout() {
  if (!session_) return c_.close_now();
  c_.clear_deadline();
  bool idle = session_->open_streams() == 0 && in_app_ == 0 && !writing_;
  if (pacing_ && pace_.too_slow(c_.t_.now, c_.sh_.opt.body_timeout, c_.sh_.opt.body_min_rate))
    log_error("HTTP/2 request bodies slower than " + std::to_string(c_.sh_.opt.body_min_rate) +
              " bytes/s: connection closed");
  if (!idle) return c_.close_now();  // a stalled peer
  session_->shutdown();
  pump();
  if (!writing_) finish();
}

void H2Conn::on_shutdown(bool hurry) {
  if (!session_) return;
  if (!stopping_) {
    stopping_ = true;
    session_->shutdown();
    for (auto& [id, ws] : ws_) ws->going_away();
    pump();
  }
  if (hurry && session_ && session_->open_streams() == 0 && in_app_ == 0) finish();
}

// The session has ended (or must): the connection closes (a write in flight is cut short: the peer has
// had its GOAWAY unless it stopped reading).
void H2Conn::finish() {
  if (c_.phase_ == Conn::Phase::closed) return;
  if (writing_) {
    finishing_ = true;  // on_written closes once the last bytes are out
    return;
  }
  transport_->end();
  c_.close_now();
}

void H2Conn::on_close() noexcept {
  if (session_) session_->report_cut_short();
  session_.reset();
}

namespace {
/// csgix.informational of the streams of one connection: on the io thread at once, from another thread
/// through the mailbox (that thread waits).
class Interim final : public H2Interim {
public:
  Interim(std::weak_ptr<Conn> c, IoThread& t) : c_(std::move(c)), t_(&t) {}
  bool send(std::int32_t id, int status, const Headers& headers) override {
    auto here = [&] {
      auto c = c_.lock();
      return c && c->h2() && c->h2()->interim_here(id, status, headers);
    };
    if (t_->ioc.get_executor().running_in_this_thread()) return here();
    if (t_->exited.load(std::memory_order_acquire)) return false;
    return call_on_io(*t_, here);
  }

private:
  std::weak_ptr<Conn> c_;
  IoThread* t_;
};
}  // namespace

// A stream's env comes from the connection's spares, then the io thread's pool: with the pool's, a
// connection with a hundred streams in flight reuses envs instead of making one for each stream past the
// pool's. The spares are few (an env holds about 11 KiB) and go with the connection.
std::unique_ptr<Env> H2Conn::acquire_env() {
  if (spare_envs_.empty()) return c_.t_.acquire_env();
  std::unique_ptr<Env> env = std::move(spare_envs_.back());
  spare_envs_.pop_back();
  return env;
}

void H2Conn::release_env(std::unique_ptr<Env> env) {
  if (!env) return;
  if (spare_envs_.size() >= spare_envs_max) return c_.t_.release_env(std::move(env));
  env->clear();
  spare_envs_.push_back(std::move(env));
}

namespace {
// A value under a key of keys.hpp (static storage: the key is not copied into the env).
[[gnu::always_inline]] inline void put_fixed(Env& env, std::string_view key, Value v) {
  *env.emplace(key, v, false).first = v;
}
}  // namespace

void H2Conn::set_env(H2Request& req) {
  Env& env = *req.env;
  Shared& sh = c_.sh_;
  put_fixed(env, keys::input, Value::of_object(static_cast<Input*>(&req)));
  put_fixed(env, keys::x::input_buffered, Value::of_bool(true));
  put_fixed(env, keys::errors, Value::of_object(static_cast<ErrorStream*>(&sh.errors)));
  put_fixed(env, keys::multithread, Value::of_bool(sh.multithread));
  put_fixed(env, keys::multiprocess, Value::of_bool(sh.multiprocess));
  put_fixed(env, keys::run_once, Value::of_bool(false));
  put_fixed(env, keys::nonblocking, Value::of_bool(false));
  put_fixed(env, keys::streaming, Value::of_bool(true));
  put_fixed(env, keys::x::cleanup, Value::of_bool(true));
  put_fixed(env, keys::x::cleanup_handlers, Value::of_object(&req.cleanup));
  put_fixed(env, keys::x::informational, Value::of_object(static_cast<Informational*>(&req)));
  put_fixed(env, keys::x::request_body_limit, Value::of_int(static_cast<std::int64_t>(sh.opt.max_body_bytes)));
  put_fixed(env, keys::x::server_stats, Value::of_object(static_cast<ServerStats*>(sh.stats)));
  if (c_.tls_info_) {
    // A copy the request shares: the env may outlive the connection (APP-4).
    if (!tls_info_) tls_info_ = std::make_shared<const TlsInfo>(*c_.tls_info_);
    tls_info_->set_env(env);
    req.keep_tls = tls_info_;
  }
  if (req.websocket) put_fixed(env, keys::x::websocket, Value::of_object(static_cast<websocket::Upgrade*>(&req)));
  if (!interim_) interim_ = std::make_shared<Interim>(c_.weak_from_this(), c_.t_);
  req.interim = interim_;
}

bool H2Conn::interim_here(std::int32_t id, int status, const Headers& headers) {
  if (!session_ || !session_->interim(id, status, headers)) return false;
  pump();
  return true;
}

void H2Conn::on_request(std::shared_ptr<H2Request> req) {
  set_env(*req);
  if (!c_.sh_.opt.script_name.empty() && req->env->get(keys::SCRIPT_NAME).empty()) {
    session_->respond(req->id, Response::error(404));
    return;
  }
  ++in_app_;
  if (c_.sh_.app_on_pool()) run_pooled(req);
  else run_inline(req);
}

void H2Conn::run_inline(const std::shared_ptr<H2Request>& req) {
  int failed = 0;
  Response res;
  {
    AppScope scope(c_.t_.fault_slot, &c_);
    req->in_app = true;
    res = c_.call_app(*req->env, failed);
    req->in_app = false;
  }
  auto ws = taken_websocket(*req, res);
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed fn = std::move(*d);
    req->escaped = true;
    auto responder = std::make_shared<H2Responder>(c_.weak_from_this(), c_.t_.mailbox, req, c_.sh_.opt.send_timeout);
    AppScope scope(c_.t_.fault_slot, &c_);
    call_delayed(c_.sh_, fn, std::move(responder));
    on_app_left();
    return;
  }
  on_app_left();
  answer(req, std::move(res), std::move(ws));
}

// On the pool: the app, then its response goes to the io thread (a pull stream and a delayed response's
// callable run here, writing through a Writer).
void H2Conn::run_pooled(const std::shared_ptr<H2Request>& req) {
  req->escaped = true;
  auto job = [self = c_.shared_from_this(), req = req]() mutable {
    Conn* c = self.get();
    Shared& sh = c->sh_;
    int failed = 0;
    req->in_app = true;
    Response res = c->call_app(*req->env, failed);
    req->in_app = false;
    auto ws = taken_websocket(*req, res);
    std::weak_ptr<Conn> wc = self;
    std::shared_ptr<Mailbox> mailbox = c->t_.mailbox;
    auto left = [wc] {
      if (auto conn = wc.lock(); conn && conn->h2()) conn->h2()->on_app_left();
    };
    if (auto* d = std::get_if<Delayed>(&res.body)) {
      Delayed fn = std::move(*d);
      call_delayed(sh, fn, std::make_shared<H2Responder>(wc, mailbox, req, sh.opt.send_timeout));
    } else if (auto* s = std::get_if<StreamPtr>(&res.body); s && *s && !req->head && !status_has_no_body(res.status)) {
      StreamPtr stream = std::move(*s);
      auto responder = std::make_shared<H2Responder>(wc, mailbox, req, sh.opt.send_timeout);
      pull_through_writer(sh, std::move(stream), res.status < 100 || res.status > 999 ? 500 : res.status,
                          std::move(res.headers), responder);
    } else {
      std::int32_t id = req->id;
      auto call = [wc, id, r = std::make_shared<Response>(std::move(res)), ws = std::move(ws)] {
        if (auto conn = wc.lock(); conn && conn->h2()) {
          conn->h2()->on_app_left();
          conn->h2()->on_app_done(id, std::move(*r), ws);
        }
      };
      req.reset();
      // The connection is released on its io thread (the call holds the last reference there).
      auto release = [self = std::move(self), call = std::move(call)]() mutable { call(); self.reset(); };
      mailbox->post(release);
      return;
    }
    req.reset();
    auto release = [self = std::move(self), left = std::move(left)]() mutable { left(); self.reset(); };
    mailbox->post(release);
  };
  if (!c_.sh_.pool->post(std::move(job))) {
    on_app_left();
    session_->respond(req->id, Response::error(503, "server stopping"));
  }
}

void H2Conn::answer(const std::shared_ptr<H2Request>& req, Response res, std::shared_ptr<websocket::Handler> ws) {
  if (!session_) return;
  if (ws) return begin_websocket(req->id, res, std::move(*ws));
  session_->respond(req->id, std::move(res));
}

// Inside receive() (an inline app) the responses wait for the pump() that follows it: all those of the
// requests one read completed go out in one write.
void H2Conn::on_app_left() {
  if (in_app_ > 0) --in_app_;
  if (!session_) return;
  if (!reading_) wait_read();
  if (!receiving_) pump();
}

void H2Conn::on_app_done(std::int32_t id, Response res, std::shared_ptr<websocket::Handler> ws) {
  if (!session_) return;
  if (ws) return begin_websocket(id, res, std::move(*ws));
  session_->respond(id, std::move(res));
  pump();
}

void H2Conn::on_writer_start(std::int32_t id, int status, Headers headers, std::shared_ptr<H2WriterState> w) {
  if (!session_) {
    std::lock_guard lock(w->mu);
    w->dead = true;
    return;
  }
  session_->start_writer(id, status, std::move(headers), std::move(w));
  pump();
}

void H2Conn::on_writer_flush(std::int32_t id, const std::shared_ptr<H2WriterState>&) {
  if (!session_) return;
  session_->pull_writer(id);
  pump();
}

void H2Conn::on_responder_dropped(std::int32_t id) {
  if (!session_) return;
  log_error("500: the delayed response's Responder was dropped without an answer (ADP-11)");
  session_->fail(id);
  pump();
}

void H2Conn::on_response_done(const H2Request& req, int status, std::uint64_t body_bytes, bool) {
  Shared& sh = c_.sh_;
  sh.stats->record_response(status, body_bytes);
  if (!sh.access_log.enabled() || !req.env) return;
  sh.access_log.write(combined_log_line(c_.peer_.addr, *req.env, status, body_bytes, std::time(nullptr)));
}

void H2Conn::log_error(std::string_view what) {
  std::string line = "csgi: ";
  line += what;
  line += " (HTTP/2)";
  c_.sh_.errors.write(line);
}

namespace {
// RFC 4648 §5 (base64url), padding optional: the token68 of HTTP2-Settings. False on a bad character.
bool base64url_decode(std::string_view in, std::string& out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26 : ch >= '0' && ch <= '9' ? ch - '0' + 52
            : ch == '-' ? 62 : ch == '_' ? 63 : -1;
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

// True when the comma-separated `list` holds `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}
}  // namespace

// With h2c_upgrade on, HTTP/1.1 `Upgrade: h2c` with HTTP2-Settings (RFC 7540 §3.2) on a request without a
// body: answered 101, and the request is served as stream 1 of an HTTP/2 connection. Anything else is
// served as HTTP/1.1. Cleartext only (RFC 7540 §3.2): a TLS connection negotiates h2 by ALPN instead.
bool Conn::try_h2c_upgrade() {
  if (!sh_.opt.h2c_upgrade || tls_ || !env_ || req_.http10 || !parser_ || !parser_->is_done() || req_.body_begun) return false;
  Env& old = *env_;
  if (!has_token(old.get("HTTP_UPGRADE"), "h2c") || !has_token(old.get("HTTP_CONNECTION"), "upgrade") ||
      !has_token(old.get("HTTP_CONNECTION"), "http2-settings") || !old.contains("HTTP_HTTP2_SETTINGS") ||
      sh_.opt.h2_max_streams == 0)
    return false;
  std::string settings;
  if (!base64url_decode(trim_ows(old.get("HTTP_HTTP2_SETTINGS")), settings)) return false;
  // The request's env again, copied out of the read buffer, as HTTP/2 has it (ENV-16).
  auto env = t_.acquire_env();
  for (const Env::Entry& e : old) {
    if (!e.value.is_text() || e.key == "HTTP_UPGRADE" || e.key == "HTTP_CONNECTION" || e.key == "HTTP_HTTP2_SETTINGS" ||
        e.key == "HTTP_KEEP_ALIVE" || e.key == "HTTP_TE")
      continue;
    env->set(e.key, e.value.text());
  }
  env->set(keys::SERVER_PROTOCOL, "HTTP/2");
  bool head = req_.head;
  std::string rest(in_.unparsed());
  parser_.reset();
  t_.release_env(std::move(env_));
  req_.stage = Request::none;
  phase_ = Phase::h2;
  h2_ = std::make_unique<H2Conn>(*this);
  h2_->start_upgraded(settings, std::move(env), head, rest, std::make_unique<PlainTransport>(socket_, weak_from_this()));
  return true;
}

// Conn's side: the connection's first bytes were the HTTP/2 preface, or its TLS handshake chose h2.
void Conn::start_h2() {
  phase_ = Phase::h2;  // nothing HTTP/1 is ever written on this connection
  std::unique_ptr<H2Transport> transport;
  if (tls_) {
    tls_connection_info();
    transport = tls_h2_transport();
  } else {
    transport = std::make_unique<PlainTransport>(socket_, weak_from_this());
  }
  h2_ = std::make_unique<H2Conn>(*this, tls_ ? "https" : "http");
  std::string_view initial = in_.unparsed();
  in_.begin = in_.end = 0;
  h2_->start(initial, std::move(transport));
}

}  // namespace csgi::standalone::detail
