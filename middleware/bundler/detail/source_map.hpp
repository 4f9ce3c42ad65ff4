#pragma once
// Source maps (revision 3) of the text the bundler sends for a module: its own edits (defines, the ES
// module transform, production's comment and dead-code removal) mapped back to the text they were applied
// to, composed with esbuild's map of a TypeScript/JSX module back to the file. Lines and columns 0-based,
// columns in UTF-16 code units as the format counts them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/middleware/bundler/detail/esm_transform.hpp"

namespace csgi::mw::bundler {

struct Mapping {
  std::uint32_t gen_line = 0, gen_col = 0;  // in the generated text
  std::uint32_t src_line = 0, src_col = 0;  // in the one source
  bool operator==(const Mapping&) const = default;
};

/// The mappings of `prefix` + `src` with `edits` applied (sorted by begin; an edit beginning inside an
/// earlier one is skipped, as the bundler applies them), the generated text's first line starting at
/// column `first_column`: each run copied from `src` maps to where it was, each line of an edit's text
/// to the start of the range it replaced (its own lines, the same count), the prefix to 0:0.
std::vector<Mapping> edit_mappings(std::string_view src, const std::vector<EsmEdit>& edits, std::string_view prefix,
                                   std::uint32_t first_column);

/// The mappings of a map's "mappings" field (of its first source; segments naming another are dropped);
/// nullopt when it is not valid VLQ.
std::optional<std::vector<Mapping>> decode_mappings(std::string_view mappings);
/// The mappings of a source map's JSON text (its first source); nullopt when it is not one.
std::optional<std::vector<Mapping>> mappings_of(std::string_view map_json);
/// The "mappings" field of `m` (sorted by generated position).
std::string encode_mappings(const std::vector<Mapping>& m);

/// `outer` (generated → middle text) through `inner` (middle text → source): each outer mapping takes the
/// source position of the inner segment at or before its middle position on the same line; one with
/// none there is dropped. `inner` sorted by generated position.
std::vector<Mapping> compose(const std::vector<Mapping>& outer, const std::vector<Mapping>& inner);

/// esbuild's inline map at the end of its output (`//# sourceMappingURL=data:application/json;base64,…`)
/// taken off `code`: the map's JSON text, or nullopt (code unchanged) when there is none.
std::optional<std::string> take_inline_map(std::string& code);

/// A source map's JSON: one source named `source` with its text `content`.
std::string map_json(const std::vector<Mapping>& m, std::string_view source, std::string_view content);

}  // namespace csgi::mw::bundler
