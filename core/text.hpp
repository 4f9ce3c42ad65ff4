#pragma once
/// Small text helpers shared by core, middleware and adapters: the one place for HTTP token characters,
/// hex digits, OWS trimming and case-insensitive comparison. (Case-sensitive prefix and suffix tests are std::string_view's
/// starts_with and ends_with.)
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

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
/// (field values may hold tabs, request targets may not). Eight bytes at a time: a word with no byte
/// below 0x20 and none equal to 0x7f is passed whole; any other is looked at byte by byte.
constexpr bool has_ctl(std::string_view s, bool allow_tab) noexcept {
  std::size_t i = 0;
  if (!std::is_constant_evaluated()) {
    constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= s.size(); i += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      std::uint64_t del = w ^ (0x7f * ones);
      // A byte below 0x20 (with its high bit clear), or a zero byte of w ^ 0x7f..: a byte equal to 0x7f.
      if ((((w - 0x20 * ones) & ~w) | ((del - ones) & ~del)) & highs) {
        for (std::size_t j = i; j < i + 8; ++j)
          if (is_ctl(s[j]) && !(allow_tab && s[j] == '\t')) return true;
      }
    }
  }
  for (; i < s.size(); ++i)
    if (is_ctl(s[i]) && !(allow_tab && s[i] == '\t')) return true;
  return false;
}

/// `path` is `prefix` or lies under it: `prefix` followed by '/' (a mount point, a directory). An empty
/// prefix holds every path; "/a" holds "/a" and "/a/b" but not "/ab".
constexpr bool within_prefix(std::string_view path, std::string_view prefix) noexcept {
  return path.starts_with(prefix) &&
         (prefix.empty() || path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/');
}

/// The value of hex digit `c` (0–15), or -1 for any other byte.
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Hex digits by value: upper case (percent-encoding, RFC 3986 §2.1; \xNN in logs) and lower case.
inline constexpr std::string_view hex_upper = "0123456789ABCDEF";
inline constexpr std::string_view hex_lower = "0123456789abcdef";

/// Case-insensitive ASCII comparison (header names, tokens).
bool iequals_same_size(const char* a, const char* b, std::size_t n) noexcept;
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && iequals_same_size(a.data(), b.data(), a.size());
}
/// `s` starts with `prefix`, ASCII case-insensitively.
bool istarts_with(std::string_view s, std::string_view prefix) noexcept;
/// `s` ends with `suffix`, ASCII case-insensitively.
bool iends_with(std::string_view s, std::string_view suffix) noexcept;

/// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
std::string_view trim_ows(std::string_view s) noexcept;
/// True when the comma-separated list `list` ("a, b,c") holds `token`, ASCII case-insensitively.
bool list_has_token(std::string_view list, std::string_view token) noexcept;
/// ASCII lower-case copy.
std::string to_lower(std::string_view s);
/// True when `s` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s) noexcept;
/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view s);

}  // namespace csgi
