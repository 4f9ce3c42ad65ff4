#pragma once
/// Broadcast: publish/subscribe on topics for WebSocket connections and Server-Sent Events streams.
///
///   auto hub = std::make_shared<csgi::mw::LocalBroadcast>();   // or RedisBroadcast (redis/broadcast_redis.hpp)
///   builder.use<csgi::mw::Broadcasting>(hub);                  // the app finds it as Broadcasting::of(env)
///   hub->publish("room:lobby", R"({"text":"hi"})");
///   csgi::mw::Subscriber s;
///   s.deliver = [](const csgi::mw::BroadcastMessage& m, std::uint64_t skipped) { ...; return true; };
///   csgi::mw::Subscription sub = hub->subscribe("room:lobby", std::move(s));
///
/// A subscriber has its own bounded queue; publish() only appends to the queues of the topic's
/// subscribers and never waits for one. The hub's delivery threads empty the queues, calling each
/// subscriber's callbacks one at a time and in order (never two at once for one subscriber). A subscriber
/// whose queue is full when a message comes is either dropped (Overflow::drop: its `ended` callback says
/// why, and a WebSocket is closed with 1013 / an SSE stream ends, so the client reconnects) or misses the
/// oldest queued message (Overflow::skip_oldest: `skipped` counts them).
///
/// Every message has an id, increasing per hub (per channel with Redis, shared by every process), and
/// each topic keeps its last `history` messages, so a subscriber can start after a given id (SSE's
/// Last-Event-ID) and get what it missed first, as far as the history reaches.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/broadcast.hpp"
#include "csgi/core/keys.hpp"

namespace csgi::mw {

using csgi::Broadcast;
using csgi::BroadcastError;
using csgi::BroadcastMessage;
using csgi::Subscriber;
using csgi::Subscription;

enum class Overflow { drop, skip_oldest };

struct BroadcastOptions {
  /// Messages that may wait for one subscriber.
  std::size_t queue_limit = 256;
  Overflow overflow = Overflow::drop;
  /// Messages kept per topic for subscribers that start after an id.
  std::size_t history = 64;
  /// How long a topic's history outlives its last message on a shared channel (RedisBroadcast).
  std::chrono::seconds history_ttl{3600};
  /// Topics whose history is kept while nobody subscribes (beyond: such topics are forgotten).
  std::size_t idle_topics = 1024;
  std::chrono::milliseconds heartbeat{15000};
  std::size_t delivery_threads = 2;
};

struct BroadcastState;

/// The hub of one process: topics, subscribers, their queues and the delivery threads, which start when
/// the hub is first used (a hub made in a prefork master before fork() starts them in each worker; one
/// must not be used both before a fork() and after it).
class LocalBroadcast final : public Broadcast {
public:
  /// Throws std::invalid_argument for a zero queue_limit, delivery_threads or heartbeat.
  explicit LocalBroadcast(BroadcastOptions options = {});
  /// Stops the delivery threads; live subscriptions end with "broadcast stopped".
  ~LocalBroadcast() override;
  std::uint64_t publish(std::string_view topic, std::string_view data) override;
  Subscription subscribe(std::string_view topic, Subscriber subscriber, std::optional<std::uint64_t> after = {}) override;
  /// subscribe() after `after`, with the messages a shared channel kept (`kept`, RedisBroadcast) beside this
  /// process's history: what either holds with a greater id comes first, once each and in id order, and
  /// fan_out() gives the subscription only messages with greater ids than those.
  Subscription subscribe(std::string_view topic, Subscriber subscriber, std::optional<std::uint64_t> after,
                         std::vector<BroadcastMessage> kept);
  /// Hands this process's subscribers a message whose id a shared channel gave (RedisBroadcast).
  void fan_out(std::string_view topic, std::uint64_t id, std::string_view data);
  /// Subscriptions alive now.
  std::size_t subscribers() const;

private:
  void start_locked();

  std::shared_ptr<BroadcastState> st_;
  std::vector<std::thread> threads_;  // started on first use, with st_->mu held
};

/// Puts a Broadcast in the env for the app (csgix.broadcast, spec EXT-12).
/// Reads:  nothing. Writes: env csgix.broadcast (csgi::Broadcast).
/// Order:  anywhere in front of the apps that publish or subscribe.
class Broadcasting {
public:
 static constexpr std::string_view env_key = keys::x::broadcast;  // object csgi::Broadcast

 /// Throws std::invalid_argument without a hub.
 Broadcasting(App next, std::shared_ptr<Broadcast> hub);
 Response operator()(Env& env);
 /// The hub, or nullptr when no Broadcasting middleware is in front.
 static Broadcast* of(Env& env) noexcept;

private:
  App next_;
  std::shared_ptr<Broadcast> hub_;
};

}  // namespace csgi::mw
