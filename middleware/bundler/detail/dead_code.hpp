#pragma once
/// Branches the defines make dead (docs/bundler.md, "Defines"): the dependency scan does not follow a
/// `require` in code that cannot run once `process.env.NODE_ENV` and the other defines are constants, as
/// esbuild drops it, and production bundles replace such code by the shortest code that keeps its line
/// breaks (dead_replacement).
///
/// Recognised: `if (T) A else B`, `T ? A : B`, `T && X` and `T || X` whose test T is made of defined member chains,
/// string, boolean and number literals, `===`, `!==`, `==`, `!=`, `!`, `&&`, `||` and parentheses. Anything else (an
/// unknown name in the test, a statement whose extent the token stream does not make certain) keeps both branches.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/middleware/bundler/detail/js_scan.hpp"

namespace csgi::mw::bundler {

/// Name ("process.env.NODE_ENV") → JavaScript value text ("\"production\"").
using Defines = std::map<std::string, std::string, std::less<>>;

/// A [begin, end) byte range of a module that never runs, and what it is.
struct DeadRange {
  std::uint32_t begin = 0, end = 0;
  enum Form : std::uint8_t {
    block,       // a branch `{…}` of an `if`
    statement,   // an unbraced branch of an `if`, or a whole `if (T) …` without `else` whose T is false
    expression,  // an arm of `T ? A : B`, or the X of `T && X`, `T || X`
  } form = block;
  /// It declares a binding its function sees although the code never runs: a `var`, or (in sloppy-mode
  /// code) a function declaration, not inside a nested function or class. Unsure counts as true.
  bool hoists = false;
  bool operator==(const DeadRange&) const = default;
};

/// The ranges of `source` that never run under `defines`, in source order (a range may hold others).
/// `tokens` and `chains` come from one scan of `source` (ScanOptions::tokens, chain_roots); `strict`:
/// the source is strict-mode code (an ES module), where a function declared in a block is the block's.
std::vector<DeadRange> dead_ranges(std::string_view source, const std::vector<Token>& tokens,
                                   const std::vector<MemberChain>& chains, const Defines& defines, bool strict = false);

/// What a production bundle puts in place of `r`: `{}`, `;` or `0` followed by as many line breaks as
/// the range holds, so every later line keeps its number. Nullopt (the code stays) when the range
/// hoists a declaration or holds a line terminator other than \n (\r alone, U+2028, U+2029).
std::optional<std::string> dead_replacement(std::string_view source, const DeadRange& r);

}  // namespace csgi::mw::bundler
