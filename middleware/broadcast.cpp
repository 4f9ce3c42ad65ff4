#include "csgi/middleware/broadcast.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "csgi/core/env.hpp"

namespace csgi::mw {

using MessagePtr = std::shared_ptr<const BroadcastMessage>;

namespace {

enum class End { none, cancelled, dropped, gone };

struct Sub {
  std::uint64_t id = 0;
  std::string topic;
  Subscriber fn;
  std::deque<MessagePtr> queue;
  std::uint64_t floor = 0;  // messages up to this id were queued when it started
  std::uint64_t skipped = 0;
  bool scheduled = false;       // in the run queue or being delivered
  std::thread::id delivering;   // the delivery thread inside its callbacks
  bool want_heartbeat = false;
  bool delivered = false;       // since the last heartbeat tick
  End end = End::none;
  std::string reason;           // why it was dropped
};
using SubPtr = std::shared_ptr<Sub>;

struct Topic {
  std::vector<SubPtr> subs;
  std::deque<MessagePtr> history;
};

}  // namespace

struct BroadcastState final : Subscription::Hub {
  explicit BroadcastState(BroadcastOptions o) : options(std::move(o)) {}

  const BroadcastOptions options;
  std::mutex mu;
  std::condition_variable cv;       // work for the delivery threads
  std::condition_variable done_cv;  // a delivery finished
  std::map<std::string, Topic, std::less<>> topics;
  std::unordered_map<std::uint64_t, SubPtr> subs;
  std::deque<SubPtr> runq;
  std::uint64_t last_sub = 0;
  std::uint64_t last_message = 0;
  bool stop = false;
  std::chrono::steady_clock::time_point next_tick;

  // All below with mu held.
  void schedule(const SubPtr& s) {
    if (s->scheduled) return;
    s->scheduled = true;
    runq.push_back(s);
    cv.notify_one();
  }
  /// Takes `s` out of its topic and the subscriber table.
  void remove(Sub& s) {
    subs.erase(s.id);
    auto t = topics.find(s.topic);
    if (t == topics.end()) return;
    std::erase_if(t->second.subs, [&](const SubPtr& p) { return p.get() == &s; });
    if (t->second.subs.empty() && t->second.history.empty()) topics.erase(t);
  }
  /// Forgets topics nobody subscribes to once there are more than options.idle_topics (`keep` stays).
  void sweep(std::string_view keep) {
    if (topics.size() <= options.idle_topics) return;
    std::erase_if(topics, [&](const auto& kv) { return kv.second.subs.empty() && kv.first != keep; });
  }
  void fan_out(std::string_view topic, std::uint64_t id, std::string_view data) {
    auto t = topics.find(topic);
    if (t == topics.end()) {
      if (options.history == 0) return;
      t = topics.emplace(std::string(topic), Topic{}).first;
      sweep(topic);
      t = topics.find(topic);
    }
    auto m = std::make_shared<const BroadcastMessage>(BroadcastMessage{id, std::string(topic), std::string(data)});
    Topic& tp = t->second;
    if (options.history != 0) {
      tp.history.push_back(m);
      if (tp.history.size() > options.history) tp.history.pop_front();
    }
    std::vector<SubPtr> slow;
    for (const SubPtr& s : tp.subs) {
      if (id <= s->floor) continue;
      if (s->queue.size() >= options.queue_limit) {
        if (options.overflow == Overflow::drop) {
          slow.push_back(s);
          continue;
        }
        s->queue.pop_front();
        ++s->skipped;
      }
      s->queue.push_back(m);
      schedule(s);
    }
    for (const SubPtr& s : slow) {
      s->end = End::dropped;
      s->reason = "too slow: " + std::to_string(options.queue_limit) + " messages waiting";
      s->queue.clear();
      remove(*s);
      schedule(s);  // its delivery thread tells it
    }
  }
  /// Ends subscription `id`; waits for a delivery to it running on another thread.
  void cancel(std::uint64_t id) noexcept override {
    Subscriber fn;  // destroyed after the lock: its captures may cancel other subscriptions
    std::unique_lock lock(mu);
    auto it = subs.find(id);
    if (it == subs.end()) return;
    SubPtr s = it->second;
    s->end = End::cancelled;
    s->queue.clear();
    remove(*s);
    if (!s->scheduled) fn = std::move(s->fn);
    if (s->delivering != std::this_thread::get_id())
      done_cv.wait(lock, [&] { return s->delivering == std::thread::id(); });
    lock.unlock();
  }
  /// A heartbeat for every subscriber that wants one and got nothing since the last tick.
  void tick(std::chrono::steady_clock::time_point now) {
    next_tick = now + options.heartbeat;
    for (auto& [id, s] : subs) {
      if (s->fn.heartbeat && !s->delivered) {
        s->want_heartbeat = true;
        schedule(s);
      }
      s->delivered = false;
    }
  }
  void run();
  void deliver(std::unique_lock<std::mutex>& lock, const SubPtr& s);
};

namespace {

/// Runs one callback of a subscriber: an exception ends the subscription with its message.
template <class F>
bool call_guarded(F&& f, std::string& why) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    why = std::string("subscriber failed: ") + e.what();
  } catch (...) {
    why = "subscriber failed";
  }
  return false;
}

}  // namespace

