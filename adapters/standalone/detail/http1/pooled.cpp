// The app on the pool (--app-threads N, app_pool.hpp): the io thread posts the request, the app runs on a
// pool thread, and what the app asks of the connection (csgix.informational, csgix.io) is done by the io
// thread while the app's thread waits. The pool thread touches only the env, the request body (complete
// before the app runs) and what it gets back from the io thread (see conn.hpp).
#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/http1/conn.hpp"

namespace csgi::standalone::detail {

namespace {
// How often an app thread waiting on its io thread looks whether that thread has stopped.
constexpr std::chrono::milliseconds exit_check{100};
}  // namespace

// On the io thread: the env is complete; the app runs on the pool. Until it returns, the env and the
// buffer its views point into stay (close_now keeps them).
void Conn::run_in_pool() {
  phase_ = Phase::pooled;
  Env* env = env_.get();
  auto job = [self = shared_from_this(), env]() mutable {
    Conn* c = self.get();
    c->pool_job(std::move(self), *env);
  };
  if (!sh_.pool->post(std::move(job))) {
    phase_ = Phase::reading;
    req_.keep_alive = false;
    handle(Response::error(503, "server stopping"));
  }
}

// On a pool thread.
void Conn::pool_job(std::shared_ptr<Conn> self, Env& env) {
  int failed = 0;
  Response res;
  {
    AppScope scope(pool_fault_slot, this);
    res = call_app(env, failed);
  }
  if (std::holds_alternative<Delayed>(res.body) || std::holds_alternative<StreamPtr>(res.body)) {
    // What a log line says of the request: the env may be gone once the io thread has the response.
    std::string what;
    try {
      what = std::string(env.get(keys::REQUEST_METHOD)) + " " + std::string(env.get(keys::REQUEST_URI)) + " " +
             std::string(env.get(keys::SERVER_PROTOCOL));
    } catch (...) {
    }
    if (auto* d = std::get_if<Delayed>(&res.body)) {
      Delayed fn = std::move(*d);
      pool_delayed(std::move(self), std::move(fn), what);
    } else {
      pool_stream(std::move(self), std::move(res), what);
    }
    return;
  }
  post_done(std::move(self), std::move(res), failed);
}

// Hands the app's response to the io thread (which keeps the last reference to the connection).
void Conn::post_done(std::shared_ptr<Conn> self, Response r, int failed) {
  auto call = [self = std::move(self), r = std::make_shared<Response>(std::move(r)), failed] {
    self->on_pooled_done(std::move(*r), failed);
  };
  t_.mailbox->post(call);
}

void Conn::on_pooled_done(Response r, int failed) {
  if (phase_ == Phase::closed) {
    // The client went while the app ran: the env goes now.
    drop_env();
    return;
  }
  after_app(std::move(r), failed);
  if (phase_ == Phase::reading) process();
}

// A Responder for a response finished from the pool thread: the io thread learns first (the mailbox keeps
// the order of posts), so that it waits for the answer as for any delayed response.
std::shared_ptr<ResponderImpl> Conn::pool_responder(const std::shared_ptr<Conn>& self) {
  std::weak_ptr<RequestKeeper> keeper;
  auto responder = make_responder(self, t_.mailbox, sh_.opt.send_timeout, keeper);
  auto call = [self, keeper] { self->on_pooled_delayed(keeper); };
  t_.mailbox->post(call);
  return responder;
}

void Conn::on_pooled_delayed(std::weak_ptr<RequestKeeper> keeper) {
  keeper_ = std::move(keeper);
  if (phase_ == Phase::closed) {
    drop_env();  // handed to the Responder while the response is not complete (APP-4)
    return;
  }
  if (link_.hijacked) {
    after_app(Response{}, 0);
    return;
  }
  phase_ = Phase::delayed;
  self_hold_ = shared_from_this();
}

void Conn::pool_delayed(std::shared_ptr<Conn> self, Delayed fn, const std::string& what) {
  auto responder = pool_responder(self);
  try {
    fn(Responder(std::move(responder)));
  } catch (const std::exception& e) {
    // The responder's destructor answers 500 when it was not answered.
    sh_.errors.write("csgi: the delayed response's callable threw: " + std::string(e.what()) + " (\"" + what + "\")");
  } catch (...) {
    sh_.errors.write("csgi: the delayed response's callable threw a non-standard exception (\"" + what + "\")");
  }
  release_on_io(std::move(self));
}

// Drops the pool thread's reference on the io thread, which may hold the last one (a connection is only
// destroyed there). Nothing of this connection may be touched after this.
void Conn::release_on_io(std::shared_ptr<Conn> self) {
  auto call = [self = std::move(self)]() mutable { self.reset(); };
  t_.mailbox->post(call);
}

namespace {
// The trailers() of a pull stream that ended (RES-15); one that throws is logged and none are sent.
Headers pool_trailers(Shared& sh, Stream& stream, const std::string& what) {
  std::string error;
  Headers trailers = ended_stream_trailers(stream, error);
  if (!error.empty()) sh.errors.write("csgi: " + error + " (\"" + what + "\")");
  return trailers;
}
}  // namespace

// A pull stream's next() is app code that may block: it is pulled here and written through a Writer,
// whose back-pressure holds this thread while the client is slow. The head waits for the first non-empty
// chunk (ADP-5): an exception before it is a 500.
void Conn::pool_stream(std::shared_ptr<Conn> self, Response res, const std::string& what) {
  StreamPtr stream = std::move(std::get<StreamPtr>(res.body));
  int status = res.status < 100 || res.status > 999 ? 500 : res.status;
  std::string chunk;
  int first = stream && !req_.head && !status_has_no_body(status) ? pool_first_chunk(*stream, chunk, what) : 0;
  bool pulled = stream && !req_.head && !status_has_no_body(status);
  if (pulled && first == 0 && !req_.http10 && !res.headers.has("content-length")) {
    // Trailers-only: an empty body through a Writer, which sends them after it (ADP-17).
    Headers trailers = pool_trailers(sh_, *stream, what);
    if (!trailers.empty()) {
      close_pool_stream(stream);
      WriterPtr w = Responder(pool_responder(self)).start(status, std::move(res.headers));
      w->set_trailers(std::move(trailers));
      w->close();
      w.reset();
      return release_on_io(std::move(self));
    }
  }
  if (first <= 0) {
    close_pool_stream(stream);
    post_done(std::move(self),
              first < 0 ? Response::error(500) : Response{status, std::move(res.headers), std::string()}, 0);
    return;
  }
  WriterPtr w = Responder(pool_responder(self)).start(status, std::move(res.headers));
  bool complete = pool_pump(*stream, *w, chunk, what);
  close_pool_stream(stream);
  // Unless complete, the Writer dropped without close() ends the connection (an incomplete body).
  if (complete) w->close();
  w.reset();
  release_on_io(std::move(self));
}

// The stream's first non-empty chunk: 1 with it in `chunk`, 0 at the end, -1 on an exception (logged).
int Conn::pool_first_chunk(Stream& stream, std::string& chunk, const std::string& what) {
  try {
    bool more;
    do more = stream.next(chunk);
    while (more && chunk.empty());
    return more ? 1 : 0;
  } catch (const std::exception& e) {
    sh_.errors.write("csgi: 500: the response stream's first next() threw: " + std::string(e.what()) + " (\"" + what +
                     "\")");
  } catch (...) {
    sh_.errors.write("csgi: 500: the response stream's first next() threw a non-standard exception (\"" + what + "\")");
  }
  return -1;
}

// Writes `chunk`, then the stream's next ones, until the end or the Writer refuses (the client is gone):
// true, or false when next() threw (logged) after the head was sent.
bool Conn::pool_pump(Stream& stream, Writer& w, std::string& chunk, const std::string& what) {
  try {
    while (w.write(chunk)) {
      bool more;
      do more = stream.next(chunk);
      while (more && chunk.empty());
      if (!more) {
        w.set_trailers(pool_trailers(sh_, stream, what));
        break;
      }
    }
    return true;
  } catch (const std::exception& e) {
    sh_.errors.write("csgi: the response stream's next() threw after the head was sent: " + std::string(e.what()) +
                     " (\"" + what + "\")");
  } catch (...) {
    sh_.errors.write("csgi: the response stream's next() threw after the head was sent (\"" + what + "\")");
  }
  return false;
}

void Conn::close_pool_stream(const StreamPtr& stream) noexcept {
  try {
    if (stream) stream->close();
  } catch (const std::exception& e) {
    try {
      sh_.errors.write(std::string("csgi: response stream close failed: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

// Waits until the io thread has done the call; false (the call abandoned) when the io thread stopped.
bool Conn::wait_call(PoolCall& c) {
  std::unique_lock lock(c.mu);
  while (!c.cv.wait_for(lock, exit_check, [&] { return c.done; })) {
    if (t_.exited.load(std::memory_order_acquire)) {
      c.abandoned = true;
      return false;
    }
  }
  return true;
}

// Runs `f` on the io thread while this thread waits. Nothing when the io thread has stopped.
void Conn::run_on_io(const std::function<void()>& f) {
  auto c = std::make_shared<PoolCall>();
  auto call = [self = shared_from_this(), c, &f] {
    std::lock_guard lock(c->mu);
    if (c->abandoned) return;
    try {
      f();
    } catch (...) {
    }
    c->done = true;
    c->cv.notify_all();
  };
  if (t_.mailbox->post(call)) wait_call(*c);
}

// A deadline passed while the app runs on the pool: the client stopped reading an interim response
// (closed). Otherwise the app may take its time.
void Conn::pooled_timeout() {
  if (out_.pending()) close_now();
}

// The pool thread running this connection's app call is frozen (a fault, a request timeout) and keeps
// its reference to the connection for good; the io thread, which runs on, answers in the app's place.
std::string abandon_pooled(Conn& c, int status, std::atomic<bool>& answered) noexcept {
  std::string what;
  try {
    if (c.env_)
      what = std::string(c.env_->get(keys::REQUEST_METHOD)) + " " + std::string(c.env_->get(keys::REQUEST_URI));
    Conn* conn = &c;
    auto answer = [conn, status, &answered] {
      conn->on_pooled_done(Response::error(status), status);
      answered.store(true);
    };
    c.t_.mailbox->post(answer);
  } catch (...) {
  }
  return what;
}

}  // namespace csgi::standalone::detail
