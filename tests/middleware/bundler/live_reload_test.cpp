// The bundler's live-reload channel: <mount>/~live as Server-Sent Events fed by the inotify watcher.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "bundler_fixture.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/middleware/bundler/bundler.hpp"

using csgi::mw::Bundler;
using csgi::mw::BundlerOptions;
using csgi::testing::call;
using namespace bundler_test;

namespace {

// A client of one event stream: what the writer received, and whether that client is still there.
struct Client : csgi::Writer {
  std::mutex mu;
  std::string got;
  bool gone = false;
  int writes = 0;
  bool write(std::string_view chunk) override {
    std::lock_guard lock(mu);
    if (gone) return false;
    got.append(chunk);
    ++writes;
    return true;
  }
  void close() override {}
  std::string text() {
    std::lock_guard lock(mu);
    return got;
  }
};

struct Capture : csgi::ResponderImpl {
  int status = 0;
  csgi::Headers headers;
  std::shared_ptr<Client> client = std::make_shared<Client>();
  void respond(csgi::Response r) override { status = r.status; }
  csgi::WriterPtr start(int s, csgi::Headers h) override {
    status = s;
    headers = std::move(h);
    return client;
  }
};

// Opens <mount>/~live on `b` and returns the stream's client side.
std::shared_ptr<Capture> open_stream(Bundler& b) {
  csgi::Delayed d;
  csgi::App app = [&](csgi::Env& env) {
    csgi::Response r = b(env);
    REQUIRE(r.is_delayed());
    d = std::get<csgi::Delayed>(r.body);
    return csgi::Response::text(200, "");
  };
  call(app, "GET /bundle/~live");
  auto cap = std::make_shared<Capture>();
  d(csgi::Responder(cap));
  return cap;
}

}  // namespace

TEST_CASE("bundler live reload: an edit is an event on every open stream, also before any build", "[bundler][live]") {
  Tree t;
  t.write("index.js", "require('./app/a');");
  t.write("app/a.js", "module.exports = 1;");
  t.write("node_modules/p/index.js", "");
  BundlerOptions o;
  o.live_reload = true;
  Bundler b(csgi::App([](csgi::Env&) { return csgi::Response::text(200, "site"); }), t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  // The loader, then the follower (live.js), which starts itself.
  std::string loader = call(app, "GET /bundle/require.js").body;
  CHECK_THAT(loader, Catch::StartsWith(std::string(Bundler::loader_source())));
  CHECK_THAT(loader, Catch::Contains("csgiRequire.live = ") && Catch::Contains("new EventSource("));
  CHECK_THAT(loader, Catch::EndsWith("csgiRequire.live();\n"));

  // Nothing was bundled in this process: the stream itself watches the tree (a prefork worker that
  // served only the stream).
  auto first = open_stream(b), second = open_stream(b);
  CHECK(first->status == 200);
  CHECK(first->headers.get("Content-Type") == "text/event-stream");
  CHECK(first->headers.get("Cache-Control") == "no-store");
  CHECK_THAT(first->client->text(), Catch::StartsWith("retry: 1000\n"));
  t.write("app/a.js", "module.exports = 2;");
  CHECK(eventually([&] { return first->client->text().find("event: change\ndata: ") != std::string::npos; }));
  CHECK(eventually([&] { return second->client->text().find("event: change\ndata: ") != std::string::npos; }));

  // A client that went away is dropped at the next event; the other one goes on.
  {
    std::lock_guard lock(first->client->mu);
    first->client->gone = true;
  }
  int before = 0;
  {
    std::lock_guard lock(second->client->mu);
    before = second->client->writes;
  }
  t.write("app/b.js", "module.exports = 3;");  // an addition
  CHECK(eventually([&] {
    std::lock_guard lock(second->client->mu);
    return second->client->writes > before;
  }));
  CHECK(eventually([&] { return first->client.use_count() == 1; }));  // the hub let it go
  // The edit is seen by the bundles too.
  CHECK_THAT(call(app, "GET /bundle/index.js").body, Catch::Contains("module.exports = 2;"));
}

TEST_CASE("bundler live reload: a client that has gone is dropped without an edit", "[bundler][live]") {
  Tree t;
  t.write("index.js", "module.exports = 1;");
  BundlerOptions o;
  o.live_reload = true;
  o.live_reload_keepalive = std::chrono::milliseconds(20);
  Bundler b(csgi::App([](csgi::Env&) { return csgi::Response::text(200, "site"); }), t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  call(app, "GET /bundle/index.js");  // starts the watcher's thread
  auto stays = open_stream(b), goes = open_stream(b);
  {
    std::lock_guard lock(goes->client->mu);
    goes->client->gone = true;
  }
  // No file changes: the keep-alive comment finds the gone client and the hub lets it go.
  CHECK(eventually([&] { return goes->client.use_count() == 1; }));
  CHECK(stays->client.use_count() == 2);
  CHECK_THAT(stays->client->text(), Catch::Contains(": keep-alive\n\n"));
  CHECK(stays->client->text().find("event: change") == std::string::npos);
}

TEST_CASE("bundler live reload: off by default, and only with inotify", "[bundler][live]") {
  Tree t;
  t.write("index.js", "");
  Bundler b(t.root());
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  auto r = call(app, "GET /~live");
  CHECK(r.status == 404);
  CHECK_THAT(r.body, Catch::Contains("live_reload"));
  // The loader carries no live-reload code at all.
  std::string loader = call(app, "GET /require.js").body;
  CHECK(loader == Bundler::loader_source());
  CHECK_THAT(loader, !Catch::Contains("csgiRequire.live") && !Catch::Contains("EventSource") &&
                         !Catch::Contains("~live"));
  BundlerOptions o;
  o.live_reload = true;
  o.freshness = BundlerOptions::Freshness::stat;
  CHECK_THROWS_AS(Bundler(t.root(), o), std::invalid_argument);
}
