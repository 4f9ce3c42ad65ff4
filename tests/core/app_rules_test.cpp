// The spec's rules for apps, middleware, extensions and app libraries (spec/csgi.md §1, §3, §6, §8) that
// Lint cannot see from inside one request. Each test names the rule it checks.
#include "csgi/core/app.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/core/builder.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/core/url_map.hpp"

using namespace csgi;

namespace {

Response plain(Env&) { return Response::text(200, "plain"); }

struct Hello {
  Response operator()(Env& env) const { return Response::text(200, "hello " + std::string(env.get(keys::PATH_INFO))); }
};

/// A complete env as an adapter builds it, for calling apps without the test client.
struct AdapterEnv {
  Env env;
  StringInput input;
  StringErrorStream errors;
  explicit AdapterEnv(std::string_view target) {
    populate_env(env, {"GET", target}, {});
    env.set_object<Input>(keys::input, &input);
    env.set_object<ErrorStream>(keys::errors, &errors);
    for (auto k : {keys::multithread, keys::multiprocess, keys::run_once, keys::nonblocking}) env.set_bool(k, false);
    env.set_bool(keys::streaming, true);
  }
};

/// A writer standing for a connection: records what reaches it; `gone` makes write() report the client left.
struct ConnWriter final : Writer {
  std::string body;
  bool gone = false;
  int closes = 0;
  bool write(std::string_view c) override {
    if (gone) return false;
    body.append(c);
    return true;
  }
  void close() override { ++closes; }
};

struct ConnResponder final : ResponderImpl {
  std::shared_ptr<ConnWriter> writer = std::make_shared<ConnWriter>();
  int status = 0;
  void respond(Response r) override { status = r.status; }
  WriterPtr start(int s, Headers) override {
    status = s;
    return writer;
  }
};

}  // namespace

static_assert(Middleware<Lint>, "Lint is a middleware: next app first, callable with Env&");

TEST_CASE("APP-1: any callable taking Env& and returning Response is an app", "[app_rules][APP-1]") {
  std::vector<App> apps = {plain, Hello{}, [](Env&) { return Response::text(201, "lambda"); },
                           wrap<Lint>(Hello{}), Builder().use<Lint>().run(plain).build()};
  std::vector<std::string> bodies;
  for (const App& app : apps) bodies.push_back(testing::call(app, "GET /x").body);
  CHECK(bodies == std::vector<std::string>{"plain", "hello /x", "lambda", "hello /x", "plain"});
  App thrower = [](Env&) -> Response { throw std::runtime_error("app failed"); };
  CHECK_THROWS_WITH(testing::call(Builder().use<Lint>().run(thrower).build(), "GET /"), "app failed");
}