void BroadcastState::deliver(std::unique_lock<std::mutex>& lock, const SubPtr& s) {
  std::deque<MessagePtr> batch = std::move(s->queue);
  s->queue.clear();
  std::uint64_t skipped = std::exchange(s->skipped, 0);
  bool heartbeat = std::exchange(s->want_heartbeat, false);
  End end = s->end;
  std::string why = end == End::dropped ? s->reason : std::string();
  s->delivering = std::this_thread::get_id();
  lock.unlock();
  if (end == End::none) {
    bool alive = true;
    for (const MessagePtr& m : batch) {
      alive = call_guarded([&] { return s->fn.deliver(*m, std::exchange(skipped, 0)); }, why);
      if (!alive) break;
    }
    if (alive && heartbeat && batch.empty()) alive = call_guarded([&] { return s->fn.heartbeat(); }, why);
    if (!alive) {
      end = End::gone;
      if (why.empty()) why = "subscriber gone";
    }
  }
  Subscriber fn;
  lock.lock();
  s->delivering = std::thread::id();
  done_cv.notify_all();
  if (s->end == End::dropped && why.empty()) why = s->reason;
  if (!batch.empty()) s->delivered = true;
  if (end == End::gone && s->end == End::none) {
    s->end = End::gone;
    remove(*s);
  }
  if (s->end == End::none && (!s->queue.empty() || s->want_heartbeat)) {
    runq.push_back(s);
    return;
  }
  s->scheduled = false;
  if (s->end == End::none) return;
  fn = std::move(s->fn);
  bool tell = s->end != End::cancelled && fn.ended;
  lock.unlock();
  if (tell) call_guarded([&] { fn.ended(why); return true; }, why);
  fn = {};
  lock.lock();
}

void BroadcastState::run() {
  std::unique_lock lock(mu);
  while (!stop) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_tick) tick(now);
    if (runq.empty()) {
      cv.wait_until(lock, next_tick);
      continue;
    }
    SubPtr s = std::move(runq.front());
    runq.pop_front();
    deliver(lock, s);
  }
}

LocalBroadcast::LocalBroadcast(BroadcastOptions options) {
  if (options.queue_limit == 0) throw std::invalid_argument("LocalBroadcast: queue_limit must be at least 1");
  if (options.delivery_threads == 0) throw std::invalid_argument("LocalBroadcast: delivery_threads must be at least 1");
  if (options.heartbeat.count() <= 0) throw std::invalid_argument("LocalBroadcast: heartbeat must be positive");
  st_ = std::make_shared<BroadcastState>(std::move(options));
}

// The threads start in the process that first uses the hub: never in a prefork master that only builds
// the app, so none is lost at fork().
void LocalBroadcast::start_locked() {
  if (!threads_.empty()) return;
  st_->next_tick = std::chrono::steady_clock::now() + st_->options.heartbeat;
  for (std::size_t i = 0; i < st_->options.delivery_threads; ++i) threads_.emplace_back([st = st_.get()] { st->run(); });
}

