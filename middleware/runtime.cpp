#include "csgi/middleware/runtime.hpp"

#include <bit>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "csgi/core/on_response.hpp"

namespace csgi::mw {

namespace {

/// `seconds` in microseconds, rounded to the nearest (ties to even) as "%.6f" rounds, computed exactly from
/// the double's bits; nullopt outside 2^-40 s .. 2^40 s (those take the general path).
std::optional<std::uint64_t> rounded_micros(double seconds) {
  auto bits = std::bit_cast<std::uint64_t>(seconds);
  int exponent = static_cast<int>(bits >> 52 & 0x7FF);
  if (bits >> 63 || exponent < 1023 - 40 || exponent > 1023 + 40) return std::nullopt;
  // seconds = mantissa * 2^-shift exactly, so seconds * 10^6 = mantissa * 10^6 / 2^shift.
  std::uint64_t mantissa = (bits & ((std::uint64_t{1} << 52) - 1)) | std::uint64_t{1} << 52;
  int shift = 1075 - exponent;  // 12 .. 92
  unsigned __int128 scaled = static_cast<unsigned __int128>(mantissa) * 1000000u;
  auto micros = static_cast<std::uint64_t>(scaled >> shift);
  unsigned __int128 rest = scaled & ((static_cast<unsigned __int128>(1) << shift) - 1);
  unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
  if (rest > half || (rest == half && micros % 2 == 1)) ++micros;
  return micros;
}

}  // namespace

std::string runtime_text(double seconds) {
  if (auto micros = rounded_micros(seconds)) {
    char buf[32];
    auto whole = std::to_chars(buf, buf + sizeof buf, *micros / 1000000).ptr;
    *whole = '.';
    char* frac = whole + 1;
    std::uint64_t f = *micros % 1000000;
    for (int i = 5; i >= 0; --i, f /= 10) frac[i] = static_cast<char>('0' + f % 10);
    return std::string(buf, frac + 6);
  }
  char buf[400];  // the longest double in fixed notation with six decimals fits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, seconds, std::chars_format::fixed, 6);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

Runtime::Runtime(App next, RuntimeOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Runtime: no next app");
  if (options_.header.empty()) throw std::invalid_argument("Runtime: empty header name");
}

Response Runtime::operator()(Env& env) {
  auto start = std::chrono::steady_clock::now();
  return on_response(next_(env), [start, this](Response& r) -> BodyFilter {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    r.headers.set(options_.header, runtime_text(took.count()));
    return nullptr;
  });
}

}  // namespace csgi::mw
