#pragma once
/// Tree shaking across the modules of one bundle (docs/bundler.md, "Tree shaking"): starting from what
/// always runs (each module's unit 0, the entry's whole namespace, the namespaces CommonJS code
/// requires), it follows references through units and imports, re-exports and `export *`, barrel views
/// included, to the units of each ES module that something kept refers to.
///
/// A module the page already holds keeps what it holds (`held`); the units a bundle must add to it are
/// those `kept` but not held.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "csgi/middleware/bundler/detail/module_graph.hpp"

namespace csgi::mw::bundler {

/// Units by index: 0 is the rest of the module, u ≥ 1 is ShakeTable::units[u - 1].
using UnitSet = std::vector<bool>;

struct ShakePlan {
  std::unordered_map<std::uint32_t, UnitSet> kept;  // each module of the closure that has a ShakeTable
};

/// `loaded(id)`: the page holds the module; `held`: for such a module with a table, the units it holds
/// (absent: all of them).
ShakePlan plan_shake(Graph& graph, const Closure& closure, std::uint32_t entry,
                     const std::function<bool(std::uint32_t)>& loaded,
                     const std::unordered_map<std::uint32_t, UnitSet>& held);

/// A unit set as the loader carries it: base64url, bit b of character i is unit 6i+b+1, trailing 'A's
/// trimmed; and back (units beyond `units` are ignored; nullopt for a character outside base64url).
std::string encode_units(const UnitSet& units);
/// The value of a base64url character (the alphabet of `have` and unit sets), or -1.
int base64url_value(char c) noexcept;
std::optional<UnitSet> decode_units(std::string_view text, std::size_t units);

}  // namespace csgi::mw::bundler
