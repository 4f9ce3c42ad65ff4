#pragma once
/// The ES module transform: a module's `import`/`export` syntax rewritten into the client loader's
/// format without moving any line (docs/bundler.md, "ES modules").
///
/// The result is the module's body for a generator function `function* (__csgi)`: `prefix` goes in
/// front of the first line; it hands the loader getters for the local exports, binds each imported
/// module's namespace object (`__csgi.ns(k)`, k its index in `requests`) and yields. The loader
/// resumes the generator to run the body once the imports have been evaluated. Import statements become blank (their line breaks kept);
/// a reference to an imported binding `x` becomes `__csgi_iN.x` (a read through the namespace: live);
/// `import(…)` becomes `__csgi.import(…)`, `import.meta` becomes `__csgi.meta`.
///
/// The transform works on the lexer's tokens, not a parse tree. A local named like an import is scoped
/// where its extent is exact (a simple parameter of a function with a braced body, `catch`, `var` in
/// its function, `let`/`const` in their block); where it cannot prove that an identifier is a reference
/// to an import (a pattern, a concise arrow's parameter, a label of that name) it refuses the module
/// (`error`), as it does top-level `await`.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/middleware/bundler/detail/js_scan.hpp"

namespace csgi::mw::bundler {

struct EsmEdit {
  std::uint32_t begin = 0, end = 0;  // the source range replaced
  std::string text;                  // its replacement (already holding the range's line breaks)
};

struct EsmModule {
  std::string prefix;                 // put before the first line (no line break)
  std::vector<EsmEdit> edits;         // in source order, not overlapping
  std::vector<Dependency> requests;   // the modules it imports or re-exports from, source order, unique
  std::string meta;                   // JSON for the loader: {"x":[…],"r":[[…]],"s":[…]}, each imported
                                      // module named by its index in `requests` (the bundler adds "i")
  // The same tables for the bundler: local export names ("x"), re-exports (name, specifier, imported
  // name or "*": "r"), `export *` specifiers ("s"), each (specifier, name) imported or re-exported
  // ("i"), and the specifiers whose whole namespace is used (`import * as`, `export *`, `export * as`).
  std::vector<std::string> local_names;
  std::vector<std::array<std::string, 3>> reexports;
  std::vector<std::string> stars;
  std::vector<std::pair<std::string, std::string>> imported;
  std::vector<std::string> whole;
  /// The imported bindings by local name: the request index and the name imported ("*": `import * as`).
  struct ImportBinding {
    std::string local;
    std::uint32_t request = 0;
    std::string imported;
  };
  std::vector<ImportBinding> import_bindings;
  /// The exports of the module's own bindings: (exported name, local binding).
  std::vector<std::pair<std::string, std::string>> local_exports;
  std::optional<std::string> error;   // "line L: …": not transformable (a 422)
};

/// Transforms `source`, whose tokens (ScanOptions::tokens) are `tokens`.
EsmModule transform_esm(std::string_view source, const std::vector<Token>& tokens);

}  // namespace csgi::mw::bundler
