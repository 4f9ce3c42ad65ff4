#pragma once
/// The bundler's dependency scanner: a JavaScript lexer (not a parser) that finds CommonJS
/// `require('literal')` calls.
///
/// It tokenises the whole source: strings, template literals (with `${}` nesting), comments and regex
/// literals are skipped as units, so a `require('x')` inside any of them is not a dependency. A `/` is a
/// regex or a division depending on the previous token (after `)` of `if/while/for/with`, after a block's
/// `}`, after operators and keywords such as `return`: regex; after identifiers, literals, `]`, `)` and an
/// object literal's `}`: division).
///
/// A call counts as a dependency only when `require` is the free identifier: not a property
/// (`x.require(`, `x?.require(`), not shadowed by a cheaply detectable local (`var/let/const require`,
/// `function require`, a function or arrow parameter named `require`; the shadow lasts to the end of the
/// enclosing block). Comments between tokens are ignored, so `/*#__PURE__*/require("./x.js")` counts.
/// `require(expr)`, `require()` and two-argument `require('x', cb)` are reported as unbundled, not errors.
/// Static `import … from` / `export …` (ES module syntax) is reported; with ScanOptions::tokens the
/// tokens are handed out for the ES module transform (esm_transform.hpp).
/// Member chains rooted at chosen free names (`process.env.NODE_ENV`) are reported with their offsets,
/// outside strings, comments and regexes, for replacement by defines.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace csgi::mw::bundler {

/// No position (a token or an index not found), as std::string::npos.
inline constexpr std::size_t npos = ~std::size_t{0};

struct Dependency {
  std::string spec;        // the literal, escapes decoded
  std::uint32_t line = 0;  // 1-based
  bool import = false;     // named by an ES import/export (resolved with the "import" condition)
  std::uint32_t offset = 0;  // of the `require` (CommonJS) or the specifier
};

/// One token, as the lexer saw it (ScanOptions::tokens).
struct Token {
  enum Kind : std::uint8_t {
    ident,       // identifiers and keywords
    punct,       // operators and brackets
    string,      // '…' or "…"
    tmpl,        // a whole template without substitutions
    tmpl_open,   // `…${
    tmpl_mid,    // }…${
    tmpl_close,  // }…`
    number,
    regex,
    priv,        // #name
  } kind;
  std::uint32_t begin = 0, end = 0;  // offsets into the source
  bool object = false;               // a '{' the lexer took for an object literal (not a block)
};

struct Unbundled {
  std::uint32_t line = 0;
  std::string what;  // "require(expr)", "require('x', ...)", "import()", …
};

/// A member chain `a.b.c` whose first name is a free identifier the caller asked for (ScanOptions),
/// for compile-time defines. Not recorded when it is assigned to (`=`, `+=`…, `++`, `--`) or deleted.
struct MemberChain {
  std::size_t begin = 0;             // offset of the first name
  std::vector<std::size_t> ends;     // offset just after each name: ends[i] closes the i+1-name prefix
  std::string path;                  // "process.env.NODE_ENV" (names joined by '.')
};

struct ScanOptions {
  /// First names of the chains to record ("process" for "process.env.NODE_ENV"); none by default.
  std::vector<std::string> chain_roots;
  /// When set, every token is appended here (for the ES module transform).
  std::vector<Token>* tokens = nullptr;
  /// Record the stretches between tokens that hold comments or indentation (ScanResult::comments).
  bool comments = false;
};

struct ScanResult {
  std::vector<Dependency> deps;  // in source order, repeats kept
  std::vector<Unbundled> unbundled;
  /// ES module syntax: the first static import/export (line), and the specifiers it imports from.
  std::optional<std::uint32_t> esm_line;
  std::vector<Dependency> esm_imports;
  std::vector<MemberChain> chains;  // in source order
  /// With ScanOptions::comments: [begin, end) of each run of whitespace and comments between tokens (or
  /// before the first, after the last) that holds a comment, or a line break and more than line breaks
  /// (indentation); a `#!` line is never part of one.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> comments;
  /// Set when the lexer cannot follow the source: "line L, column C: unterminated string literal".
  std::optional<std::string> error;
};

/// Scans `source` (UTF-8; other bytes ≥ 0x80 are treated as identifier characters). Never throws for
/// bad input: problems land in `error`.
ScanResult scan(std::string_view source, const ScanOptions& options = {});

}  // namespace csgi::mw::bundler
