#include "csgi/middleware/broadcast.hpp"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/middleware/broadcast_streams.hpp"

using namespace csgi;
using namespace std::chrono;

namespace {

/// What one subscriber received, for the test thread to wait on (each wait bounded).
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::uint64_t> ids;
  std::vector<std::string> data;
  std::uint64_t skipped = 0;
  int heartbeats = 0;
  bool heartbeat_alive = true;
  std::string ended;
  int ended_calls = 0;

  mw::Subscriber subscriber(bool with_heartbeat = false) {
    mw::Subscriber s;
    s.deliver = [this](const mw::BroadcastMessage& m, std::uint64_t skipped_before) {
      std::lock_guard lock(mu);
      ids.push_back(m.id);
      data.push_back(m.data);
      skipped += skipped_before;
      cv.notify_all();
      return true;
    };
    if (with_heartbeat)
      s.heartbeat = [this] {
        std::lock_guard lock(mu);
        ++heartbeats;
        cv.notify_all();
        return heartbeat_alive;
      };
    s.ended = [this](std::string_view why) {
      std::lock_guard lock(mu);
      ended = why;
      ++ended_calls;
      cv.notify_all();
    };
    return s;
  }
  template <class P>
  bool wait(P pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, seconds(10), pred);
  }
};

/// A subscriber whose first delivery waits until the test opens the gate (at most 10 s), recording whether
/// it was the test that opened it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  bool opened_by_test = false;
  void release() {
    std::lock_guard lock(mu);
    open = opened_by_test = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu);
    cv.wait_for(lock, seconds(10), [&] { return open; });
    open = true;
  }
};

mw::Subscriber gated(Gate& gate, Inbox& inbox) {
  mw::Subscriber s = inbox.subscriber();
  s.deliver = [&gate, inner = s.deliver](const mw::BroadcastMessage& m, std::uint64_t skipped) {
    gate.wait();
    return inner(m, skipped);
  };
  return s;
}

}  // namespace

TEST_CASE("broadcast: every subscriber of a topic gets its messages in order, others none") {
  mw::LocalBroadcast hub;
  Inbox a, b, other;
  auto sa = hub.subscribe("room:1", a.subscriber());
  auto sb = hub.subscribe("room:1", b.subscriber());
  auto so = hub.subscribe("room:2", other.subscriber());
  CHECK(hub.subscribers() == 3);
  std::vector<std::uint64_t> sent;
  for (int i = 0; i < 100; ++i) sent.push_back(hub.publish("room:1", "m" + std::to_string(i)));
  CHECK(std::is_sorted(sent.begin(), sent.end()));
  for (Inbox* in : {&a, &b}) {
    REQUIRE(in->wait([&] { return in->ids.size() == 100; }));
    CHECK(in->ids == sent);
    CHECK(in->data.front() == "m0");
    CHECK(in->data.back() == "m99");
  }
  hub.publish("room:2", "x");
  REQUIRE(other.wait([&] { return other.data.size() == 1; }));
  CHECK(other.data[0] == "x");

  sa.cancel();
  CHECK(hub.subscribers() == 2);
  hub.publish("room:1", "after");
  REQUIRE(b.wait([&] { return b.ids.size() == 101; }));
  CHECK(a.ids.size() == 100);
  CHECK(a.ended_calls == 0);  // cancel() does not call ended
  CHECK_THROWS_AS(hub.subscribe("t", mw::Subscriber{}), std::invalid_argument);
  CHECK_THROWS_AS(mw::LocalBroadcast(mw::BroadcastOptions{.queue_limit = 0}), std::invalid_argument);
}

TEST_CASE("broadcast: a slow subscriber never holds up publishers: dropped, or skipping the oldest") {
  for (mw::Overflow policy : {mw::Overflow::drop, mw::Overflow::skip_oldest}) {
    mw::BroadcastOptions o;
    o.queue_limit = 4;
    o.overflow = policy;
    mw::LocalBroadcast hub(o);
    Gate gate;
    Inbox slow, fast;
    auto s1 = hub.subscribe("t", gated(gate, slow));
    auto s2 = hub.subscribe("t", fast.subscriber());
    hub.publish("t", "1");
    // The slow one is inside its first delivery, waiting for the gate: its queue fills behind it.
    REQUIRE(fast.wait([&] { return fast.ids.size() == 1; }));
    for (std::size_t i = 2; i <= 20; ++i) {
      hub.publish("t", std::to_string(i));
      REQUIRE(fast.wait([&] { return fast.ids.size() == i; }));  // the fast one keeps up
    }
    gate.release();  // reached only because no publish() waited for the slow subscriber
    if (policy == mw::Overflow::drop) {
      REQUIRE(slow.wait([&] { return slow.ended_calls == 1; }));
      CHECK(slow.ended == "too slow: 4 messages waiting");
      CHECK(slow.data == std::vector<std::string>{"1"});
      CHECK(hub.subscribers() == 1);
    } else {
      REQUIRE(slow.wait([&] { return slow.data.size() == 5; }));
      CHECK(slow.data == std::vector<std::string>{"1", "17", "18", "19", "20"});
      CHECK(slow.skipped == 15);
      CHECK(slow.ended_calls == 0);
    }
    CHECK(gate.opened_by_test);
  }
}

