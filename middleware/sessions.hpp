#pragma once
/// Sessions: a session per client, kept in a SessionStore and named by a cookie (Plack::Middleware::Session,
/// Starlette's SessionMiddleware). The app reads and writes `csgix.session` (csgi::Session::data) and asks
/// for changes through `csgix.session.options` (csgi::SessionOptions) or the helpers below:
///
///   csgi::Session* s = csgi::mw::Sessions::of(env);   // nullptr without the middleware
///   s->data["user"] = name;
///   csgi::mw::Sessions::rotate(env);                  // after login: a new id, the old one forgotten
///   csgi::mw::Sessions::expire(env);                  // logout: dropped, cookie removed
///
/// A cookie that is missing, unknown, expired, tampered with or malformed gives an empty session with a new
/// id, never an error. The session is saved (and the cookie set) when the app changed it, asked for a new
/// id, or when less than half of its lifetime is left; an untouched new session sets no cookie. When the
/// store fails (Redis down), the response becomes 503 with the reason.
/// Reads:  HTTP_COOKIE, csgi.url_scheme (Secure by default over https).
/// Writes: env csgix.session, csgix.session.options; response header Set-Cookie.
/// Order:  inside reverse_proxy (the scheme) and cors; outside csrf and rate_limit keyed by session.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "csgi/core/app.hpp"
#include "csgi/core/cookie.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/middleware/session_store.hpp"

namespace csgi::mw {

struct SessionsOptions {
  /// Where sessions live (required): CookieSessionStore, MemorySessionStore or RedisSessionStore.
  std::shared_ptr<SessionStore> store;
  std::string cookie_name = "csgi_session";
  /// Lifetime of a session after its last save, and the cookie's Max-Age.
  std::chrono::seconds ttl = std::chrono::hours(24 * 14);
  std::string path = "/";
  std::string domain;
  /// Secure attribute; unset: Secure when csgi.url_scheme is https.
  std::optional<bool> secure;
  bool http_only = true;
  SameSite same_site = SameSite::lax;
};

class Sessions {
public:
  /// Throws std::invalid_argument without a store, with a bad cookie name or a ttl under one second.
  explicit Sessions(App next, SessionsOptions options);
  Response operator()(Env& env);

  /// This request's session, or nullptr when no Sessions middleware is in front.
  static Session* of(Env& env) noexcept;
  /// Gives the session a new id at once (keeping the data; SessionOptions::id shows it) and has the old
  /// one forgotten when the response is sent: call after login.
  static void rotate(Env& env);
  /// Asks for the session to be dropped and its cookie removed: logout.
  static void expire(Env& env) noexcept;

private:
  App next_;
  SessionsOptions options_;
};

}  // namespace csgi::mw
