#include "csgi/core/cookie.hpp"

#include <stdexcept>

#include "csgi/core/http_date.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

// What browsers send as a cookie name: no controls, whitespace, quotes, separators of the header.
bool acceptable_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (is_ctl(c) || c == ' ' || c == '"' || c == ',' || c == ';' || c == '=' || c == '\\') return false;
  return true;
}

constexpr bool cookie_octet(unsigned char c) noexcept {
  return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) || (c >= 0x3c && c <= 0x5b) ||
         (c >= 0x5d && c <= 0x7e);
}

// What a Set-Cookie value keeps as it is: cookie-octets other than '%', which starts an escape.
constexpr ByteSet kValueBytes = [] {
  ByteSet t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = cookie_octet(static_cast<unsigned char>(c)) && c != '%';
  return t;
}();

void check_attribute(std::string_view what, std::string_view v) {
  for (unsigned char c : v)
    if (is_ctl(c) || c == ';') throw std::invalid_argument("Set-Cookie " + std::string(what) + " holds ';' or a control character");
}

}  // namespace

bool is_cookie_name(std::string_view name) noexcept { return is_token(name); }

void parse_cookies_into(std::string_view h, Params& out) {
  std::size_t i = 0;
  const std::size_t n = h.size();
  while (i < n) {
    while (i < n && (is_space(h[i]) || h[i] == ';')) ++i;
    if (i >= n) break;
    std::size_t name_start = i;
    while (i < n && h[i] != '=' && h[i] != ';') ++i;
    if (i >= n || h[i] != '=') continue;  // no '=': a bad pair, skipped
    std::string_view name = trim_ows(h.substr(name_start, i - name_start));
    ++i;  // '='
    while (i < n && is_space(h[i])) ++i;
    std::string value;
    bool ok = acceptable_name(name);
    if (i < n && h[i] == '"') {
      // A quoted value: up to the closing quote, backslash escapes removed.
      std::size_t j = i + 1;
      std::string inner;
      bool closed = false;
      for (; j < n; ++j) {
        if (h[j] == '\\' && j + 1 < n) {
          inner.push_back(h[++j]);
        } else if (h[j] == '"') {
          closed = true;
          break;
        } else {
          inner.push_back(h[j]);
        }
      }
      if (closed) {
        value = percent_decode_lenient(inner);
        i = j + 1;
        // Anything between the closing quote and the next separator makes the pair malformed.
        std::size_t semi = h.find(';', i);
        if (semi == std::string_view::npos) semi = n;
        if (!trim_ows(h.substr(i, semi - i)).empty()) ok = false;
        i = semi;
      } else {
        std::size_t semi = h.find(';', i);
        if (semi == std::string_view::npos) semi = n;
        value = percent_decode_lenient(trim_ows(h.substr(i, semi - i)));
        i = semi;
      }
    } else {
      std::size_t semi = h.find(';', i);
      if (semi == std::string_view::npos) semi = n;
      value = percent_decode_lenient(trim_ows(h.substr(i, semi - i)));
      i = semi;
    }
    if (ok) out.add(name, value);
  }
}

Params parse_cookies(std::string_view header) {
  Params p;
  parse_cookies_into(header, p);
  return p;
}

std::string SetCookie::to_string() const {
  if (!is_cookie_name(name)) throw std::invalid_argument("Set-Cookie: invalid cookie name \"" + name + "\"");
  check_attribute("path", path);
  check_attribute("domain", domain);
  if (same_site == SameSite::none && !secure)
    throw std::invalid_argument("Set-Cookie " + name + ": SameSite=None requires Secure");
  if (partitioned && !secure) throw std::invalid_argument("Set-Cookie " + name + ": Partitioned requires Secure");
  std::string out;
  out.reserve(name.size() + value.size() + 64);
  out += name;
  out.push_back('=');
  percent_encode_to(out, value, kValueBytes);
  if (!path.empty()) out.append("; Path=").append(path);
  if (!domain.empty()) out.append("; Domain=").append(domain);
  if (expires) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(expires->time_since_epoch()).count();
    out.append("; Expires=").append(http_date(static_cast<std::time_t>(secs)));
  }
  if (max_age) out.append("; Max-Age=").append(std::to_string(*max_age < 0 ? 0 : *max_age));
  if (secure) out.append("; Secure");
  if (http_only) out.append("; HttpOnly");
  switch (same_site) {
    case SameSite::lax: out.append("; SameSite=Lax"); break;
    case SameSite::strict: out.append("; SameSite=Strict"); break;
    case SameSite::none: out.append("; SameSite=None"); break;
    case SameSite::unset: break;
  }
  if (partitioned) out.append("; Partitioned");
  return out;
}

SetCookie expire_cookie(std::string name, std::string path, std::string domain) {
  SetCookie c;
  c.name = std::move(name);
  c.path = std::move(path);
  c.domain = std::move(domain);
  c.max_age = 0;
  c.expires = std::chrono::system_clock::time_point{};
  return c;
}

}  // namespace csgi