LocalBroadcast::~LocalBroadcast() {
  {
    std::lock_guard lock(st_->mu);
    st_->stop = true;
  }
  st_->cv.notify_all();
  for (std::thread& t : threads_) {
    if (t.get_id() == std::this_thread::get_id()) t.detach();  // the last owner let go in a callback
    else t.join();
  }
  // Every subscription not cancelled ends now: the live ones and those dropped but not told yet.
  std::vector<SubPtr> left;
  {
    std::lock_guard lock(st_->mu);
    for (auto& [id, s] : st_->subs) left.push_back(s);
    for (const SubPtr& s : st_->runq)
      if (s->end == End::dropped) left.push_back(s);
    st_->subs.clear();
    st_->topics.clear();
    st_->runq.clear();
  }
  for (const SubPtr& s : left) {
    Subscriber fn = std::move(s->fn);
    std::string why = s->end == End::dropped ? s->reason : "broadcast stopped";
    if (fn.ended) call_guarded([&] { fn.ended(why); return true; }, why);
  }
}

std::uint64_t LocalBroadcast::publish(std::string_view topic, std::string_view data) {
  std::lock_guard lock(st_->mu);
  start_locked();
  std::uint64_t id = ++st_->last_message;
  st_->fan_out(topic, id, data);
  return id;
}

void LocalBroadcast::fan_out(std::string_view topic, std::uint64_t id, std::string_view data) {
  std::lock_guard lock(st_->mu);
  start_locked();
  st_->last_message = std::max(st_->last_message, id);
  st_->fan_out(topic, id, data);
}

Subscription LocalBroadcast::subscribe(std::string_view topic, Subscriber subscriber, std::optional<std::uint64_t> after) {
  return subscribe(topic, std::move(subscriber), after, std::vector<BroadcastMessage>{});
}

Subscription LocalBroadcast::subscribe(std::string_view topic, Subscriber subscriber,
                                       std::optional<std::uint64_t> after, std::vector<BroadcastMessage> kept) {
  if (!subscriber.deliver) throw std::invalid_argument("Broadcast: subscribe() needs a deliver callback");
  std::vector<MessagePtr> earlier;
  for (BroadcastMessage& m : kept)
    if (after && m.id > *after) earlier.push_back(std::make_shared<const BroadcastMessage>(std::move(m)));
  std::lock_guard lock(st_->mu);
  start_locked();
  auto s = std::make_shared<Sub>();
  s->id = ++st_->last_sub;
  s->topic = topic;
  s->fn = std::move(subscriber);
  auto t = st_->topics.find(topic);
  if (t == st_->topics.end()) t = st_->topics.emplace(std::string(topic), Topic{}).first;
  t->second.subs.push_back(s);
  st_->subs.emplace(s->id, s);
  if (after) {
    for (const MessagePtr& m : t->second.history)
      if (m->id > *after) earlier.push_back(m);
    std::stable_sort(earlier.begin(), earlier.end(),
                     [](const MessagePtr& a, const MessagePtr& b) { return a->id < b->id; });
    for (const MessagePtr& m : earlier)
      if (s->queue.empty() || s->queue.back()->id != m->id) s->queue.push_back(m);
    if (!s->queue.empty()) s->floor = s->queue.back()->id;
    while (s->queue.size() > st_->options.queue_limit) s->queue.pop_front();
    if (!s->queue.empty()) st_->schedule(s);
  }
  return Subscription(st_, s->id);
}

std::size_t LocalBroadcast::subscribers() const {
  std::lock_guard lock(st_->mu);
  return st_->subs.size();
}

Broadcasting::Broadcasting(App next, std::shared_ptr<Broadcast> hub) : next_(std::move(next)), hub_(std::move(hub)) {
  if (!next_) throw std::invalid_argument("Broadcasting: no next app");
  if (!hub_) throw std::invalid_argument("Broadcasting: no hub");
}

Response Broadcasting::operator()(Env& env) {
  env.set_object<Broadcast>(env_key, hub_.get());
  return next_(env);
}

Broadcast* Broadcasting::of(Env& env) noexcept { return env.object<Broadcast>(env_key); }

}  // namespace csgi::mw
