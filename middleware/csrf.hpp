#pragma once
/// Csrf: cross-site request forgery protection for unsafe methods (anything but GET, HEAD, OPTIONS, TRACE),
/// in two layers, as Django's CsrfViewMiddleware and Go's CrossOriginProtection do:
///   1. where the request comes from: Sec-Fetch-Site must be same-origin or none; without it, an Origin
///      header must name this site (scheme://Host); an origin in `trusted_origins` passes either check;
///   2. a per-session token: the X-CSRF-Token header (or the csrf_token form field) must be the token
///      kept in the session, masked (as Csrf::token(env) gives it to pages and scripts) or not.
/// A request failing either gets 403 with the reason; the app is not called.
/// Reads:  REQUEST_METHOD, HTTP_SEC_FETCH_SITE, HTTP_ORIGIN, HTTP_HOST, csgi.url_scheme, the token header,
///         the form body (through csgi::Request, which keeps it for the app), csgix.session.
/// Writes: the session key "csrf.token" ("<session id> <token>").
/// Order:  inside sessions (it needs csgix.session) and cors (a preflight needs no token).
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct CsrfOptions {
  std::string header = "X-CSRF-Token";
  /// Form field of urlencoded and multipart bodies; empty: the header only.
  std::string form_field = "csrf_token";
  /// Origins besides this site's own that may send unsafe requests ("https://app.example.com").
  std::vector<std::string> trusted_origins;
};

class Csrf {
public:
  static constexpr std::string_view session_key = "csrf.token";

  /// Throws std::invalid_argument for a header name that is not a token.
  explicit Csrf(App next, CsrfOptions options = {});
  /// Throws std::logic_error when no Sessions middleware is in front.
  Response operator()(Env& env);

  /// This session's token for a page or script, masked anew on every call (64 hex digits: a random pad
  /// and the pad XOR the token, so that no two responses carry the same bytes, against BREACH). The token
  /// itself (32 hex digits) is made and stored in the session on first use; a request may send either
  /// form. It is bound to the session id: after Sessions::rotate (login) the session gets a new token and
  /// the old one fails. Throws std::logic_error without a Sessions middleware in front.
  static std::string token(Env& env);

private:
  bool trusted(std::string_view origin) const;
  /// The reason to refuse where the request comes from, or "" to go on.
  std::string_view origin_problem(Env& env) const;

  App next_;
  CsrfOptions options_;
  std::string env_header_;  // HTTP_X_CSRF_TOKEN
};

}  // namespace csgi::mw
