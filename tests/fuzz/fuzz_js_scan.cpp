// The bundler's JavaScript lexer (middleware/bundler/js_scan.hpp): never throws, never crashes, and every
// dependency it reports is a non-empty literal.
#include <string_view>

#include "csgi/middleware/bundler/js_scan.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto r = csgi::mw::bundler::scan(in);
  for (const auto& d : r.deps) csgi::fuzz::check(d.line >= 1, "dependency lines are 1-based");
  return 0;
}
