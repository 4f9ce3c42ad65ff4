// Range header parsing (core/range.hpp): ranges are sorted, disjoint, inside the representation, and few.
#include <cstring>
#include <string_view>

#include "csgi/core/range.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint32_t raw;
  std::memcpy(&raw, data, 4);
  std::uint64_t total = raw % 5000000;
  std::string_view header(reinterpret_cast<const char*>(data) + 4, size - 4);
  auto r = csgi::parse_range(header, total, 16);
  if (r.kind != csgi::RangeResult::Kind::satisfiable) {
    csgi::fuzz::check(r.ranges.empty(), "no ranges unless satisfiable");
    return 0;
  }
  csgi::fuzz::check(!r.ranges.empty() && r.ranges.size() <= 16, "1..16 ranges");
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < r.ranges.size(); ++i) {
    const auto& x = r.ranges[i];
    csgi::fuzz::check(x.first <= x.last && x.last < total, "range inside the representation");
    if (i > 0) csgi::fuzz::check(r.ranges[i - 1].last + 1 < x.first, "sorted, disjoint, not adjacent");
    sum += x.length();
  }
  csgi::fuzz::check(sum <= total, "never more bytes than the file");
  return 0;
}
