#include "csgi/middleware/rate_limit.hpp"

#include <catch2/catch.hpp>
#include <atomic>
#include <thread>
#include <vector>

#include "csgi/middleware/reverse_proxy.hpp"
#include "csgi/middleware/sessions.hpp"
#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;
using namespace std::chrono;

namespace {
App ok() { return lint([](Env&) { return Response::text(200, "ok"); }); }

/// A backend on a clock the test moves.
struct Manual {
  steady_clock::time_point now = steady_clock::time_point(hours(1));
  std::shared_ptr<mw::MemoryRateLimit> backend(std::size_t max_keys = 1000) {
    return std::make_shared<mw::MemoryRateLimit>(max_keys, [this] { return now; });
  }
};

class DownBackend final : public mw::RateLimitBackend {
public:
  mw::RateLimitDecision take(std::string_view, const mw::RateLimitPolicy&) override {
    throw std::runtime_error("connection refused");
  }
};
}  // namespace

TEST_CASE("rate_limit: a full bucket allows `limit` requests, then 429 with Retry-After until it refills") {
  Manual clock;
  mw::RateLimitOptions o;
  o.policy = {3, seconds(30)};  // one request back every 10 s
  o.backend = clock.backend();
  App app = lint(wrap<mw::RateLimit>(ok(), o));
  for (int i = 2; i >= 0; --i) {
    auto r = testing::call(app, "GET /");
    CHECK(r.status == 200);
    CHECK(r.header("RateLimit-Policy") == "\"default\";q=3;w=30");
    CHECK(r.header("RateLimit") == "\"default\";r=" + std::to_string(i) + ";t=" + std::to_string(10 * (3 - i)));
  }
  auto refused = testing::call(app, "GET /");
  CHECK(refused.status == 429);
  CHECK(refused.header("Retry-After") == "10");
  CHECK(refused.header("RateLimit") == "\"default\";r=0;t=30");
  CHECK(refused.body == "Too Many Requests: more than 3 in 30 s\n");

  clock.now += seconds(4);
  CHECK(testing::call(app, "GET /").header("Retry-After") == "6");
  clock.now += seconds(6);
  CHECK(testing::call(app, "GET /").status == 200);
  CHECK(testing::call(app, "GET /").status == 429);
  clock.now += hours(1);  // never more than a full bucket
  for (int i = 0; i < 3; ++i) CHECK(testing::call(app, "GET /").status == 200);
  CHECK(testing::call(app, "GET /").status == 429);
}

TEST_CASE("rate_limit: keyed by the client address as reverse_proxy leaves it") {
  Manual clock;
  mw::RateLimitOptions o;
  o.policy = {1, seconds(60)};
  o.backend = clock.backend();
  App app = lint(wrap<mw::ReverseProxy>(lint(wrap<mw::RateLimit>(ok(), o))));
  CHECK(testing::call(app, "GET /", {{"X-Forwarded-For", "203.0.113.1"}}).status == 200);
  CHECK(testing::call(app, "GET /", {{"X-Forwarded-For", "203.0.113.2"}}).status == 200);
  CHECK(testing::call(app, "GET /", {{"X-Forwarded-For", "203.0.113.1"}}).status == 429);
  CHECK(testing::call(app, "GET /", {{"X-Forwarded-For", "203.0.113.2"}}).status == 429);
  mw::RateLimit direct(ok(), o);
  testing::call(app, "GET /", {}, "", {.setup = [&](Env& env) { CHECK(direct.key(env) == "default:addr:127.0.0.1"); }});
}

