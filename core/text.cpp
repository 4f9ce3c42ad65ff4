#include "csgi/core/text.hpp"

namespace csgi {

namespace {

// Eight bytes of `a` and `b` equal but for the case of ASCII letters: where they differ, only in bit
// 0x20, and there a letter (a non-ASCII byte never is). Per byte, with no carry between bytes: the
// bytes compared with 'a' and 'z' have their high bit cleared first.
bool iequal_words(std::uint64_t x, std::uint64_t y) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  std::uint64_t d = x ^ y;
  if (d == 0) return true;
  if (d & ~(0x20 * ones)) return false;
  std::uint64_t differ = (d << 2) & highs;  // the high bit of each byte that differs
  if (x & differ) return false;
  std::uint64_t low = (x | 0x20 * ones) & ~highs;
  std::uint64_t at_least_a = low + (0x80 - 'a') * ones;
  std::uint64_t above_z = low + (0x80 - 'z' - 1) * ones;
  return (differ & ~(at_least_a & ~above_z)) == 0;
}

}  // namespace

bool iequals_same_size(const char* a, const char* b, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (!iequal_words(x, y)) return false;
  }
  if (i == n) return true;
  std::uint64_t x = 0, y = 0;
  std::memcpy(&x, a + i, n - i);
  std::memcpy(&y, b + i, n - i);
  return iequal_words(x, y);
}

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

bool iends_with(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool list_has_token(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    std::uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;  // continuation byte, C0/C1 (overlong 2-byte), or F5+
    }
    if (end - p <= n) return false;
    for (int i = 1; i <= n; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;  // overlong
    if (cp >= 0xd800 && cp <= 0xdfff) return false;                      // surrogate
    if (cp > 0x10ffff) return false;
    p += n + 1;
  }
  return true;
}

}  // namespace csgi
