#include "csgi/middleware/metrics.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <regex>
#include <stdexcept>

#include "csgi/core/http_error.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
using namespace csgi::mw;

namespace {

App routes(std::atomic<int>& calls) {
  return [&calls](Env& env) {
    ++calls;
    std::string_view p = env.get(keys::PATH_INFO);
    if (p == "/missing") return Response::error(404);
    if (p == "/boom") throw std::runtime_error("boom");
    if (p == "/bad") throw BadRequest("bad");
    return Response::text(200, "hello");  // 5 bytes
  };
}

// The value of the sample line `series` (name and labels as written), or -1 when absent.
double value(const std::string& text, const std::string& series) {
  std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace

TEST_CASE("metrics: requests by method and status class, bytes, without calling the app for scrapes", "[metrics]") {
  std::atomic<int> calls{0};
  App app = wrap<Metrics>(routes(calls));
  CHECK(testing::call(app, "GET /").status == 200);
  CHECK(testing::call(app, "GET /missing").status == 404);
  CHECK(testing::call(app, "POST /", {{"Content-Length", "7"}}, "1234567").status == 200);
  CHECK(testing::call(app, "HEAD /").status == 200);
  CHECK(testing::call(app, "BREW /").status == 200);
  CHECK_THROWS(testing::call(app, "GET /boom"));
  CHECK_THROWS_AS(testing::call(app, "PUT /bad"), BadRequest);
  auto scrape = testing::call(app, "GET /metrics");
  CHECK(calls == 7);
  REQUIRE(scrape.status == 200);
  CHECK(scrape.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(scrape.header("Cache-Control") == "no-store");
  const std::string& t = scrape.body;
  CHECK(value(t, "csgi_http_requests_total{method=\"GET\",code=\"2xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"GET\",code=\"4xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"GET\",code=\"5xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"POST\",code=\"2xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"HEAD\",code=\"2xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"other\",code=\"2xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"PUT\",code=\"4xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_in_flight") == 1);  // the scrape itself
  CHECK(value(t, "csgi_http_request_body_bytes_total") == 7);
  // GET / and POST / ("hello"), BREW / ("hello"), GET /missing (the error page); HEAD counts nothing.
  std::string not_found = testing::call(routes(calls), "GET /missing").body;
  CHECK(value(t, "csgi_http_response_body_bytes_total") == 15 + static_cast<double>(not_found.size()));
  CHECK(value(t, "csgi_http_request_duration_seconds_count") == 7);
  CHECK(value(t, "csgi_http_request_duration_seconds_bucket{le=\"+Inf\"}") == 7);
  CHECK(value(t, "csgi_http_request_duration_seconds_sum") >= 0);
  // The next scrape counts the previous one.
  CHECK(value(testing::call(app, "GET /metrics").body, "csgi_http_requests_total{method=\"GET\",code=\"2xx\"}") == 2);
}

TEST_CASE("metrics: the text format has HELP and TYPE for each family and cumulative histogram buckets", "[metrics]") {
  auto slow = [](Env&) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    while (std::chrono::steady_clock::now() < until) {
    }
    return Response::text(200, "slow");
  };
  Metrics m(slow);
  for (int i = 0; i < 2; ++i) testing::call([&m](Env& env) { return m(env); }, "GET /");
  std::string t = m.render();
  for (const char* family : {"csgi_http_requests_total counter", "csgi_http_requests_in_flight gauge",
                             "csgi_http_request_body_bytes_total counter", "csgi_http_response_body_bytes_total counter",
                             "csgi_http_request_duration_seconds histogram"}) {
    CHECK(t.find(std::string("# TYPE ") + family + "\n") != std::string::npos);
    std::string name(family, std::string_view(family).find(' '));
    CHECK(t.find("# HELP " + name + " ") != std::string::npos);
  }
  CHECK(value(t, "csgi_http_request_duration_seconds_bucket{le=\"0.025\"}") == 0);
  CHECK(value(t, "csgi_http_request_duration_seconds_bucket{le=\"0.05\"}") == 2);
  CHECK(value(t, "csgi_http_request_duration_seconds_bucket{le=\"10\"}") == 2);
  CHECK(value(t, "csgi_http_request_duration_seconds_bucket{le=\"+Inf\"}") == 2);
  CHECK(value(t, "csgi_http_request_duration_seconds_sum") >= 0.06);
  // Every line is a comment or `name{labels} value`.
  std::regex line(R"((# (HELP|TYPE) [a-z_]+ .+)|([a-z_]+(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? [0-9.e+-]+))");
  std::size_t from = 0;
  while (from < t.size()) {
    std::size_t nl = t.find('\n', from);
    REQUIRE(nl != std::string::npos);
    CHECK(std::regex_match(t.substr(from, nl - from), line));
    from = nl + 1;
  }
}

TEST_CASE("metrics: scrapes from loopback only by default, GET and HEAD only, path configurable", "[metrics]") {
  std::atomic<int> calls{0};
  App app = wrap<Metrics>(routes(calls));
  testing::Options remote;
  remote.remote_addr = "192.0.2.7";
  CHECK(testing::call(app, "GET /metrics", {}, "", remote).status == 403);
  testing::Options v6;
  v6.remote_addr = "::1";
  CHECK(testing::call(app, "GET /metrics", {}, "", v6).status == 200);
  auto post = testing::call(app, "POST /metrics");
  CHECK(post.status == 405);
  CHECK(post.header("Allow") == "GET, HEAD");
  CHECK(calls == 0);

  MetricsOptions o;
  o.path = "/_stats/prom";
  o.allow_from = {};
  App open = wrap<Metrics>(routes(calls), o);
  CHECK(testing::call(open, "GET /_stats/prom", {}, "", remote).status == 200);
  CHECK(testing::call(open, "GET /metrics").body == "hello");
  CHECK_THROWS_AS(wrap<Metrics>(routes(calls), MetricsOptions{"metrics", {}}), std::invalid_argument);
  CHECK_THROWS_AS(wrap<Metrics>(routes(calls), MetricsOptions{"/metrics", {"not-an-address"}}), std::invalid_argument);
}

TEST_CASE("metrics: a forwarded request may not scrape on its loopback address; a bearer token opens it", "[metrics]") {
  std::atomic<int> calls{0};
  App app = wrap<Metrics>(routes(calls));
  // A reverse proxy on the same host connects from 127.0.0.1 for every client it forwards.
  for (const char* header : {"X-Forwarded-For", "Forwarded", "X-Real-IP"}) {
    INFO(header);
    CHECK(testing::call(app, "GET /metrics", {{header, "203.0.113.9"}}).status == 403);
  }
  CHECK(testing::call(app, "GET /metrics").status == 200);
  MetricsOptions trusting;
  trusting.trust_forwarded = true;
  CHECK(testing::call(wrap<Metrics>(routes(calls), trusting), "GET /metrics", {{"X-Forwarded-For", "10.0.0.1"}}).status ==
        200);

  MetricsOptions o;
  o.bearer_token = "s3cret-token";
  o.allow_from = {};
  App guarded = wrap<Metrics>(routes(calls), o);
  testing::Options remote;
  remote.remote_addr = "192.0.2.7";
  auto none = testing::call(guarded, "GET /metrics", {}, "", remote);
  CHECK(none.status == 401);
  CHECK(none.header("WWW-Authenticate") == "Bearer realm=\"metrics\"");
  for (const char* wrong : {"Bearer s3cret-toke", "Bearer s3cret-token2", "Basic s3cret-token", "s3cret-token", ""})
    CHECK(testing::call(guarded, "GET /metrics", {{"Authorization", wrong}}, "", remote).status == 401);
  CHECK(testing::call(guarded, "GET /metrics", {{"Authorization", "Bearer s3cret-token"}}, "", remote).status == 200);
  CHECK(testing::call(guarded, "GET /metrics", {{"Authorization", "bearer s3cret-token"}, {"X-Forwarded-For", "1.2.3.4"}})
            .status == 200);
  CHECK(testing::call(guarded, "GET /other", {}, "", remote).body == "hello");
  CHECK(calls == 1);
}

TEST_CASE("metrics: a process forked after the layer was built adds into the same counters", "[metrics]") {
  std::atomic<int> calls{0};
  App app = wrap<Metrics>(routes(calls));
  testing::call(app, "GET /");
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (int i = 0; i < 3; ++i) testing::call(app, "DELETE /");
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  std::string t = testing::call(app, "GET /metrics").body;
  CHECK(value(t, "csgi_http_requests_total{method=\"GET\",code=\"2xx\"}") == 1);
  CHECK(value(t, "csgi_http_requests_total{method=\"DELETE\",code=\"2xx\"}") == 3);
  CHECK(value(t, "csgi_http_request_duration_seconds_count") == 4);
}
