#include "csgi/middleware/rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "csgi/core/extensions.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {
namespace {

std::chrono::seconds ceil_seconds(double s) { return std::chrono::seconds(static_cast<std::int64_t>(std::ceil(std::max(0.0, s)))); }

}  // namespace

RateLimitDecision take_token(double& tokens, double elapsed, const RateLimitPolicy& policy) {
  double limit = policy.limit;
  double rate = limit / static_cast<double>(policy.window.count());
  tokens = std::min(limit, tokens + std::max(0.0, elapsed) * rate);
  bool allowed = tokens >= 1.0;
  if (allowed) tokens -= 1.0;
  return rate_limit_decision(allowed, tokens, policy);
}

RateLimitDecision rate_limit_decision(bool allowed, double tokens, const RateLimitPolicy& policy) {
  double limit = policy.limit;
  double rate = limit / static_cast<double>(policy.window.count());
  RateLimitDecision d;
  d.allowed = allowed;
  d.remaining = static_cast<std::uint64_t>(std::floor(tokens));
  d.reset = ceil_seconds((limit - tokens) / rate);
  if (!d.allowed) d.retry_after = std::max(std::chrono::seconds(1), ceil_seconds((1.0 - tokens) / rate));
  return d;
}

MemoryRateLimit::MemoryRateLimit(std::size_t max_keys, Clock clock) : buckets_(max_keys), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

RateLimitDecision MemoryRateLimit::take(std::string_view key, const RateLimitPolicy& policy) {
  auto now = clock_();
  return buckets_.apply(key, [&](Bucket& b, bool fresh) {
    double elapsed = fresh ? 0.0 : std::chrono::duration<double>(now - b.at).count();
    if (fresh) b.tokens = policy.limit;
    b.at = now;
    return take_token(b.tokens, elapsed, policy);
  });
}

RateLimit::RateLimit(App next, RateLimitOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("RateLimit: no next app");
  if (options_.policy.limit == 0 || options_.policy.window.count() <= 0)
    throw std::invalid_argument("RateLimit: limit and window must be positive");
  if (!is_token(options_.name)) throw std::invalid_argument("RateLimit: bad name: " + options_.name);
  if (options_.key_by == RateLimitOptions::KeyBy::header) {
    if (!is_token(options_.header)) throw std::invalid_argument("RateLimit: bad header name: " + options_.header);
    env_header_ = "HTTP_" + options_.header;
    for (char& c : env_header_) c = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  }
  if (!options_.backend) options_.backend = std::make_shared<MemoryRateLimit>();
  policy_field_ = "\"" + options_.name + "\";q=" + std::to_string(options_.policy.limit) +
                  ";w=" + std::to_string(options_.policy.window.count());
}

std::string RateLimit::key(Env& env) const {
  using K = RateLimitOptions::KeyBy;
  if (options_.key_by == K::session) {
    Session* s = env.object<Session>(keys::x::session);
    auto* o = env.object<SessionOptions>(keys::x::session_options);
    if (!s || !o) throw std::logic_error("RateLimit: keyed by session but no session (put Sessions in front)");
    if (!s->data.empty()) return options_.name + ":session:" + o->id;
  } else if (options_.key_by == K::header) {
    if (std::string_view v = env.get(env_header_); !v.empty()) return options_.name + ":header:" + std::string(v);
  }
  return options_.name + ":addr:" + std::string(env.get(keys::REMOTE_ADDR));
}

Response RateLimit::operator()(Env& env) {
  RateLimitDecision d;
  try {
    d = options_.backend->take(key(env), options_.policy);
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::exception& e) {
    if (options_.fail_open) return next_(env);
    Response r = Response::text(503, std::string("Rate limit unavailable: ") + e.what() + "\n");
    r.headers.add("Retry-After", "1");
    return r;
  }
  std::string state = "\"" + options_.name + "\";r=" + std::to_string(d.remaining) + ";t=" + std::to_string(d.reset.count());
  if (!d.allowed) {
    Response r = Response::text(429, "Too Many Requests: more than " + std::to_string(options_.policy.limit) + " in " +
                                         std::to_string(options_.policy.window.count()) + " s\n");
    r.headers.add("Retry-After", std::to_string(d.retry_after.count()));
    r.headers.add("RateLimit-Policy", policy_field_);
    r.headers.add("RateLimit", state);
    return r;
  }
  return on_headers(next_(env), [this, state = std::move(state)](Response& r) {
    r.headers.set("RateLimit-Policy", policy_field_);
    r.headers.set("RateLimit", state);
  });
}

}  // namespace csgi::mw
