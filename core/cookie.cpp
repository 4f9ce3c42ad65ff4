#include "csgi/core/cookie.hpp"

#include <stdexcept>

#include "csgi/core/http_date.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

int hexval(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// What browsers send as a cookie name: no controls, whitespace, quotes, separators of the header.
bool acceptable_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (is_ctl(c) || c == ' ' || c == '"' || c == ',' || c == ';' || c == '=' || c == '\\') return false;
  return true;
}

// Percent-decodes valid %XX escapes; anything else is kept as it is (a Cookie header never throws).
std::string lenient_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < s.size() + 0 && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool cookie_octet(unsigned char c) noexcept {
  return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) || (c >= 0x3c && c <= 0x5b) ||
         (c >= 0x5d && c <= 0x7e);
}

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
        value = lenient_decode(inner);
        i = j + 1;
        // Anything between the closing quote and the next separator makes the pair malformed.
        std::size_t semi = h.find(';', i);
        if (semi == std::string_view::npos) semi = n;
        if (!trim_ows(h.substr(i, semi - i)).empty()) ok = false;
        i = semi;
      } else {
        std::size_t semi = h.find(';', i);
        if (semi == std::string_view::npos) semi = n;
        value = lenient_decode(trim_ows(h.substr(i, semi - i)));
        i = semi;
      }
    } else {
      std::size_t semi = h.find(';', i);
      if (semi == std::string_view::npos) semi = n;
      value = lenient_decode(trim_ows(h.substr(i, semi - i)));
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
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size() + value.size() + 64);
  out += name;
  out.push_back('=');
  for (unsigned char c : value) {
    if (cookie_octet(c) && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
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
