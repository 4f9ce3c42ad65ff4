#include "csgi/middleware/redis/broadcast_redis.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <optional>

namespace csgi::mw {
namespace {

// KEYS[1] the id counter, KEYS[2] the topic's history list; ARGV channel, data, messages kept, seconds
// kept. Returns the message id.
constexpr std::string_view script = R"lua(
local id = redis.call('INCR', KEYS[1])
local m = id .. ' ' .. ARGV[2]
redis.call('PUBLISH', ARGV[1], m)
local n = tonumber(ARGV[3])
if n > 0 then
  redis.call('RPUSH', KEYS[2], m)
  redis.call('LTRIM', KEYS[2], -n, -1)
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
return id
)lua";

/// The id and data of a "<id> <data>" payload.
std::optional<std::pair<std::uint64_t, std::string_view>> parsed(std::string_view payload) {
  std::uint64_t id = 0;
  auto [p, ec] = std::from_chars(payload.data(), payload.data() + payload.size(), id);
  if (ec != std::errc() || p == payload.data() + payload.size() || *p != ' ') return std::nullopt;
  return std::pair{id, payload.substr(p + 1 - payload.data())};
}

/// `s` with the glob characters of a PSUBSCRIBE pattern escaped.
std::string glob_escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string_view text_of(const redisReply* r) {
  return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? std::string_view(r->str, r->len)
                                                                                : std::string_view{};
}

}  // namespace

RedisBroadcast::RedisBroadcast(std::shared_ptr<RedisClient> redis, BroadcastOptions options)
    : redis_(std::move(redis)), local_(options) {
  if (!redis_) throw std::invalid_argument("RedisBroadcast: no Redis client");
  channel_prefix_ = redis_->options().prefix + "broadcast:";
  history_prefix_ = redis_->options().prefix + "broadcast-history:";
  history_ = std::to_string(options.history);
  history_ttl_ = std::to_string(std::max<std::int64_t>(1, options.history_ttl.count()));
}

// As LocalBroadcast's threads, the listener starts in the process that first uses the hub (not in a
// prefork master). The first subscriber waits for it (at most connect_timeout), so that what is published
// right after it subscribed reaches it.
void RedisBroadcast::start_listener(bool wait) {
  std::unique_lock lock(mu_);
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { listen(); });
  if (wait) cv_.wait_for(lock, redis_->options().connect_timeout, [&] { return listener_ != nullptr || stop_; });
}

RedisBroadcast::~RedisBroadcast() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (listener_) ::shutdown(listener_->fd, SHUT_RDWR);  // ends the blocking read
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t RedisBroadcast::publish(std::string_view topic, std::string_view data) {
  start_listener(false);
  std::string channel = channel_prefix_ + std::string(topic);
  try {
    RedisReply r = redis_->command({"EVAL", script, "2", channel_prefix_ + "id", history_prefix_ + std::string(topic),
                                    channel, data, history_, history_ttl_});
    if (r.type != RedisReply::Type::integer) throw RedisError("Redis: unexpected reply from the broadcast script");
    return static_cast<std::uint64_t>(r.integer);
  } catch (const RedisError& e) {
    throw BroadcastError(e.what());
  }
}

// The listener first: a message published after the history is read then reaches this process (the
// local hub takes it once, whether it came in the history, live, or both).
Subscription RedisBroadcast::subscribe(std::string_view topic, Subscriber subscriber,
                                       std::optional<std::uint64_t> after) {
  start_listener(true);
  std::vector<BroadcastMessage> kept;
  if (after && history_ != "0") {
    try {
      RedisReply r = redis_->command({"LRANGE", history_prefix_ + std::string(topic), "0", "-1"});
      for (const RedisReply& e : r.elements)
        if (auto m = parsed(e.str))
          kept.push_back(BroadcastMessage{m->first, std::string(topic), std::string(m->second)});
    } catch (const RedisError&) {
      // Redis down: this process's own history only.
    }
  }
  return local_.subscribe(topic, std::move(subscriber), after, std::move(kept));
}

bool RedisBroadcast::listening(std::chrono::milliseconds wait) {
  start_listener(false);
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, wait, [&] { return listener_ != nullptr || stop_; }) && listener_ != nullptr;
}

void RedisBroadcast::listen() {
  const RedisOptions& o = redis_->options();
  std::chrono::milliseconds backoff{0};
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    redisContext* c = nullptr;
    try {
      c = redis_->connect();
      redisSetTimeout(c, timeval{0, 0});  // a subscriber waits for messages as long as it takes
      redisEnableKeepAlive(c);
      std::string pattern = glob_escaped(channel_prefix_) + "*";
      const char* argv[] = {"PSUBSCRIBE", pattern.c_str()};
      std::size_t lens[] = {10, pattern.size()};
      auto* r = static_cast<redisReply*>(redisCommandArgv(c, 2, argv, lens));
      bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 && text_of(r->element[0]) == "psubscribe";
      if (r) freeReplyObject(r);
      if (!ok) {
        redisFree(c);
        c = nullptr;
      }
    } catch (const RedisError&) {
      c = nullptr;
    }
    lock.lock();
    if (c) {
      if (!stop_) {
        listener_ = c;
        backoff = std::chrono::milliseconds(0);
        cv_.notify_all();
        lock.unlock();
        read_messages(c);
        lock.lock();
        listener_ = nullptr;
      }
      redisFree(c);
    }
    if (stop_) break;
    backoff = backoff.count() == 0 ? o.backoff_min : std::min(o.backoff_max, backoff * 2);
    cv_.wait_for(lock, backoff, [&] { return stop_; });
  }
  cv_.notify_all();
}

void RedisBroadcast::read_messages(redisContext* c) {
  void* raw = nullptr;
  while (redisGetReply(c, &raw) == REDIS_OK && raw) {
    auto* r = static_cast<redisReply*>(raw);
    // ["pmessage", pattern, channel, "<id> <data>"]
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 && text_of(r->element[0]) == "pmessage") {
      std::string_view channel = text_of(r->element[2]);
      auto m = parsed(text_of(r->element[3]));
      if (m && channel.starts_with(channel_prefix_))
        local_.fan_out(channel.substr(channel_prefix_.size()), m->first, m->second);
    }
    freeReplyObject(r);
  }
}

}  // namespace csgi::mw
