#pragma once
/// csgi::Broadcast, the publish/subscribe hub an app finds under `csgix.broadcast` (spec EXT-12):
/// topics that WebSocket connections and Server-Sent Events streams subscribe to. The hubs are in
/// middleware/ (LocalBroadcast for one process, RedisBroadcast for every process and host sharing a
/// Redis); the Broadcasting middleware puts one in the env.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace csgi {

struct BroadcastMessage {
  std::uint64_t id = 0;
  std::string topic;
  std::string data;
};

/// What a subscription does with its messages. Each callback runs on a delivery thread of the hub, never
/// two at once for one subscriber; one that throws ends the subscription.
struct Subscriber {
  /// One message; `skipped` messages were lost before it (the hub's overflow rule). False: the subscriber
  /// is gone (a closed connection), the subscription ends.
  std::function<bool(const BroadcastMessage&, std::uint64_t skipped)> deliver;
  /// Called when nothing was delivered for a heartbeat interval (optional); false ends the subscription.
  std::function<bool()> heartbeat;
  /// Called once when the subscription ends by itself (gone, dropped for being slow, the hub stopped),
  /// with the reason; not after Subscription::cancel().
  std::function<void(std::string_view reason)> ended;
};

/// The channel cannot take a message now (Redis down): the reason.
class BroadcastError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A subscription's handle: destroying it (or cancel()) unsubscribes; detach() leaves the subscription to
/// end by itself (its subscriber gone, dropped, or the hub stopped). Movable, usable from any thread.
/// cancel() waits for a callback of the subscriber running on another thread, so that what the callbacks
/// use may go once it returns (called from inside one of its own callbacks, it returns at once; two
/// subscriptions' callbacks that cancel each other on two delivery threads would wait for each other).
class Subscription {
 public:
  /// What a hub gives its subscriptions to end them by.
  struct Hub {
    virtual ~Hub() = default;
    virtual void cancel(std::uint64_t id) noexcept = 0;
  };

  Subscription() = default;
  Subscription(std::weak_ptr<Hub> hub, std::uint64_t id) noexcept : hub_(std::move(hub)), id_(id) {}
  Subscription(Subscription&& o) noexcept { *this = std::move(o); }
  Subscription& operator=(Subscription&& o) noexcept {
    if (this != &o) {
      cancel();
      hub_ = std::move(o.hub_);
      id_ = o.id_;
      o.hub_.reset();
    }
    return *this;
  }
  ~Subscription() { cancel(); }
  void cancel() noexcept {
    if (auto h = hub_.lock()) h->cancel(id_);
    hub_.reset();
  }
  void detach() noexcept { hub_.reset(); }

 private:
  std::weak_ptr<Hub> hub_;
  std::uint64_t id_ = 0;
};

class Broadcast {
 public:
  virtual ~Broadcast() = default;
  /// Sends `data` to every subscriber of `topic` (in every process sharing the channel); returns its id.
  /// Never waits for a subscriber. Throws BroadcastError when the channel cannot take it.
  virtual std::uint64_t publish(std::string_view topic, std::string_view data) = 0;
  /// Subscribes to `topic`; with `after`, the kept messages with a greater id come first. Throws
  /// std::invalid_argument without a deliver callback.
  virtual Subscription subscribe(std::string_view topic, Subscriber subscriber,
                                 std::optional<std::uint64_t> after = {}) = 0;
};

}  // namespace csgi
