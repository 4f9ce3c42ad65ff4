// The app on the pool (--app-threads N, app_pool.hpp): the io thread posts the request, the app runs on a
// pool thread, and what the app asks of the connection (csgix.informational, csgix.io) is done by the io
// thread while the app's thread waits. The pool thread touches only the env, the request body (complete
// before the app runs) and what it gets back from the io thread (see h1_conn.hpp).
#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

namespace csgi::standalone::detail {

// On the io thread: the env is complete; the app runs on the pool. Until it returns, the env and the
// buffer its views point into stay (close_now keeps them).
void H1Conn::run_in_pool() {
  phase_ = Phase::pooled;
  Env* env = env_.get();
  auto job = [self = shared_from_this(), env]() mutable {
    H1Conn* c = self.get();
    c->pool_job(std::move(self), *env);
  };
  if (!sh_.pool->post(std::move(job))) {
    phase_ = Phase::reading;
    req_.keep_alive = false;
    handle(Response::error(503, "server stopping"));
  }
}

// On a pool thread.
void H1Conn::pool_job(std::shared_ptr<H1Conn> self, Env& env) {
  int failed = 0;
  Response res;
  {
    AppScope scope(pool_fault_slot, &tr_);
    res = call_app(sh_, env, failed);
  }
  if (!answer_on_pool(res, req_.head, !req_.http10, env, sh_.errors, [&] { return pool_responder(self); }))
    return post_done(std::move(self), std::move(res), failed);
  release_on_io(std::move(self));
}

// Hands the app's response to the io thread (which keeps the last reference to the connection).
void H1Conn::post_done(std::shared_ptr<H1Conn> self, Response r, int failed) {
  auto call = [self = std::move(self), r = std::make_shared<Response>(std::move(r)), failed] {
    self->on_pooled_done(std::move(*r), failed);
  };
  t_.mailbox->post(call);
}

void H1Conn::on_pooled_done(Response r, int failed) {
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
std::shared_ptr<ResponderImpl> H1Conn::pool_responder(const std::shared_ptr<H1Conn>& self) {
  auto keeper = std::make_shared<RequestKeeper>();
  auto responder = delayed_responder(self, keeper);
  auto call = [self, k = std::weak_ptr<RequestKeeper>(keeper)] { self->on_pooled_delayed(k); };
  t_.mailbox->post(call);
  return responder;
}

void H1Conn::on_pooled_delayed(std::weak_ptr<RequestKeeper> keeper) {
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

// Drops the pool thread's reference on the io thread, which may hold the last one (a connection is only
// destroyed there). Nothing of this connection may be touched after this.
void H1Conn::release_on_io(std::shared_ptr<H1Conn> self) {
  auto call = [self = std::move(self)]() mutable { self.reset(); };
  t_.mailbox->post(call);
}

// Runs `f` on the io thread while this thread waits. Nothing when the io thread has stopped. The
// connection is kept until the wait ends (`f` may end it: a hijack of a delayed response), and its
// last reference is then dropped on the io thread.
void H1Conn::run_on_io(const std::function<void()>& f) {
  auto self = shared_from_this();
  call_on_io(*t_.mailbox, t_.exited, [&f] {
    f();
    return true;
  });
  release_on_io(std::move(self));
}

// A deadline passed while the app runs on the pool: the client stopped reading an interim response
// (closed). Otherwise the app may take its time.
void H1Conn::pooled_timeout() {
  if (out_.pending()) close_now();
}

// The pool thread running this connection's app call is frozen (a fault, a request timeout) and keeps
// its reference to the connection for good; the io thread, which runs on, answers in the app's place.
std::string H1Conn::abandon_pooled(int status, std::atomic<bool>& answered) noexcept {
  std::string what;
  try {
    if (env_) what = std::string(env_->get(keys::REQUEST_METHOD)) + " " + std::string(env_->get(keys::REQUEST_URI));
    auto answer = [this, status, &answered] {
      on_pooled_done(Response::error(status), status);
      answered.store(true);
    };
    t_.mailbox->post(answer);
  } catch (...) {
  }
  return what;
}

}  // namespace csgi::standalone::detail
