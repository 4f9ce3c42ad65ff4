#include "csgi/middleware/redis/rate_limit_redis.hpp"

#include <openssl/sha.h>

#include <cstdlib>

#include "csgi/core/text.hpp"

namespace csgi::mw {
namespace {

// KEYS[1] the bucket; ARGV limit, window (s). Returns {allowed (0/1), tokens left (text)}.
constexpr std::string_view script = R"lua(
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then tokens = limit; at = now end
tokens = math.min(limit, tokens + math.max(0, now - at) * limit / window)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
return {allowed, string.format('%.17g', tokens)}
)lua";

std::string sha1_hex(std::string_view s) {
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  std::string out;
  for (unsigned char c : d) {
    out += hex_lower[c >> 4];
    out += hex_lower[c & 0xf];
  }
  return out;
}

}  // namespace

RedisRateLimit::RedisRateLimit(std::shared_ptr<RedisClient> redis) : redis_(std::move(redis)), sha_(sha1_hex(script)) {
  if (!redis_) throw std::invalid_argument("RedisRateLimit: no Redis client");
}

RateLimitDecision RedisRateLimit::take(std::string_view key, const RateLimitPolicy& policy) {
  std::string k = redis_->options().prefix + "ratelimit:" + std::string(key);
  std::string limit = std::to_string(policy.limit), window = std::to_string(policy.window.count());
  RedisReply r;
  try {
    r = redis_->command({"EVALSHA", sha_, "1", k, limit, window});
  } catch (const RedisError& e) {
    if (std::string_view(e.what()).find("NOSCRIPT") == std::string_view::npos) throw;
    r = redis_->command({"EVAL", script, "1", k, limit, window});  // loads it for the next EVALSHA
  }
  if (r.type != RedisReply::Type::array || r.elements.size() != 2 || r.elements[1].type != RedisReply::Type::string)
    throw RedisError("Redis: unexpected reply from the rate-limit script");
  return rate_limit_decision(r.elements[0].integer == 1, std::strtod(r.elements[1].str.c_str(), nullptr), policy);
}

}  // namespace csgi::mw
