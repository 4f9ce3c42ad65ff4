#pragma once
/// What the bundler's resolver reads from a package.json: `main`, the `browser` field (string or object
/// map), `exports` and `imports`, with the condition matching Node and esbuild use for them.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace csgi::mw::bundler {

/// The conditions a resolution accepts: an `exports`/`imports` object picks its first key (in the
/// file's order, as Node's spec says) that is in the set or is "default".
using Conditions = std::set<std::string, std::less<>>;

struct PackageInfo {
  std::string main;          // "main" ("" when absent or not a string)
  std::string module;        // "module" (an ES module build)
  std::string browser_main;  // "browser" as a string ("" when absent or an object)
  /// "browser" as an object: a key starting with "./" or "../" names a file of the package (stored as
  /// written); any other key names a package or builtin. The value is a path or package name, or
  /// nullopt for `false` (an empty module).
  std::map<std::string, std::optional<std::string>, std::less<>> browser_files, browser_packages;
  std::optional<nlohmann::ordered_json> exports, imports;
  /// "sideEffects" (webpack's): false → every module of the package is free of side effects; an array of
  /// globs → those matching have side effects, the others not; absent or true → all may have them.
  bool side_effects = true;
  std::vector<std::string> side_effect_globs;
};

/// Whether `file` (relative to its package's directory, no leading "./") may have side effects by the
/// package's "sideEffects" field: a glob without '/' matches the file's name, one with '/' its path
/// (`*` within a segment, `**` across them).
bool has_side_effects(const PackageInfo& pkg, std::string_view file);

/// Parses package.json text; nullopt when it is not a JSON object.
std::optional<PackageInfo> parse_package_json(std::string_view text);

/// The outcome of matching a specifier against an `exports` or `imports` map.
struct MapMatch {
  enum Status { none, excluded, target } status = none;  // none: no key matches; excluded: null / no condition
  std::string value;  // target: the chosen string, the '*' substituted
};

/// Looks `key` ("." / "./sub" for exports, "#name" for imports) up in `map` (exact key first, then
/// one-'*' patterns, the longest prefix winning) and picks the target for `conds`. For exports, a map
/// whose keys do not start with '.' is the "." entry itself (sugar).
MapMatch match_exports(const nlohmann::ordered_json& map, std::string_view key, const Conditions& conds);

}  // namespace csgi::mw::bundler
