#pragma once
/// The escaping of an access-log line's text, as the access_log middleware (middleware/access_log.hpp)
/// writes it under every adapter. A text field is
/// escaped as nginx escapes it: `"`, `\`, control bytes and bytes ≥ 0x7f become `\xHH`, so no client
/// can close a quoted field, forge another one or start a new line.
#include <array>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>

#include "csgi/core/env.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

namespace log_detail {
/// Bytes left as they are: printable ASCII but `"` and `\`.
inline constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x7f; ++c) t[c] = c != '"' && c != '\\';
  return t;
}();

/// True when none of the 8 bytes in `w` needs escaping (each test is exact for "some byte is ...").
[[gnu::always_inline]] inline bool eight_plain(std::uint64_t w) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  auto has_zero = [&](std::uint64_t x) { return (x - ones) & ~x & highs; };
  std::uint64_t control = (w - ones * 0x20) & ~w & highs;  // a byte below 0x20
  return !(control | (w & highs) | has_zero(w ^ (ones * 0x7f)) | has_zero(w ^ (ones * '"')) |
           has_zero(w ^ (ones * '\\')));
}

/// Where the run of plain bytes of `s` starting at `i` ends.
inline std::size_t plain_run_end(std::string_view s, std::size_t i) noexcept {
  std::uint64_t w;
  for (; i + 8 <= s.size(); i += 8) {
    std::memcpy(&w, s.data() + i, 8);
    if (!eight_plain(w)) break;
  }
  if (i < s.size() && s.size() >= 8 && s.size() - i < 8) {  // a tail: its last eight bytes, overlapping
    std::memcpy(&w, s.data() + s.size() - 8, 8);
    if (eight_plain(w)) return s.size();
  }
  while (i < s.size() && plain_bytes[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}
}  // namespace log_detail

/// Appends `s` to `out` (anything with append(const char*, std::size_t): std::string, a line buffer)
/// escaped as above. Runs of plain bytes are copied at once.
template <class Out>
void append_log_escaped(Out& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t plain_end = log_detail::plain_run_end(s, i);
    out.append(s.data() + i, plain_end - i);
    if (plain_end == s.size()) break;
    auto c = static_cast<unsigned char>(s[plain_end]);
    const char esc[4] = {'\\', 'x', hex_upper[c >> 4], hex_upper[c & 15]};
    out.append(esc, 4);
    i = plain_end + 1;
  }
}

/// `s` escaped as above; "-" when empty (a missing field of the combined format).
std::string log_escaped(std::string_view s);

}  // namespace csgi
