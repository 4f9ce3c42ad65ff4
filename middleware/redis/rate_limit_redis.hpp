#pragma once
/// RedisRateLimit: the buckets of RateLimit on Redis, so one limit holds across every worker and host.
/// Each take() is one round trip running a Lua script (EVALSHA, loaded on first use and again after a
/// SCRIPT FLUSH or restart), atomic in Redis: it reads the bucket hash "<prefix>ratelimit:<key>" (tokens,
/// time), refills it by Redis's own clock (TIME, so the hosts' clocks do not matter), takes one token
/// when there is one, and writes it back with an expiry of one window. Redis unreachable: take() throws
/// RedisError, which RateLimit answers with 503 (or lets through with fail_open).
#include <memory>
#include <mutex>

#include "csgi/middleware/rate_limit.hpp"
#include "csgi/middleware/redis/redis_client.hpp"

namespace csgi::mw {

class RedisRateLimit final : public RateLimitBackend {
public:
  explicit RedisRateLimit(std::shared_ptr<RedisClient> redis);
  RateLimitDecision take(std::string_view key, const RateLimitPolicy& policy) override;

private:
  std::shared_ptr<RedisClient> redis_;
  std::string sha_;  // SHA-1 of the script, as Redis names it
};

}  // namespace csgi::mw
