#pragma once
/// Branches the defines make dead (docs/bundler.md, "Defines"): the dependency scan does not follow a
/// `require` in code that cannot run once `process.env.NODE_ENV` and the other defines are constants, as
/// esbuild drops it. The code itself is left as it is (the branch just never runs).
///
/// Recognised: `if (T) A else B` and `T ? A : B` whose test T is made of defined member chains, string,
/// boolean and number literals, `===`, `!==`, `==`, `!=`, `!`, `&&`, `||` and parentheses. Anything else
/// (an unknown name in the test, a statement whose extent the token stream does not make certain) keeps
/// both branches.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/middleware/bundler/js_scan.hpp"

namespace csgi::mw::bundler {

/// Name ("process.env.NODE_ENV") → JavaScript value text ("\"production\"").
using Defines = std::map<std::string, std::string, std::less<>>;

/// The [begin, end) byte ranges of `source` that never run under `defines`, in source order. `tokens`
/// and `chains` come from one scan of `source` (ScanOptions::tokens, chain_roots).
std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_ranges(std::string_view source,
                                                                 const std::vector<Token>& tokens,
                                                                 const std::vector<MemberChain>& chains,
                                                                 const Defines& defines);

}  // namespace csgi::mw::bundler
