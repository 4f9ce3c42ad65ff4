#pragma once
// TypeScript and JSX modules (.ts .tsx .jsx .mts .cts) turned into JavaScript by esbuild's transform
// (one child process per module source not yet seen), so the lexer, the ES module transform and the
// tree shaking work on its output as on any .js file. Results are cached by loader, options and content.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace csgi::mw::bundler {

/// esbuild's loader for a module path ("ts", "tsx", "jsx", "css"), or "" when the file is plain
/// JavaScript/JSON.
std::string_view esbuild_loader(std::string_view path) noexcept;

struct TranspileResult {
  std::shared_ptr<const std::string> code;  // null on error
  std::shared_ptr<const std::string> map;   // esbuild's source map of `code` (JSON), null when it gave none
  std::string error;                        // "file:line:column: message" (esbuild's first error)
};

class Transpiler {
public:
  /// `program`: the esbuild executable (a name looked up in PATH, or a path). `cache_bytes`: cap on the
  /// cached outputs (oldest go first).
  explicit Transpiler(std::string program, std::size_t cache_bytes = std::size_t{16} << 20);

  /// `path` is the module's root-relative path (shown in errors); `tsconfig` the root tsconfig.json's
  /// text ("" when there is none), given to esbuild as --tsconfig-raw (jsx, jsxImportSource, …).
  TranspileResult run(std::string_view path, std::string_view source, std::string_view tsconfig);

  std::uint64_t hits = 0;
  std::uint64_t misses = 0;

private:
  struct Entry {
    std::string key;  // loader, tsconfig and source: an exact match, never a hash alone
    std::shared_ptr<const std::string> code;
    std::shared_ptr<const std::string> map;
  };
  std::string program_;
  std::size_t cap_;
  std::size_t bytes_ = 0;
  std::unordered_multimap<std::size_t, std::shared_ptr<Entry>> cache_;
  std::deque<std::pair<std::size_t, std::shared_ptr<Entry>>> order_;
};

}  // namespace csgi::mw::bundler
