#pragma once
/// Node-style module resolution confined to one root directory (the bundler's resolver).
///
/// From a requiring module's directory (root-relative, "" = the root):
///   "./x", "../x", "." : relative; "/x" : from the root (the root is the browser's "/");
///   anything else      : a package, looked up in `node_modules/` of the directory and each parent up to
///                        the root.
/// A path X resolves as Node's LOAD_AS_FILE then LOAD_AS_DIRECTORY: X, X.js, X.json, then
/// X/package.json "main" (as a file, then its index), X/index.js, X/index.json. A package honours
/// package.json "exports" ("." and subpaths, one-"*" patterns, conditions "require", "node", "default",
/// arrays) before "main", as Node does.
///
/// Nothing outside the root is ever read: a path that climbs above it lexically, or a file whose real
/// path (symlinks followed) lies outside the root's real path, is `forbidden`. Module identity is the
/// real path relative to the root, as in Node (a symlink inside the root names its target).
#include <string>
#include <string_view>
#include <vector>

namespace csgi::mw::bundler {

struct Resolved {
  enum Status { ok, not_found, forbidden } status = not_found;
  std::string path;    // ok: the module's real path relative to the root ("app/main.js")
  std::string detail;  // not_found/forbidden: why
};

class Resolver {
public:
  /// `root` must exist; it is made absolute and real (throws std::invalid_argument when it is not a
  /// directory).
  explicit Resolver(const std::string& root);
  const std::string& root() const noexcept { return root_; }

  /// Resolves `spec` required from the directory `from_dir` (root-relative). Directories whose contents
  /// decided the answer are appended to `probed` (root-relative, "" = root) when it is given.
  Resolved resolve(std::string_view from_dir, std::string_view spec, std::vector<std::string>* probed = nullptr) const;

  /// Lexically joins and normalises root-relative `base` and `rel`; false when it climbs above the root.
  static bool join(std::string_view base, std::string_view rel, std::string& out);

private:
  Resolved load_path(const std::string& rel, bool dir_only, std::vector<std::string>* probed) const;
  Resolved load_as_file(const std::string& rel) const;
  Resolved load_index(const std::string& rel) const;
  Resolved load_package(const std::string& pkg_dir, std::string_view subpath, std::vector<std::string>* probed) const;
  Resolved finish(const std::string& rel) const;
  bool is_file(const std::string& rel) const;
  bool is_dir(const std::string& rel) const;
  std::string abs(const std::string& rel) const { return rel.empty() ? (root_.empty() ? "/" : root_) : root_ + "/" + rel; }

  std::string root_;  // real, absolute, without trailing '/'
};

}  // namespace csgi::mw::bundler
