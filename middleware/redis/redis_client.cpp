#include "csgi/middleware/redis/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <memory>

namespace csgi::mw {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::array;
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default: break;
  }
  return out;
}

using ReplyPtr = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

/// Runs argv on `c`; nullptr on a connection error (c->errstr says why).
ReplyPtr run(redisContext* c, std::initializer_list<std::string_view> argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (std::string_view a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  void* r = redisCommandArgv(c, static_cast<int>(ptrs.size()), ptrs.data(), lens.data());
  return ReplyPtr(static_cast<redisReply*>(r), freeReplyObject);
}

}  // namespace

RedisOptions RedisOptions::from_url(std::string_view url) {
  RedisOptions o;
  constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) throw std::invalid_argument("not a redis:// URL: " + std::string(url));
  std::string_view rest = url.substr(scheme.size());
  if (std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view auth = rest.substr(0, at);
    if (std::size_t colon = auth.find(':'); colon != std::string_view::npos) auth = auth.substr(colon + 1);
    o.password = auth;
    rest = rest.substr(at + 1);
  }
  if (std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty()) {
      auto [p, ec] = std::from_chars(db.data(), db.data() + db.size(), o.db);
      if (ec != std::errc() || p != db.data() + db.size() || o.db < 0) throw std::invalid_argument("bad Redis db: " + std::string(db));
    }
  }
  std::size_t colon = rest.rfind(':');
  std::string_view host = colon == std::string_view::npos ? rest : rest.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = rest.substr(colon + 1);
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), o.port);
    if (ec != std::errc() || p != port.data() + port.size() || o.port <= 0 || o.port > 65535)
      throw std::invalid_argument("bad Redis port: " + std::string(port));
  }
  if (host.empty()) throw std::invalid_argument("no Redis host in " + std::string(url));
  o.host = host;
  return o;
}

RedisClient::RedisClient(RedisOptions options) : options_(std::move(options)) {
  if (options_.max_connections == 0) throw std::invalid_argument("RedisClient: max_connections must be at least 1");
}

RedisClient::~RedisClient() {
  for (redisContext* c : idle_) redisFree(c);
}

redisContext* RedisClient::connect() {
  timeval tv = to_timeval(options_.connect_timeout);
  redisContext* c = redisConnectWithTimeout(options_.host.c_str(), options_.port, tv);
  std::string why;
  if (!c) {
    why = "cannot allocate a Redis context";
  } else if (c->err) {
    why = c->errstr;
  } else {
    redisSetTimeout(c, to_timeval(options_.command_timeout));
    if (!options_.password.empty()) {
      ReplyPtr r = run(c, {"AUTH", options_.password});
      if (!r) why = c->errstr;
      else if (r->type == REDIS_REPLY_ERROR) why = std::string(r->str, r->len);
    }
    if (why.empty() && options_.db != 0) {
      ReplyPtr r = run(c, {"SELECT", std::to_string(options_.db)});
      if (!r) why = c->errstr;
      else if (r->type == REDIS_REPLY_ERROR) why = std::string(r->str, r->len);
    }
  }
  if (why.empty()) return c;
  if (c) redisFree(c);
  throw RedisError("Redis at " + options_.host + ":" + std::to_string(options_.port) + ": " + why);
}

redisContext* RedisClient::acquire(bool& reused) {
  std::unique_lock lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now < down_until_) throw RedisError(last_error_ + " (retrying in " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(down_until_ - now).count()) + " ms)");
  if (!idle_cv_.wait_for(lock, options_.command_timeout, [&] { return !idle_.empty() || open_ < options_.max_connections; }))
    throw RedisError("Redis: all " + std::to_string(options_.max_connections) + " connections busy");
  if (!idle_.empty()) {
    redisContext* c = idle_.back();
    idle_.pop_back();
    reused = true;
    return c;
  }
  ++open_;
  lock.unlock();
  try {
    redisContext* c = connect();
    std::lock_guard again(mu_);
    backoff_ = std::chrono::milliseconds(0);
    return c;
  } catch (const RedisError& e) {
    std::lock_guard again(mu_);
    --open_;
    backoff_ = backoff_.count() == 0 ? options_.backoff_min : std::min(options_.backoff_max, backoff_ * 2);
    down_until_ = std::chrono::steady_clock::now() + backoff_;
    last_error_ = e.what();
    idle_cv_.notify_one();
    throw;
  }
}

void RedisClient::release(redisContext* c, bool healthy) {
  std::lock_guard lock(mu_);
  if (healthy) {
    idle_.push_back(c);
  } else {
    redisFree(c);
    --open_;
  }
  idle_cv_.notify_one();
}

RedisReply RedisClient::command(std::initializer_list<std::string_view> argv) {
  ReplyPtr r(nullptr, freeReplyObject);
  for (int attempt = 0; !r; ++attempt) {
    bool reused = false;
    redisContext* c = acquire(reused);
    r = run(c, argv);
    if (r) {
      release(c, true);
      break;
    }
    std::string why = "Redis at " + options_.host + ":" + std::to_string(options_.port) + ": " + c->errstr;
    release(c, false);
    // A pooled connection may have died with a restarted server: one more try on a new connection.
    if (!reused || attempt > 0) throw RedisError(why);
  }
  if (r->type == REDIS_REPLY_ERROR) throw RedisError("Redis: " + std::string(r->str, r->len));
  return convert(r.get());
}

}  // namespace csgi::mw
