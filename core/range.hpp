#pragma once
/// Range requests (RFC 9110 §14): parsing `Range: bytes=…` against a representation size. Used by
/// csgi::mw::Ranges (middleware/ranges.hpp), which the static app calls; adapters never range.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace csgi {

struct ByteRange {
  std::uint64_t first = 0;  // inclusive
  std::uint64_t last = 0;   // inclusive
  std::uint64_t length() const noexcept { return last - first + 1; }
};

struct RangeResult {
  enum class Kind {
    ignore,         // no usable Range: send the whole representation (200)
    satisfiable,    // send `ranges` (206); one range, or several for multipart/byteranges
    unsatisfiable,  // 416 with Content-Range: bytes */size
  };
  Kind kind = Kind::ignore;
  std::vector<ByteRange> ranges;  // sorted, overlapping and adjacent ranges merged
};

/// Parses a Range header. Syntax errors and units other than bytes are ignored (RFC 9110 §14.2).
/// More than `max_ranges` ranges, or ranges that add up to more than the size, are ignored too (the whole
/// file costs less than serving them; the defence against overlapping-range amplification).
RangeResult parse_range(std::string_view header, std::uint64_t size, std::size_t max_ranges = 16);

}  // namespace csgi
