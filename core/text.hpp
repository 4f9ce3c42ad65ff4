#pragma once
/// Small text helpers shared by core, middleware and adapters: the one place for HTTP token characters
/// and case-insensitive comparison. (Case-sensitive prefix and suffix tests are std::string_view's
/// starts_with and ends_with.)
#include <array>
#include <string>
#include <string_view>

namespace csgi {

namespace text_detail {
inline constexpr std::array<bool, 256> tchar_table = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 'a' + 'A'] = true;
  for (unsigned char c : std::string_view("!#$%&'*+-.^_`|~")) t[c] = true;
  return t;
}();
}  // namespace text_detail

/// RFC 9110 §5.6.2 tchar: a character of a token (a method, a field name, a cookie name).
constexpr bool is_tchar(char c) noexcept { return text_detail::tchar_table[static_cast<unsigned char>(c)]; }

/// A non-empty RFC 9110 token: tchar only.
constexpr bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

/// An RFC 5234 CTL: a control character (0x00–0x1f) or DEL.
constexpr bool is_ctl(char c) noexcept {
  auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

/// `s` holds a control character; a horizontal tab counts as one only when `allow_tab` is false
/// (field values may hold tabs, request targets may not).
constexpr bool has_ctl(std::string_view s, bool allow_tab) noexcept {
  for (char c : s)
    if (is_ctl(c) && !(allow_tab && c == '\t')) return true;
  return false;
}

/// `path` is `prefix` or lies under it: `prefix` followed by '/' (a mount point, a directory). An empty
/// prefix holds every path; "/a" holds "/a" and "/a/b" but not "/ab".
constexpr bool within_prefix(std::string_view path, std::string_view prefix) noexcept {
  return path.starts_with(prefix) &&
         (prefix.empty() || path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/');
}

/// Case-insensitive ASCII comparison (header names, tokens).
bool iequals(std::string_view a, std::string_view b) noexcept;
/// `s` starts with `prefix`, ASCII case-insensitively.
bool istarts_with(std::string_view s, std::string_view prefix) noexcept;
/// `s` ends with `suffix`, ASCII case-insensitively.
bool iends_with(std::string_view s, std::string_view suffix) noexcept;

/// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
std::string_view trim_ows(std::string_view s) noexcept;
/// ASCII lower-case copy.
std::string to_lower(std::string_view s);
/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view s);

}  // namespace csgi
