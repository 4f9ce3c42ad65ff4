#pragma once
/// RateLimit: a token bucket per key — the client address (as reverse_proxy leaves REMOTE_ADDR), the
/// session, or a request header — holding `limit` requests and refilled at `limit` per `window`. A request
/// finding the bucket empty gets 429 with Retry-After; every answer carries the RateLimit-Policy and
/// RateLimit fields (draft-ietf-httpapi-ratelimit-headers). Buckets live in a RateLimitBackend: in this
/// process (MemoryRateLimit, bounded) or on Redis for every worker and host (rate_limit_redis.hpp).
/// Reads:  REMOTE_ADDR, or csgix.session and csgix.session.options, or the configured header.
/// Writes: response headers RateLimit-Policy, RateLimit, Retry-After (429).
/// Order:  inside reverse_proxy (the client address) and sessions when keyed by session; outside the app
///         and anything costly it protects.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"
#include "csgi/middleware/lru_shards.hpp"

namespace csgi::mw {

struct RateLimitPolicy {
  std::uint32_t limit = 60;            // bucket size: requests allowed at once
  std::chrono::seconds window{60};     // time to refill an empty bucket
};

struct RateLimitDecision {
  bool allowed = true;
  std::uint64_t remaining = 0;          // whole requests left after this one
  std::chrono::seconds reset{0};        // until the bucket is full again
  std::chrono::seconds retry_after{0};  // when refused: until one request is allowed again
};

class RateLimitBackend {
public:
  virtual ~RateLimitBackend() = default;
  /// Takes one request from the bucket of `key` (a full bucket when new). Thread-safe. Throws
  /// std::runtime_error when the backend cannot be reached.
  virtual RateLimitDecision take(std::string_view key, const RateLimitPolicy& policy) = 0;
};

/// The token bucket itself, for backends that keep the state: `tokens` left at `elapsed` seconds after
/// the last update (a new bucket: tokens = limit). Returns the decision and updates `tokens`.
RateLimitDecision take_token(double& tokens, double elapsed, const RateLimitPolicy& policy);
/// The decision (remaining, reset, retry_after) for a bucket left with `tokens` after the request was
/// `allowed` or not; for backends that run the bucket elsewhere (Redis's Lua script).
RateLimitDecision rate_limit_decision(bool allowed, double tokens, const RateLimitPolicy& policy);

class MemoryRateLimit final : public RateLimitBackend {
public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  /// At most `max_keys` buckets (LruShards: the least recently used is dropped, i.e. refilled).
  explicit MemoryRateLimit(std::size_t max_keys = 100000, Clock clock = {});
  RateLimitDecision take(std::string_view key, const RateLimitPolicy& policy) override;
  std::size_t size() const { return buckets_.size(); }

private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at;
  };
  LruShards<Bucket> buckets_;
  Clock clock_;
};

struct RateLimitOptions {
  RateLimitPolicy policy;
  enum class KeyBy { client_address, session, header };
  KeyBy key_by = KeyBy::client_address;
  /// The header for KeyBy::header ("X-API-Key"); a request without it is keyed by its address.
  std::string header;
  /// Names the policy in the headers and the keys; limits with different names count apart.
  std::string name = "default";
  /// Where the buckets live; default: a MemoryRateLimit of this middleware.
  std::shared_ptr<RateLimitBackend> backend;
  /// When the backend fails: let the request through (true) or answer 503 with the reason (false).
  bool fail_open = false;
};

class RateLimit {
public:
  /// Throws std::invalid_argument for a zero limit or window, a bad header or name.
  explicit RateLimit(App next, RateLimitOptions options = {});
  /// With KeyBy::session, throws std::logic_error when no Sessions middleware is in front.
  Response operator()(Env& env);

  /// The bucket key of this request ("<name>:addr:127.0.0.1", "<name>:session:<id>", "<name>:header:<value>").
  std::string key(Env& env) const;

private:
  App next_;
  RateLimitOptions options_;
  std::string env_header_;
  std::string policy_field_;  // the RateLimit-Policy value
};

}  // namespace csgi::mw
