// The bundler's JavaScript lexer (middleware/bundler/js_scan.hpp) and ES module transform
// (esm_transform.hpp): never throw, never crash, every dependency reported is a non-empty literal, and
// the transform's edits are ordered, inside the source and keep its line count.
#include <algorithm>
#include <string_view>

#include "csgi/middleware/bundler/esm_transform.hpp"
#include "csgi/middleware/bundler/js_scan.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto r = csgi::mw::bundler::scan(in);
  for (const auto& d : r.deps) csgi::fuzz::check(d.line >= 1, "dependency lines are 1-based");
  if (!r.esm_line || r.error) return 0;
  std::vector<csgi::mw::bundler::Token> tokens;
  csgi::mw::bundler::ScanOptions o;
  o.tokens = &tokens;
  csgi::mw::bundler::scan(in, o);
  auto m = csgi::mw::bundler::transform_esm(in, tokens);
  if (m.error) return 0;
  std::size_t at = 0;
  for (const auto& e : m.edits) {
    csgi::fuzz::check(e.begin >= at && e.begin <= e.end && e.end <= in.size(), "edits ordered, inside the source");
    auto gone = in.substr(e.begin, e.end - e.begin);
    csgi::fuzz::check(std::count(gone.begin(), gone.end(), '\n') == std::count(e.text.begin(), e.text.end(), '\n'),
                      "an edit keeps the line count");
    at = e.end;
  }
  csgi::fuzz::check(m.prefix.find('\n') == std::string::npos, "the prefix stays on the first line");
  return 0;
}