TEST_CASE("rate_limit: keyed by session (an empty session by address) or by a header") {
  Manual clock;
  mw::RateLimitOptions o;
  o.policy = {1, seconds(60)};
  o.backend = clock.backend();
  o.key_by = mw::RateLimitOptions::KeyBy::session;
  o.name = "say";
  mw::SessionsOptions so;
  so.store = std::make_shared<mw::MemorySessionStore>();
  App login = lint([](Env& env) {
    mw::Sessions::of(env)->data["user"] = std::string(env.get(keys::QUERY_STRING));
    return Response::text(200, "in");
  });
  App per_session = lint(wrap<mw::Sessions>(lint(wrap<mw::RateLimit>(ok(), o)), so));
  App sign_in = lint(wrap<mw::Sessions>(login, so));
  auto cookie = [](const testing::TestResponse& r) {
    std::string sc = r.header("Set-Cookie");
    return sc.substr(0, sc.find(';'));
  };
  std::string ann = cookie(testing::call(sign_in, "GET /?ann")), bob = cookie(testing::call(sign_in, "GET /?bob"));
  CHECK(testing::call(per_session, "POST /say", {{"Cookie", ann}}).status == 200);
  CHECK(testing::call(per_session, "POST /say", {{"Cookie", bob}}).status == 200);
  auto again = testing::call(per_session, "POST /say", {{"Cookie", ann}});
  CHECK(again.status == 429);
  CHECK(again.header("RateLimit-Policy") == "\"say\";q=1;w=60");
  // Without a session: by address (a fresh id per request would escape the limit).
  CHECK(testing::call(per_session, "POST /say").status == 200);
  CHECK(testing::call(per_session, "POST /say").status == 429);
  CHECK_THROWS_AS(testing::call(lint(wrap<mw::RateLimit>(ok(), o)), "GET /"), std::logic_error);

  mw::RateLimitOptions h;
  h.policy = {1, seconds(60)};
  h.backend = clock.backend();
  h.key_by = mw::RateLimitOptions::KeyBy::header;
  h.header = "X-API-Key";
  App by_key = lint(wrap<mw::RateLimit>(ok(), h));
  CHECK(testing::call(by_key, "GET /", {{"X-API-Key", "k1"}}).status == 200);
  CHECK(testing::call(by_key, "GET /", {{"X-API-Key", "k2"}}).status == 200);
  CHECK(testing::call(by_key, "GET /", {{"X-API-Key", "k1"}}).status == 429);
}

TEST_CASE("rate_limit: a failing backend gives 503 with the reason, or lets requests through when fail_open") {
  mw::RateLimitOptions o;
  o.backend = std::make_shared<DownBackend>();
  auto r = testing::call(lint(wrap<mw::RateLimit>(ok(), o)), "GET /");
  CHECK(r.status == 503);
  CHECK(r.body == "Rate limit unavailable: connection refused\n");
  o.fail_open = true;
  CHECK(testing::call(lint(wrap<mw::RateLimit>(ok(), o)), "GET /").body == "ok");
}

TEST_CASE("rate_limit: the memory backend holds at most its bound; every body kind gets the headers") {
  Manual clock;
  auto b = clock.backend(64);
  for (int i = 0; i < 2000; ++i) b->take("k" + std::to_string(i), {1, seconds(60)});
  CHECK(b->size() <= 64);
  for (Kind k : all_kinds) {
    INFO(name(k));
    auto r = testing::call(lint(wrap<mw::RateLimit>(answer(k, 200, "body"))), "GET /");
    CHECK(r.header("RateLimit") == "\"default\";r=59;t=1");
    CHECK(r.body == "body");
  }
  mw::RateLimitOptions bad;
  bad.policy.limit = 0;
  CHECK_THROWS_AS(mw::RateLimit(ok(), bad), std::invalid_argument);
}

TEST_CASE("rate_limit: threads sharing one bucket get exactly `limit` requests through") {
  mw::MemoryRateLimit backend(1000, [] { return steady_clock::time_point(hours(1)); });  // no refill
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        if (backend.take("shared", {100, seconds(60)}).allowed) ++allowed;
    });
  for (auto& t : threads) t.join();
  CHECK(allowed == 100);
}
