#include "csgi/middleware/server_status.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
/// Call options that hand `stats` to the app as an adapter does (csgix.server_stats).
testing::Options from_adapter(ServerStats& stats) {
  testing::Options o;
  o.setup = [&stats](Env& env) { env.set_object<ServerStats>(keys::x::server_stats, &stats); };
  return o;
}
}  // namespace

TEST_CASE("server_stats: counters, classes, exact statuses, gauges kept on reset") {
  ServerStats s;
  s.set_workers(4);
  s.connection_opened();
  s.connection_opened();
  s.connection_closed();
  s.request_started();
  s.request_finished(200, 100);
  s.record_response(404);
  s.record_response(418);
  s.record_response(42);
  s.request_started();
  auto snap = s.snapshot();
  CHECK(snap.workers == 4);
  CHECK(snap.workers_busy == 1);
  CHECK(snap.connections_open == 1);
  CHECK(snap.connections_total == 2);
  CHECK(snap.requests_total == 4);
  CHECK(snap.bytes_sent == 100);
  CHECK(snap.status_class[1] == 1);
  CHECK(snap.status_class[3] == 2);
  CHECK(snap.status[0] == 1);  // 200
  CHECK(snap.status_other == 1);
  CHECK_FALSE(snap.adapter_attached);
  s.reset();
  snap = s.snapshot();
  CHECK(snap.requests_total == 0);
  CHECK(snap.connections_open == 1);
  CHECK(snap.workers_busy == 1);
  s.attach_adapter("standalone");
  CHECK(s.snapshot().adapter == "standalone");
}

TEST_CASE("server_stats: concurrent recording loses nothing") {
  ServerStats s;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&s] {
      for (int i = 0; i < 10000; ++i) {
        s.request_started();
        s.request_finished(i % 2 ? 200 : 500, 1);
      }
    });
  for (auto& t : ts) t.join();
  auto snap = s.snapshot();
  CHECK(snap.requests_total == 40000);
  CHECK(snap.status_class[1] == 20000);
  CHECK(snap.status_class[4] == 20000);
  CHECK(snap.workers_busy == 0);
  CHECK(snap.bytes_sent == 40000);
}

TEST_CASE("server_status: middleware records what passes (every kind) and serves HTML, JSON, text") {
  ServerStats stats;
  mw::ServerStatusOptions o;
  o.stats = &stats;
  o.title = "<status>";
  App inner = lint([](Env& env) -> Response {
    if (env.get("PATH_INFO") == "/missing") return Response::error(404);
    if (env.get("PATH_INFO") == "/boom") throw std::runtime_error("x");
    return Response::text(200, "ok");
  });
  App app = lint(wrap<mw::ServerStatus>(inner, o));
  for (Kind k : all_kinds) {
    INFO(name(k));
    auto res = testing::call(lint(wrap<mw::ServerStatus>(answer(k, 201, "made"), o)), "GET /");
    CHECK(res.body == "made");
  }
  testing::call(app, "GET /a");
  testing::call(app, "GET /missing");
  CHECK_THROWS(testing::call(app, "GET /boom"));
  auto snap = stats.snapshot();
  CHECK(snap.requests_total == 7);
  CHECK(snap.status_class[1] == 5);
  CHECK(snap.status_class[3] == 1);
  CHECK(snap.status_class[4] == 1);
  CHECK(snap.workers_busy == 0);

  auto html = testing::call(app, "GET /server-status");
  CHECK(html.status == 200);
  CHECK(html.header("Content-Type").find("text/html") == 0);
  CHECK(html.body.find("&lt;status&gt;") != std::string::npos);
  CHECK(html.body.find("<status>") == std::string::npos);
  CHECK(html.body.find("<tr><th>Requests served</th><td>7</td></tr>") != std::string::npos);
  CHECK(html.header("Cache-Control") == "no-store");

  auto json = testing::call(app, "GET /server-status?json");
  CHECK(json.header("Content-Type") == "application/json");
  CHECK(json.body.find("\"requests\":{\"total\":8,") != std::string::npos);
  CHECK(json.body.find("\"404\":1") != std::string::npos);
  CHECK(json.body.find("\"5xx\":1") != std::string::npos);
  auto byaccept = testing::call(app, "GET /server-status", {{"Accept", "text/html;q=0.5, application/json"}});
  CHECK(byaccept.header("Content-Type") == "application/json");
  auto browser = testing::call(app, "GET /server-status",
                               {{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}});
  CHECK(browser.header("Content-Type").find("text/html") == 0);
  auto text = testing::call(app, "GET /server-status?auto");
  CHECK(text.body.find("Total Accesses: ") != std::string::npos);
  CHECK(testing::call(app, "POST /server-status", {}, "x").status == 405);
}