TEST_CASE("APP-2: one stack serves concurrent requests of every body kind", "[app_rules][APP-2][MW-2]") {
  App app = [](Env& env) -> Response {
    std::string path(env.get(keys::PATH_INFO));
    std::string body = path + std::string(path.size() * 3, '.');
    Response r = Response::text(200, body);
    r.headers.add("Content-Length", std::to_string(body.size()));
    switch (path.size() % 3) {
      case 0: return r;
      case 1:
        r.body = make_stream([body, done = false]() mutable -> std::optional<std::string> {
          if (done) return std::nullopt;
          done = true;
          return body;
        });
        return r;
      default:
        return Response::delayed([body, headers = r.headers](Responder res) {
          auto w = res.start(200, headers);
          w->write(body.substr(0, body.size() / 2));
          w->write(body.substr(body.size() / 2));
          w->close();
        });
    }
  };
  App stack = Builder().use<Lint>().use<Lint>().run(app).build();
  std::atomic<int> good{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        std::string path = "/" + std::string(static_cast<std::size_t>(1 + (i + t) % 7), 'a' + t);
        try {
          auto res = testing::call(stack, "GET " + path);
          (res.body == path + std::string(path.size() * 3, '.') ? good : bad)++;
        } catch (...) {
          bad++;
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(good == 600);
}

TEST_CASE("MW-2: interleaved requests through one Lint keep their own checks", "[app_rules][MW-2]") {
  std::map<std::string, WriterPtr> writers;  // the app's writers, by path: the test drives the writes
  App app = [&writers](Env& env) {
    std::string path(env.get(keys::PATH_INFO));
    return Response::delayed([&writers, path](Responder r) {
      std::string length = path == "/long" ? "6" : "2";
      writers[path] = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", length}});
    });
  };
  Lint lint(app);
  AdapterEnv a("/long"), b("/short");
  Response ra = lint(a.env), rb = lint(b.env);
  auto ca = std::make_shared<ConnResponder>(), cb = std::make_shared<ConnResponder>();
  std::get<Delayed>(ra.body)(Responder(ca));
  std::get<Delayed>(rb.body)(Responder(cb));
  WriterPtr wa = writers["/long"], wb = writers["/short"];
  REQUIRE(wa);
  REQUIRE(wb);
  CHECK(wa->write("abc"));
  CHECK(wb->write("xy"));
  CHECK(wa->write("def"));
  CHECK_NOTHROW(wb->close());
  CHECK_NOTHROW(wa->close());
  CHECK(ca->writer->body == "abcdef");
  CHECK(cb->writer->body == "xy");
  // And a breach in one request is reported for that request only.
  AdapterEnv c("/short");
  Response rc = lint(c.env);
  auto cc = std::make_shared<ConnResponder>();
  std::get<Delayed>(rc.body)(Responder(cc));
  CHECK_THROWS_AS(writers["/short"]->write("too long"), LintError);
}

TEST_CASE("MW-1: on_response sees every kind, and passes kinds it need not read untouched", "[app_rules][MW-1]") {
  std::string path = "/tmp/csgi_app_rules_" + std::to_string(::getpid());
  { std::FILE* f = std::fopen(path.c_str(), "w"); std::fputs("file", f); std::fclose(f); }
  std::vector<int> seen;
  auto mark = [&](Response r) {
    return on_response(std::move(r), [&](Response& res) -> BodyFilter {
      seen.push_back(static_cast<int>(res.body.index()));
      res.headers.set("X-Seen", "1");
      return nullptr;
    });
  };
  Response file = Response::text(200, "");
  file.body = FileBody::open(path);
  Response out = mark(std::move(file));
  CHECK(std::holds_alternative<FileBody>(out.body));
  CHECK(out.headers.get("X-Seen") == "1");
  Response delayed = mark(Response::delayed([](Responder r) { r.respond(Response::text(200, "later")); }));
  CHECK(delayed.is_delayed());
  auto res = testing::drain(std::move(delayed));
  CHECK(res.body == "later");
  CHECK(res.header("X-Seen") == "1");
  // And Lint, a middleware, leaves a file a file.
  auto linted = testing::call(wrap<Lint>([&](Env&) {
                                Response r = Response::text(200, "");
                                r.body = FileBody::open(path);
                                return r;
                              }),
                              "GET /");
  CHECK(linted.file);
  CHECK(linted.body == "file");
  CHECK(seen.size() == 2);
  std::remove(path.c_str());
}

TEST_CASE("MW-3: UrlMap restores SCRIPT_NAME/PATH_INFO, also when the app throws", "[app_rules][MW-3]") {
  UrlMap map;
  map.map("/api", [](Env& env) -> Response {
    CHECK(env.get(keys::SCRIPT_NAME) == "/base/api");
    CHECK(env.get(keys::PATH_INFO) == "/v1");
    throw std::runtime_error("inner failure");
  });
  AdapterEnv a("/base/api/v1");
  a.env.set(keys::SCRIPT_NAME, "/base");
  a.env.set(keys::PATH_INFO, "/api/v1");
  CHECK_THROWS_WITH(map(a.env), "inner failure");
  CHECK(a.env.get(keys::SCRIPT_NAME) == "/base");
  CHECK(a.env.get(keys::PATH_INFO) == "/api/v1");
  // Lint around a map sees nothing changed.
  map.map("/ok", plain);
  testing::Options o;
  o.script_name = "/base";
  CHECK(testing::call(wrap<Lint>([&map](Env& env) { return map(env); }), "GET /base/ok/x", {}, "", o).body == "plain");
}

TEST_CASE("MW-4: the next app is the first argument; bad options throw from the constructor", "[app_rules][MW-4]") {
  CHECK_THROWS_AS(Lint(App{}), std::invalid_argument);
  CHECK_THROWS_AS(wrap<Lint>(App{}), std::invalid_argument);
  UrlMap map;
  CHECK_THROWS_AS(map.map("no-slash", plain), std::invalid_argument);
  CHECK_THROWS_AS(Builder().use<Lint>().build(), std::logic_error);
}

TEST_CASE("MW-6: wrappers pass the client-gone signal and close what they wrap", "[app_rules][MW-6]") {
  App app = [](Env&) {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      CHECK(w->write("one"));
      CHECK_FALSE(w->write("two"));  // the client has gone by now
      w->close();
    });
  };
  App filtered = [app](Env& env) {
    return on_response(app(env), [](Response&) -> BodyFilter {
      return [](std::string_view c, bool) { return std::string(c); };
    });
  };
  auto conn = std::make_shared<ConnResponder>();
  struct GoneAfterOne final : Writer {
    std::shared_ptr<ConnWriter> inner;
    bool write(std::string_view c) override {
      bool ok = inner->write(c);
      inner->gone = true;
      return ok;
    }
    void close() override { inner->close(); }
  };
  struct Resp final : ResponderImpl {
    std::shared_ptr<ConnWriter> w;
    void respond(Response) override {}
    WriterPtr start(int, Headers) override {
      auto g = std::make_shared<GoneAfterOne>();
      g->inner = w;
      return g;
    }
  };
  auto resp = std::make_shared<Resp>();
  resp->w = conn->writer;
  AdapterEnv a("/");
  Response r = wrap<Lint>(filtered)(a.env);
  std::get<Delayed>(r.body)(Responder(resp));
  CHECK(conn->writer->body == "one");
  CHECK(conn->writer->closes == 1);

  bool closed = false;
  Response s = Response::text(200, "");
  s.body = make_stream([]() -> std::optional<std::string> { return std::string("x"); }, [&] { closed = true; });
  Response f = on_response(std::move(s), [](Response&) -> BodyFilter {
    return [](std::string_view c, bool) { return std::string(c); };
  });
  StreamPtr st = std::get<StreamPtr>(f.body);
  std::string chunk;
  CHECK(st->next(chunk));
  st->close();  // the adapter stops early
  CHECK(closed);
}

