// The server side of the web_mw suite (bench/suites/web_mw.sh): hello behind one middleware case, and a
// broadcast topic for WebSocket subscribers, served by `csgi serve --app libweb_mw_app.so`.
// Arguments:
//   case=NAME      bare (default), cors, sessions_cookie, sessions_cookie_encrypted, sessions_memory,
//                  sessions_redis, csrf (sessions on the memory store + csrf), rate_limit_memory,
//                  rate_limit_redis
//   redis://…      the Redis of the *_redis cases and of broadcast=redis
//   broadcast=redis  the hub is a RedisBroadcast (default: a LocalBroadcast of the process)
// Routes (every one behind the case's middleware):
//   GET /login     puts user=ann in the session and answers with its CSRF token (session cases)
//   any other path hello, "Hello, ann!" when the session has a user
//   GET /ws        a WebSocket subscribed to the topic "bench"; its first message is "ready"
//   POST /publish  publishes the body on "bench": 202, or 503 with the reason
#include <memory>
#include <stdexcept>
#include <string>

#include "csgi/core/app_library.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/middleware/broadcast_streams.hpp"
#include "csgi/middleware/cors.hpp"
#include "csgi/middleware/csrf.hpp"
#include "csgi/middleware/rate_limit.hpp"
#include "csgi/middleware/redis/broadcast_redis.hpp"
#include "csgi/middleware/redis/rate_limit_redis.hpp"
#include "csgi/middleware/redis/session_store_redis.hpp"
#include "csgi/middleware/sessions.hpp"

namespace {

namespace mw = csgi::mw;

struct Config {
  std::string name = "bare";
  std::string redis_url;
  bool redis_broadcast = false;
};

Config configure(const csgi::AppArgs& args) {
  Config c;
  for (const std::string& a : args) {
    if (a.starts_with("case=")) c.name = a.substr(5);
    else if (a.starts_with("redis://")) c.redis_url = a;
    else if (a == "broadcast=redis") c.redis_broadcast = true;
    else throw std::invalid_argument("web_mw_app: unknown argument " + a);
  }
  if ((c.redis_broadcast || c.name.ends_with("_redis")) && c.redis_url.empty())
    throw std::invalid_argument("web_mw_app: " + c.name + " needs a redis:// argument");
  return c;
}

csgi::Response publish(csgi::Env& env, mw::Broadcast& hub) {
  std::string body = env.input().read_all(4096);
  try {
    hub.publish("bench", body);
    return csgi::Response::text(202, "published\n");
  } catch (const mw::BroadcastError& e) {
    return csgi::Response::text(503, std::string("broadcast unavailable: ") + e.what() + "\n");
  }
}

csgi::App routes(std::shared_ptr<mw::Broadcast> hub) {
  return [hub](csgi::Env& env) {
    std::string_view path = env.get(csgi::keys::PATH_INFO);
    csgi::Session* s = mw::Sessions::of(env);
    if (path == "/ws") {
      csgi::websocket::Handler h;
      h.on_open = [](csgi::websocket::Connection& c) { c.send_text("ready"); };
      return mw::websocket_subscribe(env, *hub, "bench", std::move(h));
    }
    if (path == "/publish" && env.get(csgi::keys::REQUEST_METHOD) == "POST") return publish(env, *hub);
    if (path == "/login" && s) {
      s->data["user"] = "ann";
      return csgi::Response::text(200, mw::Csrf::token(env));
    }
    return csgi::Response::text(200, s && s->data.count("user") ? "Hello, ann!\n" : "Hello, World!\n");
  };
}

csgi::App with_sessions(csgi::App next, std::shared_ptr<mw::SessionStore> store) {
  mw::SessionsOptions o;
  o.store = std::move(store);
  return csgi::wrap<mw::Sessions>(std::move(next), o);
}

std::shared_ptr<mw::SessionStore> cookie_store(bool encrypt) {
  mw::CookieSessionStoreOptions o;
  o.secrets = {std::string(32, 'k')};
  o.encrypt = encrypt;
  return std::make_shared<mw::CookieSessionStore>(o);
}

csgi::App rate_limited(csgi::App next, std::shared_ptr<mw::RateLimitBackend> backend) {
  mw::RateLimitOptions o;
  o.policy = {1000000000, std::chrono::seconds(1)};
  o.backend = std::move(backend);
  return csgi::wrap<mw::RateLimit>(std::move(next), o);
}

csgi::App make_web_mw_app(const csgi::AppArgs& args) {
  Config c = configure(args);
  std::shared_ptr<mw::RedisClient> redis;
  if (!c.redis_url.empty()) redis = std::make_shared<mw::RedisClient>(mw::RedisOptions::from_url(c.redis_url));
  std::shared_ptr<mw::Broadcast> hub;
  if (c.redis_broadcast) hub = std::make_shared<mw::RedisBroadcast>(redis);
  else hub = std::make_shared<mw::LocalBroadcast>();
  csgi::App app = routes(hub);
  if (c.name == "bare") return app;
  if (c.name == "cors") {
    mw::CorsOptions o;
    o.origins = {"https://app.example"};
    o.methods = {"GET", "POST"};
    o.headers = {"X-CSRF-Token", "Content-Type"};
    o.credentials = true;
    return csgi::wrap<mw::Cors>(std::move(app), o);
  }
  if (c.name == "sessions_cookie") return with_sessions(std::move(app), cookie_store(false));
  if (c.name == "sessions_cookie_encrypted") return with_sessions(std::move(app), cookie_store(true));
  if (c.name == "sessions_memory") return with_sessions(std::move(app), std::make_shared<mw::MemorySessionStore>());
  if (c.name == "sessions_redis") return with_sessions(std::move(app), std::make_shared<mw::RedisSessionStore>(redis));
  if (c.name == "csrf") return with_sessions(csgi::wrap<mw::Csrf>(std::move(app)), std::make_shared<mw::MemorySessionStore>());
  if (c.name == "rate_limit_memory") return rate_limited(std::move(app), nullptr);
  if (c.name == "rate_limit_redis") return rate_limited(std::move(app), std::make_shared<mw::RedisRateLimit>(redis));
  throw std::invalid_argument("web_mw_app: unknown case " + c.name);
}

}  // namespace

CSGI_APP(make_web_mw_app)
