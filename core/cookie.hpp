#pragma once
/// Cookies (RFC 6265): reading the Cookie request header and writing Set-Cookie response headers.
///
///   csgi::Params c = csgi::parse_cookies(env.get(csgi::keys::HTTP_COOKIE));
///   c.get("sid");                       // the first "sid" (the most specific path comes first)
///
///   csgi::SetCookie sc{"sid", "abc"};
///   sc.path = "/"; sc.http_only = true; sc.same_site = csgi::SameSite::lax; sc.max_age = 3600;
///   res.headers.add("Set-Cookie", sc.to_string());
///
/// Values are percent-encoded on the way out (every byte outside RFC 6265's cookie-octet, and '%') and
/// percent-decoded on the way in, so any bytes round-trip. Pairs are separated by ';' only, as browsers
/// send them (RFC 6265 §4.2.1): a ',' is part of the value it stands in ("x=a,b=c" is one cookie "x"), so
/// no value can smuggle a pair of its own; ENV-9 joins repeated Cookie fields with "; " for that reason.
/// Reading is lenient: pairs without '=' or with
/// an empty or invalid name are skipped, a '%' not followed by two hex digits is kept as it is, a
/// double-quoted value loses its quotes; nothing in a Cookie header makes parse_cookies() throw.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "csgi/core/query.hpp"

namespace csgi {

/// Parses a Cookie header ("a=1; b=2") into ordered pairs; repeats are kept in order.
Params parse_cookies(std::string_view header);
/// Appends the pairs of `header` to `out`.
void parse_cookies_into(std::string_view header, Params& out);

enum class SameSite : std::uint8_t { unset, lax, strict, none };

/// One Set-Cookie header. to_string() throws std::invalid_argument for a name that is not an RFC 9110
/// token, a domain or path holding ';' or control characters, or SameSite=None without Secure.
struct SetCookie {
  SetCookie() = default;
  SetCookie(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}

  std::string name;
  std::string value;
  std::string path;
  std::string domain;
  /// Expires attribute (written as an HTTP date).
  std::optional<std::chrono::system_clock::time_point> expires;
  /// Max-Age attribute in seconds (0 or negative: delete now).
  std::optional<std::int64_t> max_age;
  bool secure = false;
  bool http_only = false;
  SameSite same_site = SameSite::unset;
  /// CHIPS' Partitioned attribute (requires Secure).
  bool partitioned = false;

  std::string to_string() const;
};

/// A Set-Cookie that removes cookie `name` (empty value, Max-Age=0, Expires in 1970) for `path`/`domain`.
SetCookie expire_cookie(std::string name, std::string path = "/", std::string domain = {});

/// True when `name` is a valid cookie name (an RFC 9110 token).
bool is_cookie_name(std::string_view name) noexcept;

}  // namespace csgi
