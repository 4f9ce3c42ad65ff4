#include "csgi/middleware/redis/session_store_redis.hpp"

#include <algorithm>
#include <charconv>

namespace csgi::mw {
namespace {
bool is_session_id(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
}  // namespace

RedisSessionStore::RedisSessionStore(std::shared_ptr<RedisClient> redis) : redis_(std::move(redis)) {
  if (!redis_) throw std::invalid_argument("RedisSessionStore: no Redis client");
}

std::string RedisSessionStore::key(std::string_view id) const { return redis_->options().prefix + "session:" + std::string(id); }

std::optional<LoadedSession> RedisSessionStore::load(std::string_view cookie) {
  if (!is_session_id(cookie)) return std::nullopt;  // never a query for what a client made up
  RedisReply r = redis_->command({"GET", key(cookie)});
  if (r.type != RedisReply::Type::string) return std::nullopt;
  std::string_view v = r.str;
  std::size_t nl = v.find('\n');
  if (nl == std::string_view::npos) return std::nullopt;
  long long secs = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + nl, secs);
  if (ec != std::errc() || p != v.data() + nl) return std::nullopt;
  auto expires = std::chrono::system_clock::time_point(std::chrono::seconds(secs));
  if (expires <= std::chrono::system_clock::now()) return std::nullopt;
  auto data = decode_session(v.substr(nl + 1));
  if (!data) return std::nullopt;
  return LoadedSession{std::string(cookie), std::move(*data), expires};
}

std::string RedisSessionStore::save(const std::string& id, const SessionData& data,
                                    std::chrono::system_clock::time_point expires) {
  using namespace std::chrono;
  auto ms = std::max<std::int64_t>(1, duration_cast<milliseconds>(expires - system_clock::now()).count());
  std::string value = std::to_string(duration_cast<seconds>(expires.time_since_epoch()).count()) + "\n" + encode_session(data);
  redis_->command({"SET", key(id), value, "PX", std::to_string(ms)});
  return id;
}

void RedisSessionStore::erase(const std::string& id) {
  if (is_session_id(id)) redis_->command({"DEL", key(id)});
}

}  // namespace csgi::mw
