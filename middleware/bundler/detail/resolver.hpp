#pragma once
/// Node-style module resolution confined to one root directory (the bundler's resolver).
///
/// From a requiring module's directory (root-relative, "" = the root):
///   "./x", "../x", "." : relative; "/x" : from the root (the root is the browser's "/");
///   anything else      : a package, looked up in `node_modules/` of the directory and each parent up to
///                        the root.
///   "#name"            : the `imports` map of the requiring module's package.json.
/// A path X resolves as Node's LOAD_AS_FILE then LOAD_AS_DIRECTORY: X, X.js, X.json, then
/// X/package.json "main" (as a file, then its index), X/index.js, X/index.json. A package honours
/// package.json "exports" ("." and subpaths, one-"*" patterns, conditions, arrays) before "main", as
/// Node does.
///
/// Platform browser (as esbuild --platform=browser): conditions "browser", "module", "default" and
/// "require" or "import" by the importing syntax; a string "browser" field replaces "main" (and an
/// import prefers "module"); an object "browser" field remaps files and packages required by the
/// package's own modules (relative requires by name or by the file reached, package names exactly) and
/// the package's main, `false` giving an empty module (Resolved::empty); deep requires from outside the
/// package and `exports` targets are not remapped (as in esbuild). Node builtins ("util",
/// "node:fs") resolve through the `builtins` map, else (plain names) through node_modules, else they are
/// not_found with a message saying how to map them. Platform node: conditions "node", "require" or
/// "import", "default"; no browser field; builtins are not_found as above.
///
/// Nothing outside the root is ever read: a path that climbs above it lexically, or a file whose real
/// path (symlinks followed) lies outside the root's real path, is `forbidden`. Module identity is the
/// real path relative to the root, as in Node (a symlink inside the root names its target).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "csgi/middleware/bundler/detail/package_json.hpp"
#include "csgi/middleware/bundler/detail/tsconfig.hpp"

namespace csgi::mw::bundler {

struct Resolved {
  enum Status { ok, not_found, forbidden } status = not_found;
  std::string path;    // ok: the module's real path relative to the root ("app/main.js"), or the label
                       // of an empty module ("(empty):fs")
  std::string detail;  // not_found/forbidden: why
  bool empty = false;  // ok: an empty module (a `false` in a browser field or the builtins map)
};

enum class Platform { browser, node };
/// The syntax that names a module: require() or an ES import (chooses "require"/"import" conditions).
enum class ImportKind { require, import };

struct ResolverOptions {
  Platform platform = Platform::browser;
  /// Node builtins ("util", not "node:util") mapped to a package name resolved from the root
  /// ("util/"), a root-relative file ("./shims/util.js" or "/shims/util.js"), or "" for an empty module.
  std::map<std::string, std::string, std::less<>> builtins;
};

/// True when root-relative (real) path `rel` may be a module: a .js, .mjs, .cjs or .json file, no segment
/// of it starting with '.' outside node_modules. The resolver finds nothing else, so no other file under
/// the root (.env, .npmrc, .git/, server.conf) is ever read or served.
bool module_source(std::string_view rel);

/// True for the names of Node's builtin modules ("fs", "fs/promises", "node:test"…).
bool is_node_builtin(std::string_view name);

class Resolver {
public:
  /// `root` must exist; it is made absolute and real (throws std::invalid_argument when it is not a
  /// directory).
  explicit Resolver(const std::string& root, ResolverOptions options = {});
  const std::string& root() const noexcept { return root_; }

  /// Resolves `spec` required from the directory `from_dir` (root-relative). Directories whose contents
  /// decided the answer are appended to `probed` (root-relative, "" = root) when it is given.
  Resolved resolve(std::string_view from_dir, std::string_view spec, std::vector<std::string>* probed = nullptr,
                   ImportKind kind = ImportKind::require) const;

  /// The real root-relative path of root-relative `rel` (ok, not_found or forbidden; no mapping).
  Resolved real(const std::string& rel) const { return finish(rel); }
  /// Whether the nearest package.json above the file `rel` declares it free of side effects
  /// ("sideEffects"); false when there is none.
  bool side_effect_free(const std::string& rel) const;

  /// Lexically joins and normalises root-relative `base` and `rel`; false when it climbs above the root.
  static bool join(std::string_view base, std::string_view rel, std::string& out);

private:
  struct Ctx {  // one resolution: what it reports and how deep remappings went
    std::vector<std::string>* probed;
    ImportKind kind;
    int depth = 0;
  };
  struct Package {
    std::string dir;  // root-relative
    std::shared_ptr<const PackageInfo> info;
  };
  Resolved resolve_in(std::string_view from_dir, std::string_view spec, Ctx& cx) const;
  Resolved resolve_bare(const std::string& from_dir, std::string_view spec, Ctx& cx, bool browser_map,
                        bool builtin_map = true) const;
  Resolved resolve_builtin(std::string_view spec, Ctx& cx) const;
  /// `spec` from the node_modules of `from_dir` and each parent; not_found without detail when absent.
  Resolved load_node_module(const std::string& from_dir, std::string_view spec, Ctx& cx) const;
  Resolved resolve_import_map(const std::string& from_dir, std::string_view spec, Ctx& cx) const;
  Resolved load_path(const std::string& rel, bool dir_only, Ctx& cx) const;
  Resolved load_as_file(const std::string& rel) const;
  Resolved load_index(const std::string& rel) const;
  Resolved load_package(const std::string& pkg_dir, std::string_view subpath, Ctx& cx) const;
  /// The browser field's remapping of a file `rel` (resolved or only named) by its package, if any.
  std::optional<Resolved> browser_file(const std::string& rel, const Package& pkg, Ctx& cx) const;
  Resolved load_main(const std::string& rel, const PackageInfo* pkg, Ctx& cx) const;
  std::optional<Resolved> browser_replace(const Package& pkg, const std::string& key,
                                          const std::optional<std::string>& to, Ctx& cx) const;
  /// A bare `spec` of the app's own code (outside node_modules) by the root tsconfig.json's `paths`, then
  /// its `baseUrl`; nullopt when neither names a file (node_modules is tried next, as in esbuild).
  std::optional<Resolved> resolve_tsconfig(const std::string& from_dir, std::string_view spec, Ctx& cx) const;
  std::shared_ptr<const TsPaths> tsconfig() const;
  Conditions conditions(ImportKind kind) const;
  std::shared_ptr<const PackageInfo> package_info(const std::string& dir) const;
  std::optional<Package> enclosing_package(const std::string& dir, Ctx& cx) const;
  Resolved finish(const std::string& rel) const;
  bool is_file(const std::string& rel) const;
  bool is_dir(const std::string& rel) const;
  std::string abs(const std::string& rel) const { return rel.empty() ? (root_.empty() ? "/" : root_) : root_ + "/" + rel; }

  std::string root_;  // real, absolute, without trailing '/'
  ResolverOptions opt_;
  struct CachedInfo {
    std::uint64_t ino = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0, read_at_ns = 0;
    std::shared_ptr<const PackageInfo> info;
  };
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, CachedInfo> infos_;  // package dir -> parsed package.json
  struct CachedTs {
    std::uint64_t ino = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0, read_at_ns = 0;
    std::shared_ptr<const TsPaths> ts;
  };
  mutable std::optional<CachedTs> tsconfig_;  // the root's tsconfig.json (guarded by cache_mu_)
};

}  // namespace csgi::mw::bundler
