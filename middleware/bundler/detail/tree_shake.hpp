#pragma once
/// Tree shaking of ES modules (docs/bundler.md, "Tree shaking"): which top-level statements of a module
/// can be left out of a production bundle when nothing the page runs refers to them, and what each
/// statement refers to.
///
/// A statement may be left out (a *unit*) when running it has no effect but to bind its names: a function
/// declaration; a class declaration whose `extends` and computed keys are free of side effects, without
/// static blocks or static fields; a `var`/`let`/`const` of plain names whose initializers are free of
/// side effects (literals, names bound in the module or known globals, functions, arrows, classes as
/// above, object and array literals of those, operators but assignments, and calls or `new` that carry a
/// `/* @__PURE__ */` or `/* #__PURE__ */` annotation or are known to be pure, such as `Symbol()` or
/// `new WeakMap()`); `export default <such an expression>`. Everything else of the module is unit 0,
/// always kept. Code that the defines make dead (dead_code.hpp) counts neither as an effect nor as a
/// reference.
///
/// References are read from the tokens, not a parse tree: every identifier that is not a property name
/// or an object literal's key refers to the top-level binding of that name, so a local that shadows one
/// keeps it (more is kept, never less). A module that mentions `eval` is not shaken; a name declared twice
/// at the top level (a `var` again, also in a nested statement) keeps its declarations.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "csgi/middleware/bundler/detail/dead_code.hpp"
#include "csgi/middleware/bundler/detail/esm_transform.hpp"
#include "csgi/middleware/bundler/detail/js_scan.hpp"

namespace csgi::mw::bundler {

struct ShakeUnit {
  std::uint32_t begin = 0, end = 0;  // the statement's source range, from its first token to its last
  std::uint32_t line = 1;            // the line `begin` is on
  enum Kind : std::uint8_t {
    declarators,  // var/let/const (or `export default <expression>`, as `const __csgi_default = …`)
    function,     // a function declaration (also async, generator)
    klass,        // a class declaration
  } kind = declarators;
  std::vector<std::string> names;  // the top-level bindings it declares
};

struct ShakeTable {
  std::vector<ShakeUnit> units;  // statements that can be left out, source order: unit u is units[u - 1]
  /// For unit 0 (the rest of the module) and each unit: the units it refers to (1-based) and the
  /// imports it reads (request index, imported name; "*": the whole namespace).
  std::vector<std::vector<std::uint32_t>> uses;
  std::vector<std::vector<std::pair<std::uint32_t, std::string>>> imports;
  std::unordered_map<std::string, std::uint32_t> unit_of;  // a unit's binding → the unit
};

/// The table of the ES module `source` (its tokens, its transform, and the ranges the defines make dead,
/// or none). Nullopt when the module is not shaken (no unit, or `eval`).
std::optional<ShakeTable> shake_table(std::string_view source, const std::vector<Token>& tokens, const EsmModule& esm,
                                      const std::vector<DeadRange>& dead);

/// A unit's code as a statement that assigns its bindings in place of declaring them, for the module's
/// scope where `let` placeholders declare them (`class A {}` → `A= class A {};`, `const a = 1, b;` →
/// `a = 1, b;`). `text` is the unit's range as the bundle has it (transformed: `export` and comments gone).
std::string unit_assignment(const ShakeUnit& unit, std::string_view text);

/// What stands in the module for a unit left out: `let a,b;` and the range's line breaks.
std::string unit_placeholder(const ShakeUnit& unit, std::string_view source);

}  // namespace csgi::mw::bundler
