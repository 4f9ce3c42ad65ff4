#include "csgi/core/range.hpp"
#include "csgi/core/text.hpp"

#include <algorithm>

namespace csgi {

namespace {
bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}
}  // namespace

RangeResult parse_range(std::string_view header, std::uint64_t size, std::size_t max_ranges) {
  RangeResult ignore;
  header = csgi::trim_ows(header);
  if (header.size() < 6) return ignore;
  for (std::size_t i = 0; i < 5; ++i)
    if ((header[i] | 0x20) != "bytes"[i]) return ignore;
  header.remove_prefix(5);
  header = csgi::trim_ows(header);
  if (header.empty() || header.front() != '=') return ignore;
  header.remove_prefix(1);

  std::vector<ByteRange> ranges;
  std::size_t specs = 0;
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view spec = csgi::trim_ows(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    if (spec.empty()) continue;  // empty list elements are allowed
    if (++specs > max_ranges) return ignore;
    std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return ignore;
    std::string_view a = csgi::trim_ows(spec.substr(0, dash)), b = csgi::trim_ows(spec.substr(dash + 1));
    std::uint64_t first = 0, last = 0;
    if (a.empty()) {  // suffix: last N bytes
      if (!parse_u64(b, last)) return ignore;
      if (last == 0 || size == 0) continue;  // unsatisfiable element
      ranges.push_back({last >= size ? 0 : size - last, size - 1});
      continue;
    }
    if (!parse_u64(a, first)) return ignore;
    if (b.empty()) {
      last = size == 0 ? 0 : size - 1;
    } else {
      if (!parse_u64(b, last) || last < first) return ignore;
      if (size > 0 && last >= size) last = size - 1;
    }
    if (first >= size) continue;  // unsatisfiable element
    ranges.push_back({first, last});
  }
  if (specs == 0) return ignore;
  RangeResult out;
  if (ranges.empty()) {
    out.kind = RangeResult::Kind::unsatisfiable;
    return out;
  }
  std::uint64_t requested = 0;
  for (const ByteRange& r : ranges) requested += r.length();
  if (requested > size && ranges.size() > 1) return ignore;
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& x, const ByteRange& y) { return x.first < y.first; });
  std::vector<ByteRange> merged;
  for (const ByteRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  out.kind = RangeResult::Kind::satisfiable;
  out.ranges = std::move(merged);
  return out;
}

}  // namespace csgi
