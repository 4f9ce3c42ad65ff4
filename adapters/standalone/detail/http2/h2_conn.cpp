// The driver of an HTTP/2 connection, and the Responder and Writer of its streams (see h2_conn.hpp).
#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"

#include <boost/asio/write.hpp>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/exchange/request.hpp"
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"

namespace csgi::standalone::detail {

namespace {
constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t read_size = 16384;
constexpr std::size_t out_high = 64 * 1024;  // produce and buffer up to this much before writing
constexpr std::size_t spare_envs_max = 32;  // envs of closed streams a connection keeps for its next ones

/// The route of a delayed response on an HTTP/2 stream: the stream of its connection, if both are still
/// there. Only the io thread locks the connection.
class H2Route final : public ResponseRoute {
public:
  H2Route(std::weak_ptr<Transport> c, std::int32_t id) : c_(std::move(c)), id_(id) {}
  void respond(Response r) override {
    with_driver([&](H2Conn& h) { h.on_app_done(id_, std::move(r)); });
  }
  void start(const std::shared_ptr<WriterState>& w, int status, Headers headers) override {
    if (!with_driver([&](H2Conn& h) { h.on_writer_start(id_, status, std::move(headers), w); })) w->gone();
  }
  void flush(const std::shared_ptr<WriterState>& w) override {
    {
      std::lock_guard lock(w->mu);
      w->flush_posted = false;
    }
    with_driver([&](H2Conn& h) { h.on_writer_flush(id_); });
  }
  void dropped() override {
    with_driver([&](H2Conn& h) { h.on_responder_dropped(id_); });
  }

private:
  template <class F>
  bool with_driver(F&& f) {
    auto c = c_.lock();
    if (!c || !c->h2()) return false;
    f(*c->h2());
    return true;
  }
  std::weak_ptr<Transport> c_;
  std::int32_t id_;
};

// The WebSocket handler the app gave csgix.websocket during its call, when its answer is the 101 (else
// the handler is dropped and the answer sent as it is).
std::shared_ptr<websocket::Handler> taken_websocket(H2Request& req, const Response& res) {
  std::unique_ptr<websocket::Handler> h = std::move(req.ws_handler);
  if (!h || res.status != 101 || std::holds_alternative<Delayed>(res.body)) return nullptr;
  return std::shared_ptr<websocket::Handler>(std::move(h));
}

}  // namespace

int h2_preface_match(std::string_view bytes) noexcept {
  std::size_t n = std::min(bytes.size(), preface.size());
  if (bytes.substr(0, n) != preface.substr(0, n)) return -1;
  return n == preface.size() ? 1 : 0;
}

H2Conn::H2Conn(Transport& t, std::string_view url_scheme) : Codec(t), url_scheme_(url_scheme) {}

H2Conn::~H2Conn() = default;


void H2Conn::open() {
  csgi::ConnectionInfo conn;
  conn.server_name = tr_.listener().server_name;
  conn.server_port = tr_.listener().server_port;
  conn.remote_addr = tr_.peer().addr;
  conn.remote_port = tr_.peer().port;
  conn.url_scheme = url_scheme_;
  conn.script_name = tr_.shared().opt.script_name;
  H2Limits limits = H2Limits::from(tr_.shared().opt);
  limits.body = tr_.shared().body_limits;
  session_ = std::make_unique<H2Session>(*this, limits, conn);
  rbuf_.reset(new char[read_size]);
}

void H2Conn::start(std::string_view initial) {
  open();
  receive_first(initial);
}

// The bytes read before the session began, then reading.
void H2Conn::receive_first(std::string_view initial) {
  if (tr_.thread().stopping) {
    stopping_ = true;
    session_->shutdown();
  }
  bool ok = receive(initial.data(), initial.size());
  pump();
  if (!ok) return finish();
  wait_read();
}

void H2Conn::start_upgraded(std::string_view settings, std::unique_ptr<Env> env, bool head, std::string_view initial) {
  open();
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
  if (reading_ || !session_ || tr_.closed()) return;
  // Back-pressure: a peer that does not read what it asked for, or keeps more requests in the app than
  // it may have streams (reset streams whose app still runs count: CVE-2023-44487), is not read from.
  if (writing_ || in_app_ >= tr_.shared().opt.h2_max_streams) return;
  reading_ = true;
  tr_.read_some(rbuf_.get(), read_size);
}

void H2Conn::on_read(error_code ec, std::size_t n) {
  reading_ = false;
  if (!session_ || tr_.closed() || ec == asio::error::operation_aborted) return;
  if (ec) return tr_.close();
  tr_.thread().now = Clock::now();
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
  if (!session_ || tr_.closed() || writing_) return;
  out_.clear();
  if (!prefix_.empty()) out_.swap(prefix_);  // the 101 of an upgrade goes first
  bool ok = session_->produce(out_, out_high);
  if (!out_.empty()) {
    writing_ = true;
    tr_.write_all(out_);
  } else if (!ok || !session_->alive()) {
    if (!receiving_) finish();
    return;
  }
  update_deadline();
}

void H2Conn::on_written(error_code ec) {
  writing_ = false;
  if (!session_ || tr_.closed() || ec == asio::error::operation_aborted) return;
  if (ec || finishing_) {
    if (ec) tr_.mark_dead();
    if (!ec) tr_.end_stream();
    return tr_.close();
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
    if (!blocked_ || progress) tr_.set_deadline(tr_.shared().opt.send_timeout);
  } else if (session_->awaiting_request()) {
    if (!pacing_) pace_.begin(tr_.thread().now);
    pacing_ = true;
    tr_.set_deadline_at(pace_.deadline(tr_.thread().now, tr_.shared().opt.body_timeout, tr_.shared().opt.body_min_rate));
  } else if (session_->open_streams() == 0 && in_app_ == 0) {
    tr_.set_deadline(tr_.shared().opt.idle_timeout);
  } else {
    tr_.clear_deadline();
  }
  if (blocked || !session_->awaiting_request()) pacing_ = false;
  blocked_ = blocked;
}

void H2Conn::on_timeout() {
  if (!session_) return tr_.close();
  tr_.clear_deadline();
  bool idle = session_->open_streams() == 0 && in_app_ == 0 && !writing_;
  if (pacing_ && pace_.too_slow(tr_.thread().now, tr_.shared().opt.body_timeout, tr_.shared().opt.body_min_rate))
    log_error("HTTP/2 request bodies slower than " + std::to_string(tr_.shared().opt.body_min_rate) +
              " bytes/s: connection closed");
  if (!idle) return tr_.close();  // a stalled peer
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
  if (tr_.closed()) return;
  if (writing_) {
    finishing_ = true;  // on_written closes once the last bytes are out
    return;
  }
  tr_.end_stream();
  tr_.close();
}

void H2Conn::on_close() noexcept {
  if (session_) session_->report_cut_short();
  session_.reset();
}

// A stream's app froze: which one is not known here; the connection ends (the transport half-closes).
std::string H2Conn::abandon(int) noexcept { return {}; }

std::string H2Conn::abandon_pooled(int, std::atomic<bool>& answered) noexcept {
  try {
    auto close = [self = tr_.weak_from_this(), &answered] {
      if (auto t = self.lock()) t->close();
      answered.store(true);
    };
    tr_.thread().mailbox->post(close);
  } catch (...) {
  }
  return {};
}

namespace {
/// csgix.informational of the streams of one connection: on the io thread at once, from another thread
/// through the mailbox (that thread waits).
class Interim final : public H2Interim {
public:
  Interim(std::weak_ptr<Transport> c, IoThread& t) : c_(std::move(c)), t_(&t) {}
  bool send(std::int32_t id, int status, const Headers& headers) override {
    auto here = [&] {
      auto c = c_.lock();
      return c && c->h2() && c->h2()->interim_here(id, status, headers);
    };
    if (t_->ioc.get_executor().running_in_this_thread()) return here();
    if (t_->exited.load(std::memory_order_acquire)) return false;
    return call_on_io(*t_->mailbox, t_->exited, here);
  }

private:
  std::weak_ptr<Transport> c_;
  IoThread* t_;
};
}  // namespace

// A stream's env comes from the connection's spares, then the io thread's pool: with the pool's, a
// connection with a hundred streams in flight reuses envs instead of making one for each stream past the
// pool's. The spares are few (an env holds about 11 KiB) and go with the connection.
std::unique_ptr<Env> H2Conn::acquire_env() {
  if (spare_envs_.empty()) return tr_.thread().acquire_env();
  std::unique_ptr<Env> env = std::move(spare_envs_.back());
  spare_envs_.pop_back();
  return env;
}

void H2Conn::release_env(std::unique_ptr<Env> env) {
  if (!env) return;
  if (spare_envs_.size() >= spare_envs_max) return tr_.thread().release_env(std::move(env));
  env->clear();
  spare_envs_.push_back(std::move(env));
}

void H2Conn::set_env(H2Request& req) {
  Env& env = *req.env;
  RequestObjects o;
  o.input = &req;
  o.cleanup = &req.cleanup;
  o.informational = &req;
  if (req.websocket) o.websocket = &req;
  set_server_env(env, tr_.shared(), o, tr_.peer().https);
  if (tr_.tls_info()) {
    // A copy the request shares: the env may outlive the connection (APP-4).
    if (!tls_info_) tls_info_ = std::make_shared<const TlsInfo>(*tr_.tls_info());
    tls_info_->set_env(env);
    req.keep_tls = tls_info_;
  }
  if (!interim_) interim_ = std::make_shared<Interim>(tr_.weak_from_this(), tr_.thread());
  req.interim = interim_;
}

bool H2Conn::interim_here(std::int32_t id, int status, const Headers& headers) {
  if (!session_ || !session_->interim(id, status, headers)) return false;
  pump();
  return true;
}

void H2Conn::on_request(std::shared_ptr<H2Request> req) {
  set_env(*req);
  if (!inside_mount(tr_.shared(), *req->env)) {
    session_->respond(req->id, Response::error(404));
    return;
  }
  ++in_app_;
  if (tr_.shared().app_on_pool()) run_pooled(req);
  else run_inline(req);
}

namespace {
// The Responder of a delayed response on a stream: it keeps the stream's request until the response is
// complete (APP-4). Callable from any thread.
std::shared_ptr<ResponderImpl> stream_responder(std::weak_ptr<Transport> c, std::shared_ptr<Mailbox> mailbox,
                                                std::chrono::milliseconds send_timeout,
                                                const std::shared_ptr<H2Request>& req) {
  req->escaped = true;
  auto keeper = std::make_shared<RequestKeeper>();
  keeper->held = req;
  return make_responder(std::make_shared<H2Route>(std::move(c), req->id), std::move(mailbox), send_timeout,
                        std::move(keeper));
}
}  // namespace

void H2Conn::run_inline(const std::shared_ptr<H2Request>& req) {
  int failed = 0;
  Response res;
  {
    AppScope scope(tr_.thread().fault_slot, &tr_);
    req->in_app = true;
    res = call_app(tr_.shared(), *req->env, failed);
    req->in_app = false;
  }
  auto ws = taken_websocket(*req, res);
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed fn = std::move(*d);
    auto responder = stream_responder(tr_.weak_from_this(), tr_.thread().mailbox, tr_.shared().opt.send_timeout, req);
    RequestLog log(tr_.shared().errors, req->env.get());
    AppScope scope(tr_.thread().fault_slot, &tr_);
    call_delayed(fn, std::move(responder), log);
    on_app_left();
    return;
  }
  on_app_left();
  answer(req, std::move(res), std::move(ws));
}

