// The bundler's JavaScript lexer (middleware/bundler/detail/js_scan.hpp), ES module transform
// (esm_transform.hpp) and tree shaking table (tree_shake.hpp): never throw, never crash, every dependency
// reported is a non-empty literal, the transform's edits are ordered, inside the source and keep its line
// count, and tree shaking's units are ordered, apart, inside the source, and their references in range.
#include <algorithm>
#include <string_view>

#include "csgi/middleware/bundler/detail/esm_transform.hpp"
#include "csgi/middleware/bundler/detail/js_scan.hpp"
#include "csgi/middleware/bundler/detail/tree_shake.hpp"
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
  auto table = csgi::mw::bundler::shake_table(in, tokens, m, {});
  if (!table) return 0;
  at = 0;
  for (const auto& u : table->units) {
    csgi::fuzz::check(u.begin >= at && u.begin < u.end && u.end <= in.size(), "units ordered, apart, inside");
    csgi::fuzz::check(!u.names.empty(), "a unit binds a name");
    auto holder = csgi::mw::bundler::unit_placeholder(u, in);
    auto range = in.substr(u.begin, u.end - u.begin);
    csgi::fuzz::check(std::count(holder.begin(), holder.end(), '\n') == std::count(range.begin(), range.end(), '\n'),
                      "a placeholder keeps the line count");
    at = u.end;
  }
  const std::size_t n = table->units.size();
  csgi::fuzz::check(table->uses.size() == n + 1 && table->imports.size() == n + 1, "a list per unit and the rest");
  for (const auto& uses : table->uses)
    for (auto v : uses) csgi::fuzz::check(v >= 1 && v <= n, "references name units");
  for (const auto& imports : table->imports)
    for (const auto& [req, name] : imports) csgi::fuzz::check(req < m.requests.size(), "imports name requests");
  return 0;
}
