// A chat of rooms for any number of hosts and workers sharing one Redis (docs/examples/chat.md):
// sessions for the name, a CSRF token for posting, a rate limit per session, WebSocket and SSE clients.
//   csgi serve --app build/examples/libchat.so --app-arg redis://127.0.0.1:6379 --workers 2
//   then open http://127.0.0.1:5000/ (without a redis:// argument everything stays in one process)
// Arguments: redis://… (sessions, rate limit and broadcast on Redis), cors=<origin> (or CHAT_CORS_ORIGIN).
#include <cstdlib>
#include <memory>
#include <string>

#include "csgi/core/app_library.hpp"
#include "csgi/core/json.hpp"
#include "csgi/core/request.hpp"
#include "csgi/middleware/broadcast_streams.hpp"
#include "csgi/middleware/cors.hpp"
#include "csgi/middleware/csrf.hpp"
#include "csgi/middleware/rate_limit.hpp"
#include "csgi/middleware/redis/broadcast_redis.hpp"
#include "csgi/middleware/redis/rate_limit_redis.hpp"
#include "csgi/middleware/redis/session_store_redis.hpp"
#include "csgi/middleware/router.hpp"
#include "csgi/middleware/sessions.hpp"
#include "page.hpp"

namespace {

namespace mw = csgi::mw;
using nlohmann::json;

struct Config {
  std::string redis_url;
  std::string cors_origin;
};

Config configure(const csgi::AppArgs& args) {
  Config c;
  if (const char* o = std::getenv("CHAT_CORS_ORIGIN")) c.cors_origin = o;
  for (const std::string& a : args) {
    if (a.starts_with("redis://")) c.redis_url = a;
    else if (a.starts_with("cors=")) c.cors_origin = a.substr(5);
    else throw std::invalid_argument("chat: unknown argument " + a + " (redis://host:port or cors=<origin>)");
  }
  return c;
}

/// The session's name, or "" before login.
std::string name_of(csgi::Env& env) {
  csgi::Session* s = mw::Sessions::of(env);
  auto it = s->data.find("name");
  return it == s->data.end() ? std::string() : it->second;
}

csgi::Response not_logged_in() { return csgi::json_response(401, {{"error", "not logged in: POST /login first"}}); }

/// The room of the request (?room=, default "lobby"), or "" when it is not a room name.
std::string room_of(csgi::Env& env) {
  std::string room(csgi::Request(env).query_parameters().get("room").value_or("lobby"));
  bool ok = !room.empty() && room.size() <= 64;
  for (char c : room) ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
  return ok ? room : std::string();
}

csgi::Response login(csgi::Env& env) {
  std::string name(csgi::Request(env).body_parameters().get("name").value_or(""));
  if (name.empty() || name.size() > 32 || !csgi::valid_utf8(name))
    return csgi::json_response(422, {{"error", "name: 1 to 32 bytes of UTF-8"}});
  mw::Sessions::of(env)->data["name"] = name;
  mw::Sessions::rotate(env);  // a new id at login
  return csgi::json_response(200, {{"name", name}});
}

csgi::Response say(csgi::Env& env) {
  mw::Broadcast& hub = *mw::Broadcasting::of(env);
  json in = csgi::read_json(env);
  if (!in.is_object() || !in.contains("text") || !in["text"].is_string() || in["text"].get_ref<const std::string&>().empty() ||
      in["text"].get_ref<const std::string&>().size() > 1000)
    return csgi::json_response(422, {{"error", "a message is {\"text\": 1 to 1000 bytes}"}});
  std::string room = room_of(env);
  if (room.empty()) return csgi::json_response(400, {{"error", "bad room name"}});
  try {
    std::uint64_t id = hub.publish("room:" + room, csgi::to_json_text({{"from", name_of(env)}, {"text", in["text"]}}));
    return csgi::json_response(202, {{"id", id}});
  } catch (const mw::BroadcastError& e) {
    return csgi::json_response(503, {{"error", std::string("chat unavailable: ") + e.what()}});
  }
}

/// /say: 401 before login, then the CSRF token (403), then the rate limit (429).
csgi::App say_route(std::shared_ptr<mw::RateLimitBackend> limits, const Config& c) {
  mw::RateLimitOptions rl;
  rl.policy = {20, std::chrono::seconds(10)};
  rl.key_by = mw::RateLimitOptions::KeyBy::session;
  rl.name = "say";
  rl.backend = std::move(limits);
  mw::CsrfOptions csrf;
  if (!c.cors_origin.empty()) csrf.trusted_origins = {c.cors_origin};
  csgi::App checked = csgi::wrap<mw::Csrf>(csgi::wrap<mw::RateLimit>(say, rl), csrf);
  return [checked](csgi::Env& env) { return name_of(env).empty() ? not_logged_in() : checked(env); };
}

csgi::Response listen_ws(csgi::Env& env, const Config& c) {
  std::string room = room_of(env);
  if (room.empty()) return csgi::json_response(400, {{"error", "bad room name"}});
  csgi::websocket::Handler h;
  h.max_message_bytes = 1024;
  if (!c.cors_origin.empty()) h.allowed_origins = {c.cors_origin};  // besides the page's own origin
  // Subscribed by now: the client may rely on every message posted after this one.
  h.on_open = [room](csgi::websocket::Connection& c) { c.send_text(csgi::to_json_text({{"joined", room}})); };
  return mw::websocket_subscribe(env, *mw::Broadcasting::of(env), "room:" + room, std::move(h));
}

csgi::Response listen_sse(csgi::Env& env) {
  std::string room = room_of(env);
  if (room.empty()) return csgi::json_response(400, {{"error", "bad room name"}});
  return mw::sse_subscribe(env, *mw::Broadcasting::of(env), "room:" + room);
}

csgi::App make_chat(const csgi::AppArgs& args) {
  Config c = configure(args);
  std::shared_ptr<mw::Broadcast> hub;
  mw::SessionsOptions sessions;
  std::shared_ptr<mw::RateLimitBackend> limits;
  if (!c.redis_url.empty()) {
    auto redis = std::make_shared<mw::RedisClient>(mw::RedisOptions::from_url(c.redis_url));
    hub = std::make_shared<mw::RedisBroadcast>(redis);
    sessions.store = std::make_shared<mw::RedisSessionStore>(redis);
    limits = std::make_shared<mw::RedisRateLimit>(redis);
  } else {
    hub = std::make_shared<mw::LocalBroadcast>();
    sessions.store = std::make_shared<mw::MemorySessionStore>();
  }
  csgi::App app = mw::Router()
                      .get("/", [](csgi::Env&) { return csgi::Response::html(200, std::string(chat_page)); })
                      .post("/login", login)
                      .get("/me", [](csgi::Env& env) {
                        std::string name = name_of(env);
                        return name.empty() ? not_logged_in() : csgi::json_response(200, {{"name", name}});
                      })
                      .get("/csrf", [](csgi::Env& env) {
                        return name_of(env).empty() ? not_logged_in() : csgi::json_response(200, {{"token", mw::Csrf::token(env)}});
                      })
                      .post("/say", say_route(limits, c))
                      .get("/ws", [c](csgi::Env& env) { return listen_ws(env, c); })
                      .get("/events", listen_sse);
  app = csgi::wrap<mw::Sessions>(std::move(app), sessions);
  app = csgi::wrap<mw::Broadcasting>(std::move(app), hub);  // holds the hub as long as the app lives
  if (!c.cors_origin.empty()) {
    mw::CorsOptions cors;
    cors.origins = {c.cors_origin};
    cors.methods = {"GET", "POST"};
    cors.headers = {"X-CSRF-Token", "Content-Type"};
    cors.credentials = true;
    app = csgi::wrap<mw::Cors>(std::move(app), cors);
  }
  return app;
}

}  // namespace

CSGI_APP(make_chat)