TEST_CASE("broadcast: a subscriber starting after an id gets the kept messages first") {
  mw::BroadcastOptions o;
  o.history = 3;
  mw::LocalBroadcast hub(o);
  for (int i = 1; i <= 5; ++i) hub.publish("t", "m" + std::to_string(i));
  Inbox late, all_kept;
  auto s1 = hub.subscribe("t", late.subscriber(), 3);
  auto s2 = hub.subscribe("t", all_kept.subscriber(), 0);
  hub.publish("t", "m6");
  REQUIRE(late.wait([&] { return late.data.size() == 3; }));
  CHECK(late.data == std::vector<std::string>{"m4", "m5", "m6"});
  REQUIRE(all_kept.wait([&] { return all_kept.data.size() == 4; }));
  CHECK(all_kept.data == std::vector<std::string>{"m3", "m4", "m5", "m6"});  // as far as the history reaches

  // A channel that numbers its messages itself (Redis): ids as given, and the next local one above them.
  hub.fan_out("t", 100, "remote");
  REQUIRE(late.wait([&] { return late.data.size() == 4; }));
  CHECK(late.ids.back() == 100);
  CHECK(hub.publish("t", "local") == 101);
}

TEST_CASE("broadcast: the messages a shared channel kept merge with the history, once each and in id order") {
  mw::LocalBroadcast hub;
  hub.fan_out("t", 11, "m11");
  hub.fan_out("t", 12, "m12");
  // The channel kept 10..12 (it saw 10 before this process listened); 11 and 12 are here too.
  std::vector<mw::BroadcastMessage> kept{{10, "t", "m10"}, {11, "t", "m11"}, {12, "t", "m12"}};
  Inbox in;
  auto s = hub.subscribe("t", in.subscriber(), 9, kept);
  hub.fan_out("t", 12, "m12");  // the channel's live copy of a kept message comes late
  hub.fan_out("t", 13, "m13");
  REQUIRE(in.wait([&] { return in.data.size() >= 4; }));
  CHECK(in.data == std::vector<std::string>{"m10", "m11", "m12", "m13"});
  CHECK(in.ids == std::vector<std::uint64_t>{10, 11, 12, 13});
}

TEST_CASE("broadcast: heartbeats for idle subscribers; one gone, failing or left at the end is ended") {
  mw::BroadcastOptions o;
  o.heartbeat = milliseconds(10);
  auto hub = std::make_unique<mw::LocalBroadcast>(o);
  Inbox beating, failing, throwing, left;
  auto s1 = hub->subscribe("t", beating.subscriber(true));
  REQUIRE(beating.wait([&] { return beating.heartbeats >= 2; }));
  {
    std::lock_guard lock(beating.mu);
    beating.heartbeat_alive = false;  // the next heartbeat finds the client gone
  }
  REQUIRE(beating.wait([&] { return beating.ended_calls == 1; }));
  CHECK(beating.ended == "subscriber gone");

  mw::Subscriber f = failing.subscriber();
  f.deliver = [](const mw::BroadcastMessage&, std::uint64_t) { return false; };
  mw::Subscriber t = throwing.subscriber();
  t.deliver = [](const mw::BroadcastMessage&, std::uint64_t) -> bool { throw std::runtime_error("boom"); };
  auto s2 = hub->subscribe("t", std::move(f));
  auto s3 = hub->subscribe("t", std::move(t));
  auto s4 = hub->subscribe("u", left.subscriber());
  hub->publish("t", "x");
  REQUIRE(failing.wait([&] { return failing.ended_calls == 1; }));
  CHECK(failing.ended == "subscriber gone");
  REQUIRE(throwing.wait([&] { return throwing.ended_calls == 1; }));
  CHECK(throwing.ended == "subscriber failed: boom");
  CHECK(hub->subscribers() == 1);
  hub.reset();
  CHECK(left.ended == "broadcast stopped");
  s4.cancel();  // after the hub: nothing to do
}

