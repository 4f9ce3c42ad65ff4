#pragma once
// What the resolver takes from the root's tsconfig.json: compilerOptions.baseUrl and paths, as esbuild
// and TypeScript apply them to the app's own bare imports.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace csgi::mw::bundler {

struct TsPaths {
  std::optional<std::string> base_url;  // as written ("." or "./src"), relative to the root
  /// "paths": pattern ("@/*", "config") → targets ("src/*"), in the file's order; targets are relative to
  /// baseUrl, or to the root when there is none.
  std::vector<std::pair<std::string, std::vector<std::string>>> paths;
};

/// Parses tsconfig.json text (comments allowed, as tsc and esbuild read it); nullopt when it is not a
/// JSON object. `extends` is not followed.
std::optional<TsPaths> parse_tsconfig(std::string_view text);

/// The paths entry matching `spec` (an exact key first, then the one-'*' pattern with the longest
/// prefix), with each target's '*' replaced by what the pattern's '*' matched; empty when none matches.
std::vector<std::string> match_paths(const TsPaths& ts, std::string_view spec);

}  // namespace csgi::mw::bundler
