#include "csgi/middleware/sessions.hpp"

#include <stdexcept>

#include "csgi/core/on_response.hpp"

namespace csgi::mw {
namespace {

using Clock = std::chrono::system_clock;

/// What the callback needs once the app has answered; shared with it, as a delayed response may answer
/// after the env is gone.
struct State {
  Session session;
  SessionOptions asked;
  SessionData loaded;  // the data as loaded, to tell whether the app changed it
  std::string old_id;  // the id as loaded
  bool known = false;  // the cookie named a stored session
  bool had_cookie = false;  // the request carried the session cookie, valid or not
  Clock::time_point expires;
  bool https = false;
};

/// The response replaced by `status` with `reason` as its text body, whatever body kind it had.
BodyFilter replace(Response& r, int status, std::string reason) {
  r.status = status;
  r.headers = Headers{{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}};
  return [reason = std::move(reason)](std::string_view, bool eof) { return eof ? reason + "\n" : std::string(); };
}

}  // namespace

Sessions::Sessions(App next, SessionsOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Sessions: no next app");
  if (!options_.store) throw std::invalid_argument("Sessions: no store");
  if (!is_cookie_name(options_.cookie_name)) throw std::invalid_argument("Sessions: bad cookie name: " + options_.cookie_name);
  if (options_.ttl < std::chrono::seconds(1)) throw std::invalid_argument("Sessions: ttl under one second");
  SetCookie probe(options_.cookie_name, "");
  probe.path = options_.path;
  probe.domain = options_.domain;
  (void)probe.to_string();  // throws for a bad path or domain now rather than per request
}

Session* Sessions::of(Env& env) noexcept { return env.object<Session>(keys::x::session); }

void Sessions::rotate(Env& env) {
  if (auto* o = env.object<SessionOptions>(keys::x::session_options)) {
    o->change_id = true;
    o->id = random_token();
  }
}

void Sessions::expire(Env& env) noexcept {
  if (auto* o = env.object<SessionOptions>(keys::x::session_options)) o->expire = true;
}

Response Sessions::operator()(Env& env) {
  auto st = std::make_shared<State>();
  st->https = env.get(keys::url_scheme) == "https";
  Params cookies = parse_cookies(env.get(keys::HTTP_COOKIE));
  std::optional<LoadedSession> loaded;
  try {
    if (auto value = cookies.get(options_.cookie_name)) {
      st->had_cookie = true;
      loaded = options_.store->load(*value);
    }
  } catch (const std::exception& e) {
    return Response::text(503, std::string("Session store unavailable: ") + e.what() + "\n");
  }
  if (loaded) {
    st->known = true;
    st->asked.id = loaded->id;
    st->old_id = std::move(loaded->id);
    st->session.data = loaded->data;
    st->loaded = std::move(loaded->data);
    st->expires = loaded->expires;
  } else {
    st->asked.id = random_token();
  }
  env.set_object<Session>(keys::x::session, std::shared_ptr<Session>(st, &st->session));
  env.set_object<SessionOptions>(keys::x::session_options, std::shared_ptr<SessionOptions>(st, &st->asked));

  return on_response(next_(env), [this, st](Response& r) -> BodyFilter {
    SetCookie c(options_.cookie_name, "");
    c.path = options_.path;
    c.domain = options_.domain;
    c.secure = options_.secure.value_or(st->https);
    c.http_only = options_.http_only;
    c.same_site = options_.same_site;
    if (c.same_site == SameSite::none) c.secure = true;
    try {
      if (st->asked.expire) {
        if (st->known) options_.store->erase(st->old_id);
        if (st->had_cookie) r.headers.add("Set-Cookie", expire_cookie(c.name, c.path, c.domain).to_string());
        return nullptr;
      }
      if (st->asked.no_store) return nullptr;
      Clock::time_point now = Clock::now();
      bool changed = st->session.data != st->loaded;
      bool renew = st->known && st->expires - now < options_.ttl / 2;
      if (!st->asked.change_id && !changed && !renew) return nullptr;
      if (!st->known && st->session.data.empty() && !st->asked.change_id) return nullptr;
      if (st->asked.change_id && st->asked.id == st->old_id) st->asked.id = random_token();
      if (st->known && st->asked.id != st->old_id) options_.store->erase(st->old_id);
      c.value = options_.store->save(st->asked.id, st->session.data, now + options_.ttl);
      c.max_age = options_.ttl.count();
      r.headers.add("Set-Cookie", c.to_string());
      add_vary(r.headers, "Cookie");
      r.headers.set("Cache-Control", "private, no-store");
    } catch (const std::length_error& e) {
      return replace(r, 500, std::string("Session too large: ") + e.what());
    } catch (const std::exception& e) {
      return replace(r, 503, std::string("Session store unavailable: ") + e.what());
    }
    return nullptr;
  });
}

}  // namespace csgi::mw