TEST_CASE("EXT-4: cleanup handlers run in order, isolated from each other's failures", "[app_rules][EXT-4]") {
  CleanupHandlers handlers;
  std::vector<int> ran;
  handlers.add([&](Env&) { ran.push_back(1); });
  handlers.add([&](Env&) {
    ran.push_back(2);
    handlers.add([&](Env&) { ran.push_back(4); });
    throw std::runtime_error("cleanup broke");
  });
  handlers.add([&](Env&) { ran.push_back(3); });
  CHECK(handlers.size() == 3);
  AdapterEnv a("/");
  handlers.run(a.env);
  CHECK(ran == std::vector<int>{1, 2, 3, 4});
  CHECK(a.errors.text().find("cleanup broke") != std::string::npos);
  CHECK(handlers.size() == 0);
  handlers.run(a.env);
  CHECK(ran.size() == 4);
}

TEST_CASE("EXT-4: what the adapter reports as sent is there for the handlers, then forgotten", "[app_rules][EXT-4]") {
  CleanupHandlers handlers;
  AdapterEnv a("/");
  std::optional<CleanupHandlers::Sent> seen;
  handlers.report_sent({200, 1});  // no handler waits: nothing kept
  CHECK_FALSE(handlers.sent());
  handlers.add([&](Env&) { seen = handlers.sent(); });
  handlers.report_sent({206, 4096});
  handlers.run(a.env);
  REQUIRE(seen);
  CHECK(seen->status == 206);
  CHECK(seen->body_bytes == 4096);
  CHECK_FALSE(handlers.sent());
}

TEST_CASE("EXT-6: typed values under a middleware's own namespace", "[app_rules][EXT-6]") {
  struct Quota {
    int left;
  };
  AdapterEnv a("/");
  a.env.set_object("ratelimit.quota", std::make_shared<Quota>(Quota{7}));
  a.env.set_int("ratelimit.window", 60);
  a.env.set_bool("ratelimit.enabled", true);
  REQUIRE(a.env.object<Quota>("ratelimit.quota"));
  CHECK(a.env.object<Quota>("ratelimit.quota")->left == 7);
  CHECK(a.env.object<Input>("ratelimit.quota") == nullptr);  // another type: nullptr, never a wrong cast
  CHECK(a.env.object<Quota>("ratelimit.missing") == nullptr);
  CHECK(a.env.get("ratelimit.quota", "fallback") == "fallback");
  CHECK(a.env.find("ratelimit.window")->integer() == 60);
  CHECK(a.env.flag("ratelimit.enabled"));
  CHECK_NOTHROW(Lint::check_env(a.env));
}

TEST_CASE("LIB-1: the loader accepts only libraries exporting csgi_app_v1", "[app_rules][LIB-1]") {
  CHECK_THROWS_AS(load_app("/nonexistent/dir/libapp.so"), std::runtime_error);
  Dl_info info{};
  double (*fn)(double) = &::cos;
  REQUIRE(::dladdr(reinterpret_cast<void*>(fn), &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  std::string lib = info.dli_fname;
  INFO(lib);
  REQUIRE(lib.find(".so") != std::string::npos);
  try {
    load_app(lib);
    FAIL("a library without csgi_app_v1 was accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("csgi_app_v1") != std::string::npos);
  }
}
