// APP-4: the env lives until the response is complete, and no longer. An adapter here keeps the env on
// the heap, goes on with its own work once the delayed callable returned, and frees the env the moment
// the response is complete; the apps answer later from their own threads. Middleware that read the env
// when the answer comes (Cascade, ErrorDocument, ConditionalGet) read it in time; one that used it after
// the response completed would be a use after free (ASan in make test-asan).
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/middleware/cascade.hpp"
#include "csgi/middleware/conditional_get.hpp"
#include "csgi/middleware/error_document.hpp"

using namespace csgi;

namespace {

struct Result {
  int status = 0;
  Headers headers;
  std::string body;
};

/// One request's env, input and error stream, freed together.
struct Exchange {
  Env env;
  StringInput input;
  StringErrorStream errors;
};

/// Frees the exchange as soon as the response is complete: respond() has handled it, or the writer is
/// closed or dropped, or the responder dropped unanswered.
struct Completion {
  std::mutex mu;
  std::unique_ptr<Exchange> ex;
  std::promise<Result> done;
  Result res;
  bool finished = false;
  void finish() {
    std::lock_guard lock(mu);
    if (std::exchange(finished, true)) return;
    ex.reset();
    done.set_value(std::move(res));
  }
};

class CollectWriter final : public Writer {
public:
  explicit CollectWriter(std::shared_ptr<Completion> c) : c_(std::move(c)) {}
  ~CollectWriter() override { c_->finish(); }
  bool write(std::string_view chunk) override {
    c_->res.body += chunk;
    return true;
  }
  void close() override { c_->finish(); }

private:
  std::shared_ptr<Completion> c_;
};

class FreeingResponder final : public ResponderImpl {
public:
  explicit FreeingResponder(std::shared_ptr<Completion> c) : c_(std::move(c)) {}
  ~FreeingResponder() override {
    if (!answered_) c_->finish();
  }
  void respond(Response r) override {
    answered_ = true;
    c_->res.status = r.status;
    c_->res.headers = std::move(r.headers);
    StreamPtr s = body_stream(std::move(r.body));
    std::string chunk;
    while (s && s->next(chunk)) c_->res.body += chunk;
    if (s) s->close();
    c_->finish();
  }
  WriterPtr start(int status, Headers headers) override {
    answered_ = true;
    c_->res.status = status;
    c_->res.headers = std::move(headers);
    return std::make_shared<CollectWriter>(c_);
  }

private:
  std::shared_ptr<Completion> c_;
  bool answered_ = false;
};

/// Serves one GET through `app` as an APP-4 adapter does, at the shortest lifetime the rule allows.
Result serve(const App& app, std::string path, Headers request_headers = {}) {
  auto c = std::make_shared<Completion>();
  c->ex = std::make_unique<Exchange>();
  Env& env = c->ex->env;
  env.set(keys::REQUEST_METHOD, "GET");
  env.set(keys::SCRIPT_NAME, "");
  env.set(keys::PATH_INFO, path);
  env.set(keys::QUERY_STRING, "");
  env.set(keys::REQUEST_URI, path);
  for (const auto& h : request_headers) env.set("HTTP_" + h.name, h.value);
  env.set_object<Input>(keys::input, &c->ex->input);
  env.set_object<ErrorStream>(keys::errors, &c->ex->errors);
  env.set_bool(keys::x::input_buffered, true);
  auto done = c->done.get_future();
  Response r = app(env);
  REQUIRE(r.is_delayed());
  std::get<Delayed>(r.body)(Responder(std::make_shared<FreeingResponder>(c)));
  r = Response();  // the adapter's own work is done; from here only the app's threads hold the responder
  REQUIRE(done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return done.get();
}

/// Answers from a thread of its own, after the adapter has gone on, reading the env at that time.
struct LateApps {
  std::mutex mu;
  std::vector<std::thread> threads;
  ~LateApps() {
    for (auto& t : threads) t.join();
  }
  App late(int status, Headers headers = {}, bool writer = false) {
    return [this, status, headers, writer](Env& env) {
      return Response::delayed([this, &env, status, headers, writer](Responder r) {
        std::lock_guard lock(mu);
        threads.emplace_back([&env, r, status, headers, writer] {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          std::string body = "late " + std::string(env.get(keys::PATH_INFO));
          if (!writer) return r.respond(Response{status, headers, body});
          auto w = r.start(status, headers);
          w->write(body);
          w->close();
        });
      });
    };
  }
};

App echo_path = [](Env& env) { return Response::text(200, "next " + std::string(env.get(keys::PATH_INFO))); };

}  // namespace

TEST_CASE("APP-4: Cascade runs the next app on the env when a delayed 404 answers", "[APP-4][cascade]") {
  for (bool writer : {false, true}) {
    LateApps apps;
    App app = mw::Cascade(std::vector<App>{apps.late(404, {}, writer), echo_path});
    Result r = serve(app, "/c");
    CHECK(r.status == 200);
    CHECK(r.body == "next /c");
  }
}

TEST_CASE("APP-4: ErrorDocument's sub-request reads the env when a delayed 404 answers", "[APP-4][error_document]") {
  for (bool writer : {false, true}) {
    LateApps apps;
    App inner = [&apps, writer](Env& env) {
      if (env.get(keys::PATH_INFO) == "/errors/404") return Response::text(200, "the 404 page");
      return apps.late(404, {}, writer)(env);
    };
    mw::ErrorDocumentOptions o;
    o.subrequests[404] = "/errors/404";
    Result r = serve(wrap<mw::ErrorDocument>(inner, o), "/missing");
    CHECK(r.status == 404);
    CHECK(r.body == "the 404 page");
  }
}

TEST_CASE("APP-4: ConditionalGet reads the request's validators when a delayed 200 answers", "[APP-4][conditional_get]") {
  for (bool writer : {false, true}) {
    LateApps apps;
    App app = wrap<mw::ConditionalGet>(apps.late(200, {{"ETag", "\"v1\""}}, writer));
    Result hit = serve(app, "/e", {{"IF_NONE_MATCH", "\"v1\""}});
    CHECK(hit.status == 304);
    CHECK(hit.body.empty());
    Result miss = serve(app, "/e", {{"IF_NONE_MATCH", "\"v0\""}});
    CHECK(miss.status == 200);
    CHECK(miss.body == "late /e");
  }
}

TEST_CASE("APP-4: a stack of them, every layer answered late", "[APP-4]") {
  LateApps apps;
  App stack = wrap<mw::ConditionalGet>(
      mw::Cascade(std::vector<App>{apps.late(404), apps.late(200, {{"ETag", "\"s\""}}, true)}));
  Result r = serve(stack, "/s", {{"IF_NONE_MATCH", "\"s\""}});
  CHECK(r.status == 304);
}
