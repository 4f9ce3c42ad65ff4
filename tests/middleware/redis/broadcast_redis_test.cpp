#include "csgi/middleware/redis/broadcast_redis.hpp"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "redis_server.hpp"

using namespace csgi;
using namespace std::chrono;

namespace {

/// The messages one subscriber got, waited for with a bound.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::uint64_t, std::string>> got;
  std::string ended;
  mw::Subscriber subscriber() {
    mw::Subscriber s;
    s.deliver = [this](const mw::BroadcastMessage& m, std::uint64_t) {
      std::lock_guard lock(mu);
      got.emplace_back(m.id, m.data);
      cv.notify_all();
      return true;
    };
    s.ended = [this](std::string_view why) {
      std::lock_guard lock(mu);
      ended = why;
    };
    return s;
  }
  bool wait_for_count(std::size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, seconds(10), [&] { return got.size() >= n; });
  }
  std::vector<std::string> texts() {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (auto& [id, t] : got) out.push_back(t);
    return out;
  }
};

}  // namespace

TEST_CASE("redis broadcast: two processes' hubs share one channel; Redis down and back") {
  test::RedisServer redis;
  std::string why;
  if (!redis.start(why)) {
    WARN("skipped: " + why);
    return;
  }
  // Two "processes": each its own client and hub, sharing only Redis.
  mw::RedisBroadcast a(csgi::test::redis_client(redis.port())), b(csgi::test::redis_client(redis.port()));
  REQUIRE(a.listening(seconds(10)));
  REQUIRE(b.listening(seconds(10)));
  Inbox on_a, on_b, other_topic;
  auto s1 = a.subscribe("room", on_a.subscriber());
  auto s2 = b.subscribe("room", on_b.subscriber());
  auto s3 = b.subscribe("elsewhere", other_topic.subscriber());

  std::uint64_t first = a.publish("room", "hello from a");
  std::uint64_t second = b.publish("room", "hello from b");
  std::uint64_t third = a.publish("room", "two words\nand a line");
  CHECK(first < second);
  CHECK(second < third);
  for (Inbox* in : {&on_a, &on_b}) {
    REQUIRE(in->wait_for_count(3));
    CHECK(in->texts() == std::vector<std::string>{"hello from a", "hello from b", "two words\nand a line"});
    CHECK(in->got[0].first == first);  // the same ids in every process
    CHECK(in->got[2].first == third);
  }
  CHECK(other_topic.texts().empty());

  // A late subscriber on b after the first id gets the rest from b's history.
  Inbox late;
  auto s4 = b.subscribe("room", late.subscriber(), first);
  REQUIRE(late.wait_for_count(2));
  CHECK(late.texts() == std::vector<std::string>{"hello from b", "two words\nand a line"});

  // Redis stopped: publish fails with the reason; restarted: the listeners come back by themselves.
  int port = redis.port();
  redis.stop();
  CHECK_THROWS_WITH(a.publish("room", "lost"), Catch::Contains("Redis at 127.0.0.1:" + std::to_string(port)));
  REQUIRE(redis.start(why));
  bool back = false;
  for (int i = 0; i < 400 && !back; ++i) {
    back = a.listening() && b.listening();
    if (!back) std::this_thread::sleep_for(milliseconds(25));
  }
  REQUIRE(back);
  bool published = false;
  for (int i = 0; i < 400 && !published; ++i) {
    try {
      b.publish("room", "back again");
      published = true;
    } catch (const mw::BroadcastError&) {  // b's client still backing off
      std::this_thread::sleep_for(milliseconds(25));
    }
  }
  REQUIRE(published);
  REQUIRE(on_a.wait_for_count(4));
  CHECK(on_a.texts().back() == "back again");
}

TEST_CASE("redis broadcast: a subscriber after an id gets the history kept in Redis, once each, then live") {
  test::RedisServer redis;
  std::string why;
  if (!redis.start(why)) {
    WARN("skipped: " + why);
    return;
  }
  mw::BroadcastOptions o;
  o.history = 3;
  mw::RedisBroadcast a(csgi::test::redis_client(redis.port()), o);
  std::vector<std::uint64_t> ids;
  for (const char* text : {"one", "two", "three", "four"}) ids.push_back(a.publish("room", text));

  // A process that never listened: what it missed comes from Redis (its last 3), then what is published.
  mw::RedisBroadcast b(csgi::test::redis_client(redis.port()), o);
  Inbox late, none;
  auto s1 = b.subscribe("room", late.subscriber(), ids[0]);
  auto s2 = b.subscribe("room", none.subscriber(), ids[3]);
  a.publish("room", "five");
  REQUIRE(late.wait_for_count(4));
  REQUIRE(none.wait_for_count(1));
  CHECK(late.texts() == std::vector<std::string>{"two", "three", "four", "five"});
  CHECK(none.texts() == std::vector<std::string>{"five"});

  // Only the kept ones: a subscriber after an id older than the history gets the last 3.
  Inbox older;
  auto s3 = b.subscribe("room", older.subscriber(), 0);
  REQUIRE(older.wait_for_count(3));
  CHECK(older.texts() == std::vector<std::string>{"three", "four", "five"});
  std::this_thread::sleep_for(milliseconds(100));  // nothing comes twice
  CHECK(late.texts().size() == 4);
  CHECK(older.texts().size() == 3);
}
