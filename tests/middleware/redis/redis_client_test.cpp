#include "csgi/middleware/redis/redis_client.hpp"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "csgi/core/test_client.hpp"
#include "csgi/middleware/redis/rate_limit_redis.hpp"
#include "csgi/middleware/redis/session_store_redis.hpp"
#include "csgi/middleware/sessions.hpp"
#include "redis_server.hpp"

using namespace csgi;
using namespace std::chrono;

namespace {

App session_app() {
  return [](Env& env) {
    Session* s = mw::Sessions::of(env);
    std::string_view path = env.get(keys::PATH_INFO);
    if (path == "/login") {
      s->data["user"] = std::string(env.get(keys::QUERY_STRING));
      mw::Sessions::rotate(env);
    } else if (path == "/logout") {
      mw::Sessions::expire(env);
    }
    return Response::text(200, s->data.count("user") ? s->data["user"] : std::string("-"));
  };
}

/// One "host": its own Sessions middleware and RedisClient, sharing only Redis.
App host(int port) {
  mw::SessionsOptions o;
  o.store = std::make_shared<mw::RedisSessionStore>(csgi::test::redis_client(port));
  return wrap<mw::Sessions>(session_app(), o);
}

std::string cookie_of(const testing::TestResponse& r) {
  std::string sc = r.header("Set-Cookie");
  return sc.substr(0, sc.find(';'));
}

}  // namespace

TEST_CASE("redis: a redis:// URL gives host, port, password and db; anything else is refused") {
  auto o = mw::RedisOptions::from_url("redis://:s3cret@cache.internal:6380/2");
  CHECK(o.host == "cache.internal");
  CHECK(o.port == 6380);
  CHECK(o.password == "s3cret");
  CHECK(o.db == 2);
  CHECK(mw::RedisOptions::from_url("redis://10.0.0.1").port == 6379);
  for (std::string bad : {"http://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h:1/x", "redis://h:x"})
    CHECK_THROWS_AS(mw::RedisOptions::from_url(bad), std::invalid_argument);
}

TEST_CASE("redis: sessions and rate limits shared by two hosts; 503 while Redis is down, then back") {
  test::RedisServer redis;
  std::string why;
  if (!redis.start(why)) {
    WARN("skipped: " + why);
    return;
  }
  App a = host(redis.port()), b = host(redis.port());

  // A session made on host a is known on host b; rotation and logout hold on both.
  auto anon = testing::call(a, "GET /");
  CHECK(anon.body == "-");
  auto login = testing::call(a, "POST /login?ann");
  std::string ann = cookie_of(login);
  REQUIRE(ann.size() == std::string("csgi_session=").size() + 32);
  CHECK(testing::call(b, "GET /me", {{"Cookie", ann}}).body == "ann");
  auto again = testing::call(b, "POST /login?ann2", {{"Cookie", ann}});
  std::string ann2 = cookie_of(again);
  CHECK(ann2 != ann);
  CHECK(testing::call(a, "GET /me", {{"Cookie", ann}}).body == "-");  // the old id is gone everywhere
  CHECK(testing::call(a, "GET /me", {{"Cookie", ann2}}).body == "ann2");
  CHECK(testing::call(a, "GET /me", {{"Cookie", "csgi_session=zz*"}}).body == "-");
  CHECK(testing::call(b, "POST /logout", {{"Cookie", ann2}}).header("Set-Cookie").find("Max-Age=0") != std::string::npos);
  CHECK(testing::call(a, "GET /me", {{"Cookie", ann2}}).body == "-");

  // One bucket over both hosts: 3 requests in all, then 429.
  auto limited = [&] {
    mw::RateLimitOptions o;
    o.policy = {3, seconds(60)};
    o.backend = std::make_shared<mw::RedisRateLimit>(csgi::test::redis_client(redis.port()));
    return wrap<mw::RateLimit>([](Env&) { return Response::text(200, "ok"); }, o);
  };
  App ra = limited(), rb = limited();
  CHECK(testing::call(ra, "GET /").status == 200);
  CHECK(testing::call(rb, "GET /").status == 200);
  CHECK(testing::call(ra, "GET /").header("RateLimit") == "\"default\";r=0;t=60");
  auto refused = testing::call(rb, "GET /");
  CHECK(refused.status == 429);
  CHECK(refused.header("Retry-After") == "20");
  {
    // Four threads on one fresh bucket, over a shared pool of 2 connections: exactly 50 pass (atomic).
    mw::RedisOptions small = csgi::test::redis_client(redis.port())->options();
    small.max_connections = 2;
    small.command_timeout = seconds(5);
    mw::RedisRateLimit shared(std::make_shared<mw::RedisClient>(small));
    std::atomic<int> allowed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 25; ++i)
          if (shared.take("race", {50, seconds(3600)}).allowed) ++allowed;
      });
    for (auto& t : threads) t.join();
    CHECK(allowed == 50);
  }
  csgi::test::redis_client(redis.port())->command({"SCRIPT", "FLUSH"});  // EVALSHA finds no script: loaded again
  CHECK(testing::call(ra, "GET /").status == 429);

  // Redis hanging: a command gives up after command_timeout, the request gets 503 with the reason.
  ::kill(redis.pid(), SIGSTOP);
  auto hung = testing::call(a, "GET /me", {{"Cookie", ann}});
  ::kill(redis.pid(), SIGCONT);
  CHECK(hung.status == 503);
  CHECK(hung.body.find("Session store unavailable: ") == 0);

  // Redis down: 503 with the reason, fail_open lets requests through, nothing else is affected.
  int port = redis.port();
  redis.stop();
  auto down = testing::call(a, "GET /me", {{"Cookie", ann}});
  CHECK(down.status == 503);
  CHECK(down.body.find("Session store unavailable: Redis at 127.0.0.1:" + std::to_string(port)) == 0);
  auto rl = testing::call(ra, "GET /");
  CHECK(rl.status == 503);
  CHECK(rl.body.find("Rate limit unavailable: ") == 0);
  mw::RateLimitOptions open;
  open.backend = std::make_shared<mw::RedisRateLimit>(csgi::test::redis_client(port));
  open.fail_open = true;
  CHECK(testing::call(wrap<mw::RateLimit>([](Env&) { return Response::text(200, "ok"); }, open), "GET /").status == 200);
}

TEST_CASE("redis: after a restart the clients reconnect by themselves") {
  test::RedisServer redis;
  std::string why;
  if (!redis.start(why)) {
    WARN("skipped: " + why);
    return;
  }
  auto c = csgi::test::redis_client(redis.port());
  CHECK(c->command({"SET", "k", "v"}).str == "OK");
  redis.stop();
  CHECK_THROWS_AS(c->command({"GET", "k"}), mw::RedisError);
  CHECK_THROWS_AS(c->command({"GET", "k"}), mw::RedisError);  // backing off: fails at once
  // Same port again (the server was ours; its port is free once it exited).
  test::RedisServer* again = &redis;
  REQUIRE(again->start(why));
  bool back = false;
  for (int i = 0; i < 200 && !back; ++i) {
    try {
      back = c->command({"PING"}).str == "PONG";
    } catch (const mw::RedisError&) {
      std::this_thread::sleep_for(milliseconds(25));
    }
  }
  CHECK(back);
  CHECK(c->command({"GET", "k"}).type == mw::RedisReply::Type::nil);  // no persistence: a fresh server
  CHECK_THROWS_WITH(c->command({"INCR"}), Catch::Contains("wrong number of arguments"));
}
