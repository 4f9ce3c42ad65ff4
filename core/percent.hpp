#pragma once
/// Percent-encoding (RFC 3986 §2.1): the one encoder and decoder of core, middleware, adapters and
/// bindings, and the removal of dot segments that makes a decoded request path canonical (ENV-5).
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "csgi/core/text.hpp"

namespace csgi {

/// The bytes an encoder leaves as they are (by byte value); every other byte becomes %XX.
using ByteSet = std::array<bool, 256>;

/// ASCII letters and digits and the bytes of `extra`.
constexpr ByteSet alnum_and(std::string_view extra) noexcept {
  ByteSet t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 'a' + 'A'] = true;
  for (char c : extra) t[static_cast<unsigned char>(c)] = true;
  return t;
}

namespace uri {
/// RFC 3986 §2.3 unreserved: a name, key or value encoded whole.
inline constexpr ByteSet unreserved = alnum_and("-._~");
/// Unreserved and '/': a path whose slashes separate segments, with nothing else kept.
inline constexpr ByteSet unreserved_slash = alnum_and("-._~/");
/// RFC 3986 §3.3 pchar and '/': a path as a request target carries it.
inline constexpr ByteSet path = alnum_and("-._~!$&'()*+,;=:@/");
/// RFC 3986 §3.4: a query.
inline constexpr ByteSet query = alnum_and("-._~!$&'()*+,;=:@/?");
}  // namespace uri

/// The byte the escape "%XX" at s[i] stands for, or -1 when s[i] is not a '%' followed by two hex digits.
constexpr int escape_at(std::string_view s, std::size_t i) noexcept {
  if (i + 2 >= s.size() || s[i] != '%') return -1;
  int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/// True when `s` contains a '%' not followed by two hex digits.
bool has_bad_escape(std::string_view s) noexcept;
/// Decodes %XX once; with plus_as_space also '+' → ' ' (form encoding). Throws csgi::BadRequest for a '%'
/// not followed by two hex digits.
std::string percent_decode(std::string_view s, bool plus_as_space = false);
/// Decodes into `out` (which must hold s.size() bytes); returns the decoded length. Throws like above.
std::size_t percent_decode_to(std::string_view s, char* out, bool plus_as_space = false);
/// Decodes the valid %XX escapes and keeps any other byte, a stray '%' included: for text that must
/// never be refused (a Cookie header).
std::string percent_decode_lenient(std::string_view s);

/// Appends `s` to `out` with each byte outside `keep` as %XX (upper-case hex). With keep_escapes a valid
/// escape already in `s` passes as it is (a query string that may hold some), else its '%' is encoded.
void percent_encode_to(std::string& out, std::string_view s, const ByteSet& keep, bool keep_escapes = false);
/// `s` encoded as by percent_encode_to.
std::string percent_encode(std::string_view s, const ByteSet& keep = uri::unreserved);

/// True when `path` holds a "." or ".." segment ("/./", "/../", or "/." or "/.." at the end).
bool has_dot_segment(std::string_view path) noexcept;
/// Removes dot segments in place (RFC 3986 §5.2.4) from a decoded path that starts with '/' ("" and any
/// other path are left as they are): a "." segment vanishes, a ".." segment removes the segment before it,
/// and a path ending in either keeps its trailing '/' ("/a/b/.." → "/a/"). Repeated slashes are kept.
/// Returns the new length. Throws csgi::BadRequest when a ".." would climb above the root ("/..") or
/// would remove an empty segment ("/a//.."): servers that merge slashes (nginx) resolve that to another
/// path than servers that keep them, so no single answer is safe.
std::size_t remove_dot_segments(char* path, std::size_t n);

}  // namespace csgi
