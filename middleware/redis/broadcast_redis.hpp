#pragma once
/// RedisBroadcast: a Broadcast shared by every process (workers and hosts) that uses the same Redis.
/// publish() is one round trip: a Lua script takes the next id from the counter "<prefix>broadcast:id"
/// and PUBLISHes "<id> <data>" on the channel "<prefix>broadcast:<topic>", so ids grow in the order Redis
/// saw the messages, the same in every process. A listener thread of the hub holds a connection of its
/// own, PSUBSCRIBEd to "<prefix>broadcast:*", and hands what comes to this process's subscribers (a
/// LocalBroadcast: the queues, delivery threads and history are the same). A message published here
/// reaches the local subscribers through Redis too, in the one order.
///
/// The same script appends the message to the topic's history, the list "<prefix>broadcast-history:<topic>"
/// (its last BroadcastOptions::history messages, expiring history_ttl after the last one), so a subscriber
/// starting after an id (SSE's Last-Event-ID) gets what it missed from any process and host, even one
/// that was not listening when it was published.
///
/// Redis down: publish() throws BroadcastError with the reason; a subscriber after an id gets this
/// process's own history; the listener reconnects with a backoff (RedisOptions::backoff_min doubling to
/// backoff_max). Live messages published while a listener is away do not reach its subscribers.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "csgi/middleware/broadcast.hpp"
#include "csgi/middleware/redis/redis_client.hpp"

namespace csgi::mw {

class RedisBroadcast final : public Broadcast {
public:
  /// Connects nothing yet: the listener starts (and connects in the background) when the hub is first
  /// used, in the process that uses it. Throws std::invalid_argument without a client.
  explicit RedisBroadcast(std::shared_ptr<RedisClient> redis, BroadcastOptions options = {});
  /// Stops the listener; live subscriptions end with "broadcast stopped".
  ~RedisBroadcast() override;
  std::uint64_t publish(std::string_view topic, std::string_view data) override;
  Subscription subscribe(std::string_view topic, Subscriber subscriber, std::optional<std::uint64_t> after = {}) override;
  /// True while the listener is subscribed; waits up to `wait` for it.
  bool listening(std::chrono::milliseconds wait = {});

private:
  void start_listener(bool wait);
  void listen();
  /// Reads messages from `c` until it fails or is shut down.
  void read_messages(redisContext* c);

  std::shared_ptr<RedisClient> redis_;
  std::string channel_prefix_;
  std::string history_prefix_;
  std::string history_, history_ttl_;  // BroadcastOptions::history and history_ttl, as script arguments
  LocalBroadcast local_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stop_ = false;
  redisContext* listener_ = nullptr;  // while subscribed
  std::thread thread_;                // started on first use, with mu_ held
};

}  // namespace csgi::mw
