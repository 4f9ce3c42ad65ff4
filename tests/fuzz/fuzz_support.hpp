#pragma once
// Small helpers for the fuzz targets: splitting one input into fields, and abort-on-failure checks (an
// invariant, an env passing Lint) that libFuzzer reports as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "csgi/core/lint.hpp"

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

/// Aborts, printing Lint's finding, when `env` breaks a rule of the spec (`what` names the invariant).
inline void check_env(const Env& env, const char* what) {
  try {
    Lint::check_env(env);
  } catch (const LintError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    check(false, what);
  }
}

}  // namespace csgi::fuzz