// On the pool: the app, then its response goes to the io thread (a pull stream and a delayed response's
// callable run here, answering through a Responder).
void H2Conn::run_pooled(const std::shared_ptr<H2Request>& req) {
  req->escaped = true;
  auto job = [self = tr_.shared_from_this(), req = req]() mutable {
    Transport* c = self.get();
    Shared& sh = c->shared();
    int failed = 0;
    req->in_app = true;
    Response res = call_app(sh, *req->env, failed);
    req->in_app = false;
    auto ws = taken_websocket(*req, res);
    std::weak_ptr<Transport> wc = self;
    std::shared_ptr<Mailbox> mailbox = c->thread().mailbox;
    auto responder = [&] { return stream_responder(wc, mailbox, sh.opt.send_timeout, req); };
    if (answer_on_pool(res, req->head, true, *req->env, sh.errors, responder)) {
      req.reset();
      auto release = [self = std::move(self)]() mutable {
        if (self->h2()) self->h2()->on_app_left();
        self.reset();
      };
      mailbox->post(release);
      return;
    }
    std::int32_t id = req->id;
    req.reset();
    // The connection is released on its io thread (the call holds the last reference there).
    auto release = [self = std::move(self), id, r = std::make_shared<Response>(std::move(res)),
                    ws = std::move(ws)]() mutable {
      if (H2Conn* h = self->h2()) {
        h->on_app_left();
        h->on_app_done(id, std::move(*r), ws);
      }
      self.reset();
    };
    mailbox->post(release);
  };
  if (!tr_.shared().pool->post(std::move(job))) {
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

void H2Conn::on_writer_start(std::int32_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  if (!session_) return w->gone();
  session_->start_writer(id, status, std::move(headers), w);
  pump();
}

void H2Conn::on_writer_flush(std::int32_t id) {
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
  response_done(tr_.shared(), req.cleanup, status, body_bytes);
}

void H2Conn::log_error(std::string_view what) {
  std::string line = "csgi: ";
  line += what;
  line += " (HTTP/2)";
  tr_.shared().errors.write(line);
}

}  // namespace csgi::standalone::detail