TEST_CASE("broadcast: the Broadcasting middleware puts the hub in the env as csgix.broadcast", "[EXT-12]") {
  auto hub = std::make_shared<mw::LocalBroadcast>();
  // Lint below the middleware checks the key's value kind (EXT-12).
  App app = wrap<mw::Broadcasting>(Lint([&](Env& env) {
                                     bool same = mw::Broadcasting::of(env) == hub.get() &&
                                                 env.object<Broadcast>(keys::x::broadcast) == hub.get();
                                     return Response::text(200, same ? "hub" : "none");
                                   }),
                                   hub);
  CHECK(testing::call(app, "GET /").body == "hub");
  CHECK(testing::call([](Env& env) { return Response::text(200, mw::Broadcasting::of(env) ? "hub" : "none"); }, "GET /").body == "none");
  CHECK_THROWS_AS(mw::Broadcasting([](Env&) { return Response::text(200, ""); }, nullptr), std::invalid_argument);
}

TEST_CASE("sse: frames with event, id and one data line per line; Last-Event-ID") {
  CHECK(mw::sse_frame("hi") == "data: hi\n\n");
  CHECK(mw::sse_frame("a\nb\r\nc\rd", "chat", "7") == "event: chat\nid: 7\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  CHECK(mw::sse_frame("", "x\r\ny", "1\n2") == "event: xy\nid: 12\ndata: \n\n");
  CHECK(mw::sse_frame("end\n") == "data: end\ndata: \n\n");
  auto id_of = [](std::string v) {
    std::optional<std::uint64_t> got;
    testing::Options o;
    o.inspect = [&](const Env& env) { got = mw::last_event_id(env); };
    testing::call([](Env&) { return Response::text(200, ""); }, "GET /", {{"Last-Event-ID", v}}, "", o);
    return got;
  };
  CHECK(id_of("42") == 42u);
  CHECK(id_of("4x") == std::nullopt);
  CHECK(id_of("-1") == std::nullopt);
}

namespace {

/// A Responder whose Writer keeps what was written, for the test thread to wait on.
class Recorder final : public ResponderImpl {
public:
  void respond(Response) override {}
  WriterPtr start(int st, Headers h) override {
    std::lock_guard lock(mu_);
    status = st;
    headers = std::move(h);
    return std::make_shared<W>(*this);
  }
  /// Waits (at most 10 s) until `pred(body, closed)` holds.
  template <class P>
  bool wait(P pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(10), [&] { return pred(body, closed); });
  }
  int status = 0;
  Headers headers;
  std::string body;
  bool closed = false;

private:
  struct W final : Writer {
    explicit W(Recorder& r) : r(r) {}
    bool write(std::string_view chunk) override {
      std::lock_guard lock(r.mu_);
      r.body.append(chunk);
      r.cv_.notify_all();
      return true;
    }
    void close() override {
      std::lock_guard lock(r.mu_);
      r.closed = true;
      r.cv_.notify_all();
    }
    Recorder& r;
  };
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace

TEST_CASE("sse: a stream replays after Last-Event-ID, carries what is published, ends with the hub") {
  auto hub = std::make_unique<mw::LocalBroadcast>();
  hub->publish("room", "one");
  hub->publish("room", "two\nlines");
  Env env;
  env.set("HTTP_LAST_EVENT_ID", "1");
  Response res = mw::sse_subscribe(env, *hub, "room", {.event = "chat"});
  REQUIRE(res.is_delayed());
  auto rec = std::make_shared<Recorder>();
  std::get<Delayed>(res.body)(Responder(rec));
  const std::string replayed = "retry: 2000\n\nevent: chat\nid: 2\ndata: two\ndata: lines\n\n";
  REQUIRE(rec->wait([&](const std::string& body, bool) { return body == replayed; }));
  hub->publish("room", "three");
  hub->publish("other", "not this");
  const std::string all = replayed + "event: chat\nid: 3\ndata: three\n\n";
  REQUIRE(rec->wait([&](const std::string& body, bool) { return body == all; }));
  CHECK(rec->status == 200);
  CHECK(rec->headers.get("Content-Type") == "text/event-stream; charset=utf-8");
  CHECK(rec->headers.get("Cache-Control") == "no-store");
  CHECK_FALSE(rec->closed);
  hub.reset();  // the stream ends with the hub: its writer closed
  CHECK(rec->wait([](const std::string&, bool closed) { return closed; }));
  CHECK(rec->body == all);
}