TEST_CASE("server_status: no recording once an adapter feeds the stats; app form; bad options") {
  ServerStats stats;
  stats.attach_adapter("test");
  mw::ServerStatusOptions o;
  o.stats = &stats;
  App app = wrap<mw::ServerStatus>(answer(Kind::complete, 200, "x"), o);
  testing::call(app, "GET /");
  CHECK(stats.snapshot().requests_total == 0);
  stats.connection_opened();
  App page = lint(mw::ServerStatusApp(o));
  auto res = testing::call(page, "GET /?format=json");
  CHECK(res.body.find("\"connections\":{\"open\":1,\"total\":1}") != std::string::npos);
  CHECK(res.body.find("\"adapter\":\"test\"") != std::string::npos);
  mw::ServerStatusOptions bad;
  bad.path = "status";
  CHECK_THROWS_AS(mw::ServerStatus(page, bad), std::invalid_argument);
}

TEST_CASE("server_status: the page shows the adapter's counters from csgix.server_stats", "[EXT-7]") {
  ServerStats adapter;
  adapter.attach_adapter("in-memory");
  adapter.connection_opened();
  adapter.record_response(200, 10);
  adapter.record_response(404);
  App app = lint(wrap<mw::ServerStatus>(answer(Kind::complete, 200, "x")));
  auto json = testing::call(app, "GET /server-status?json", {}, "", from_adapter(adapter));
  REQUIRE(json.status == 200);
  nlohmann::json j = nlohmann::json::parse(json.body);
  CHECK(j["adapter"] == "in-memory");
  CHECK(j["requests"]["total"] == 2);
  CHECK(j["statuses"]["404"] == 1);
  CHECK(j["connections"]["total"] == 1);
  // The adapter records; the middleware does not count on top of it.
  CHECK(testing::call(app, "GET /", {}, "", from_adapter(adapter)).body == "x");
  CHECK(adapter.snapshot().requests_total == 2);
  auto page = testing::call(lint(mw::ServerStatusApp{}), "GET /?auto", {}, "", from_adapter(adapter));
  CHECK(page.body.find("Total Accesses: 2\n") != std::string::npos);

  // An explicit stats object wins over the adapter's.
  ServerStats own;
  mw::ServerStatusOptions o;
  o.stats = &own;
  App counted = lint(wrap<mw::ServerStatus>(answer(Kind::complete, 200, "x"), o));
  testing::call(counted, "GET /", {}, "", from_adapter(adapter));
  auto mine = testing::call(counted, "GET /server-status?json", {}, "", from_adapter(adapter));
  CHECK(nlohmann::json::parse(mine.body)["requests"]["total"] == 1);
  CHECK(adapter.snapshot().requests_total == 2);
}

TEST_CASE("server_status: 501 with a reason when the adapter provides no stats and none is given") {
  App app = lint(wrap<mw::ServerStatus>(answer(Kind::complete, 200, "x")));
  CHECK(testing::call(app, "GET /").body == "x");
  auto res = testing::call(app, "GET /server-status");
  CHECK(res.status == 501);
  CHECK(res.body.find("csgix.server_stats") != std::string::npos);
  CHECK(testing::call(lint(mw::ServerStatusApp{}), "GET /?json").status == 501);
  CHECK(testing::call(lint(mw::ServerStatusApp{}), "POST /", {}, "x").status == 405);
}

TEST_CASE("server_status: the JSON form is valid JSON whatever the adapter's name holds") {
  ServerStats stats;
  stats.attach_adapter("odd \"name\"\\\n");
  stats.connection_opened();
  auto res = testing::call(lint(mw::ServerStatusApp{}), "GET /?json", {}, "", from_adapter(stats));
  nlohmann::json j = nlohmann::json::parse(res.body);
  CHECK(j["adapter"] == "odd \"name\"\\\n");
  CHECK(j["connections"]["open"] == 1);
  CHECK(j["requests"]["per_second"].is_number());
  CHECK(j["statuses"].contains("other"));
}
