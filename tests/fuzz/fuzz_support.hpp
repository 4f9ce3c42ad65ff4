#pragma once
// Small helpers for the fuzz targets: splitting one input into fields, and an abort-on-failure check that
// libFuzzer reports as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace csgi::fuzz {

/// Takes bytes up to the next `sep` (or the end) from `in`.
inline std::string_view take(std::string_view& in, char sep) {
  auto pos = in.find(sep);
  std::string_view out = in.substr(0, pos);
  in = pos == std::string_view::npos ? std::string_view{} : in.substr(pos + 1);
  return out;
}

inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

}  // namespace csgi::fuzz
