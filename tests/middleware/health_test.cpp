#include "csgi/middleware/health.hpp"

#include <catch2/catch.hpp>

#include <atomic>

#include "csgi/core/server_stats.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
using namespace csgi::mw;

namespace {

App counted_app(std::atomic<int>& calls) {
  return [&calls](Env&) {
    ++calls;
    return Response::text(200, "app");
  };
}

testing::Options with_stats(ServerStats& stats) {
  testing::Options o;
  o.setup = [&stats](Env& env) { env.set_object<ServerStats>(keys::x::server_stats, &stats); };
  return o;
}

}  // namespace

TEST_CASE("health: ready and alive while serving, without calling the app", "[health]") {
  std::atomic<int> calls{0};
  ServerStats stats;
  App app = wrap<Health>(counted_app(calls));
  auto ready = testing::call(app, "GET /readyz", {}, "", with_stats(stats));
  CHECK(ready.status == 200);
  CHECK(ready.body == "ready\n");
  CHECK(ready.header("Cache-Control") == "no-store");
  auto live = testing::call(app, "GET /livez", {}, "", with_stats(stats));
  CHECK(live.status == 200);
  CHECK(live.body == "alive\n");
  CHECK(calls == 0);
  CHECK(testing::call(app, "GET /readyz/x", {}, "", with_stats(stats)).body == "app");
  CHECK(testing::call(app, "GET /other", {}, "", with_stats(stats)).body == "app");
  CHECK(calls == 2);
}

TEST_CASE("health: readiness turns 503 when the adapter begins to drain; liveness stays 200", "[health]") {
  std::atomic<int> calls{0};
  ServerStats stats;
  App app = wrap<Health>(counted_app(calls));
  stats.begin_drain();
  CHECK(stats.snapshot().draining);
  auto ready = testing::call(app, "GET /readyz", {}, "", with_stats(stats));
  CHECK(ready.status == 503);
  CHECK(ready.body == "draining\n");
  CHECK(testing::call(app, "GET /livez", {}, "", with_stats(stats)).status == 200);
  CHECK(testing::call(app, "GET /", {}, "", with_stats(stats)).body == "app");  // in-flight work still served
}

TEST_CASE("health: a readiness check of the app's own, paths configurable or off", "[health]") {
  std::atomic<int> calls{0};
  std::atomic<bool> db_up{false};
  HealthOptions o;
  o.ready_path = "/-/ready";
  o.live_path = "";
  o.ready = [&db_up] { return db_up.load(); };
  App app = wrap<Health>(counted_app(calls), o);
  auto r = testing::call(app, "GET /-/ready");  // no csgix.server_stats: the check alone decides
  CHECK(r.status == 503);
  CHECK(r.body == "not ready\n");
  db_up = true;
  CHECK(testing::call(app, "GET /-/ready").status == 200);
  CHECK(testing::call(app, "GET /livez").body == "app");
  CHECK(testing::call(app, "GET /readyz").body == "app");
  CHECK_THROWS_AS(wrap<Health>(counted_app(calls), HealthOptions{"ready", "/livez", {}}), std::invalid_argument);
}

TEST_CASE("health: GET and HEAD only", "[health]") {
  std::atomic<int> calls{0};
  App app = wrap<Health>(counted_app(calls));
  auto post = testing::call(app, "POST /readyz", {}, "x");
  CHECK(post.status == 405);
  CHECK(post.header("Allow") == "GET, HEAD");
  auto head = testing::call(app, "HEAD /livez");
  CHECK(head.status == 200);
  CHECK(calls == 0);
}
