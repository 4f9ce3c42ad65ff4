#include "csgi/core/test_client.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "csgi/core/app_failure.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/request_env.hpp"

namespace csgi::testing {

namespace {

using std::chrono::milliseconds;

/// What a delayed response delivers, from whichever thread answers it.
struct Collected {
  std::mutex mu;
  std::condition_variable cv;
  TestResponse res;
  bool answered = false;
  bool responder_gone = false;  // every Responder copy is gone
  bool writer_gone = false;     // the Writer was dropped (closed or not)
  bool responded = false;       // respond() has delivered its whole response
};

class CollectWriter final : public Writer {
public:
  explicit CollectWriter(std::shared_ptr<Collected> c) : c_(std::move(c)) {}
  ~CollectWriter() override {
    std::lock_guard lock(c_->mu);
    c_->writer_gone = true;
    c_->cv.notify_all();
  }
  bool write(std::string_view chunk) override {
    std::lock_guard lock(c_->mu);
    if (c_->res.closed) return false;
    c_->res.body.append(chunk);
    return true;
  }
  void close() override {
    std::lock_guard lock(c_->mu);
    c_->res.closed = true;
    c_->cv.notify_all();
  }
  void set_trailers(Headers trailers) override {
    std::lock_guard lock(c_->mu);
    c_->res.trailers = std::move(trailers);
  }

private:
  std::shared_ptr<Collected> c_;
};

/// Answers an exception from the app or a delayed callable before it answered; empty: rethrow it.
using OnError = std::function<Response()>;

void drain_into(Response r, TestResponse& out, milliseconds timeout, const OnError& on_error);

class CollectResponder final : public ResponderImpl {
public:
  CollectResponder(std::shared_ptr<Collected> c, milliseconds timeout) : c_(std::move(c)), timeout_(timeout) {}
  ~CollectResponder() override {
    std::lock_guard lock(c_->mu);
    c_->responder_gone = true;
    c_->cv.notify_all();
  }
  void respond(Response r) override {
    claim();
    TestResponse got;
    drain_into(std::move(r), got, timeout_, {});  // outside the lock: a stream may take its time
    std::lock_guard lock(c_->mu);
    c_->res = std::move(got);
    c_->responded = true;
    c_->cv.notify_all();
  }
  WriterPtr start(int status, Headers headers) override {
    claim();
    std::lock_guard lock(c_->mu);
    c_->res.status = status;
    c_->res.headers = std::move(headers);
    c_->res.streamed = true;
    c_->cv.notify_all();
    return std::make_shared<CollectWriter>(c_);
  }

private:
  void claim() {
    std::lock_guard lock(c_->mu);
    if (std::exchange(c_->answered, true)) throw std::logic_error("responder used twice");
  }
  std::shared_ptr<Collected> c_;
  milliseconds timeout_;
};

std::string seconds_text(milliseconds t) {
  std::string s = std::to_string(t.count() / 1000.0);
  return s.substr(0, s.find('.') + 2) + " s";
}

/// Calls a delayed response's callable and waits, up to `timeout`, until it is answered and its body is
/// complete: respond() done, or start()'s writer closed or dropped. It may be answered from any thread.
TestResponse collect_delayed(const Delayed& d, milliseconds timeout, const OnError& on_error) {
  auto c = std::make_shared<Collected>();
  try {
    d(Responder(std::make_shared<CollectResponder>(c, timeout)));
  } catch (...) {
    bool answered = false;
    {
      std::lock_guard lock(c->mu);
      answered = c->answered;
    }
    if (answered || !on_error) throw;
    TestResponse out;
    drain_into(on_error(), out, timeout, {});
    return out;
  }
  std::unique_lock lock(c->mu);
  // The response is complete when respond() returned or the writer was closed or dropped; it can never
  // be answered once every Responder copy is gone unanswered.
  auto done = [&] { return c->responded || c->res.closed || c->writer_gone || (!c->answered && c->responder_gone); };
  if (!c->cv.wait_for(lock, timeout, done)) {
    throw std::runtime_error(c->answered ? "delayed response: the writer was neither closed nor dropped within " +
                                               seconds_text(timeout)
                                         : "delayed response not answered within " + seconds_text(timeout) +
                                               " (the Responder is still held)");
  }
  if (!c->answered) throw std::logic_error("delayed response never answered (every Responder dropped unanswered)");
  return std::move(c->res);
}

void drain_into(Response r, TestResponse& out, milliseconds timeout, const OnError& on_error) {
  out.status = r.status;
  out.headers = std::move(r.headers);
  if (auto* d = std::get_if<Delayed>(&r.body)) {
    std::string errors = std::move(out.errors);
    out = collect_delayed(*d, timeout, on_error);
    out.errors = std::move(errors);
    return;
  }
  if (auto* s = std::get_if<std::string>(&r.body)) {
    out.body = std::move(*s);
    return;
  }
  if (auto* b = std::get_if<SharedBytes>(&r.body)) {
    out.body = *b ? **b : std::string();
    return;
  }
  out.file = std::holds_alternative<FileBody>(r.body);
  out.streamed = !out.file;
  StreamPtr st = body_stream(std::move(r.body));
  if (!st) return;
  std::string chunk;
  try {
    while (st->next(chunk)) out.body += chunk;
    out.trailers = st->trailers();
  } catch (...) {
    st->close();
    throw;
  }
  st->close();
  out.closed = true;
}

}  // namespace

TestResponse drain(Response res, std::chrono::milliseconds delayed_timeout) {
  TestResponse out;
  drain_into(std::move(res), out, delayed_timeout, {});
  return out;
}

TestResponse call(const App& app, std::string_view request, std::vector<std::pair<std::string, std::string>> headers,
                  std::string body, const Options& options) {
  std::string line(request);
  auto sp = line.find(' ');
  if (sp == std::string::npos) throw std::invalid_argument("request must be \"METHOD /target\"");
  std::string method = line.substr(0, sp);
  std::string target = line.substr(sp + 1);
  std::string protocol = "HTTP/1.1";
  if (auto sp2 = target.find(' '); sp2 != std::string::npos) {
    protocol = target.substr(sp2 + 1);
    target.resize(sp2);
  }
  Env env;
  RequestHead head{method, target, protocol};
  ConnectionInfo conn{options.server_name, options.server_port, options.remote_addr, "40000", options.url_scheme,
                  options.script_name};
  populate_env(env, head, conn);
  bool has_length = false;
  for (auto& [n, v] : headers) {
    add_header(env, n, v);
    if (iequals(n, "content-length")) has_length = true;
  }
  std::string length = std::to_string(body.size());
  if (!body.empty() && !has_length) env.set_view(keys::CONTENT_LENGTH, length);
  StringInput input(std::move(body));
  StringErrorStream errors;
  env.set_object<Input>(keys::input, &input);
  env.set_object<ErrorStream>(keys::errors, &errors);
  set_server_flags(env, {});
  env.set_bool(keys::x::input_buffered, true);
  if (options.setup) options.setup(env);
  OnError on_error;
  if (!options.rethrow)
    on_error = [&env] { return app_failure_response(env, std::current_exception()); };
  Response r;
  try {
    r = app(env);
  } catch (...) {
    if (!on_error) throw;
    r = on_error();
  }
  if (options.inspect) options.inspect(env);
  TestResponse out;
  drain_into(std::move(r), out, options.delayed_timeout, on_error);
  out.errors = errors.text();
  return out;
}

}  // namespace csgi::testing
