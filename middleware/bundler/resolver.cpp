#include "csgi/middleware/bundler/detail/resolver.hpp"
#include "csgi/middleware/bundler/detail/esbuild.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <iterator>
#include <set>

#include "csgi/middleware/bundler/detail/module_graph.hpp"

namespace csgi::mw::bundler {

namespace {

constexpr int max_remaps = 8;  // browser-field and builtin mappings followed in one resolution

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

bool has_prefix_path(const std::string& file, const std::string& dir) {
  return dir.empty() || file == dir || (file.starts_with(dir) && file.size() > dir.size() && file[dir.size()] == '/');
}

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A browser-field file key `f` (root-relative) names `rel` (a required path, or a resolved file): the
// key may add an extension or "/index" to it, as esbuild matches them, never take one away.
bool names_file(const std::string& rel, const std::string& f) {
  if (rel == f) return true;
  for (const char* ext : {".js", ".json", "/index.js", "/index.json"})
    if (f == rel + ext) return true;
  return false;
}

// A key without "./" names a file too when it looks like a path ("lib/node.js"), as esbuild reads it.
bool path_like(std::string_view key) {
  return !key.starts_with('@') && (key.find('/') != std::string_view::npos || key.ends_with(".js") || key.ends_with(".json"));
}

// "name" or "@scope/name": the package part of a bare specifier.
std::string_view package_name(std::string_view spec) {
  std::size_t end = spec.find('/');
  if (spec.starts_with('@') && end != std::string_view::npos) end = spec.find('/', end + 1);
  return spec.substr(0, end);
}

Resolved empty_module(std::string label) { return {Resolved::ok, "(empty):" + std::move(label), {}, true}; }

// A segment starting with '.' in a root-relative path, outside node_modules (where package managers keep
// their own dot directories: node_modules/.pnpm/…).
bool dot_segment(std::string_view rel) {
  for (std::size_t start = 0; start < rel.size();) {
    std::size_t end = std::min(rel.find('/', start), rel.size());
    std::string_view seg = rel.substr(start, end - start);
    if (seg == "node_modules") return false;
    if (seg.starts_with('.')) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

namespace {
constexpr const char* kExtensions[] = {".tsx", ".ts", ".jsx", ".js", ".css", ".json"};
}  // namespace

bool module_source(std::string_view rel) {
  return (rel.ends_with(".js") || rel.ends_with(".mjs") || rel.ends_with(".cjs") || rel.ends_with(".json") ||
          !esbuild_loader(rel).empty()) &&
         !dot_segment(rel);
}

bool is_node_builtin(std::string_view name) {
  static const std::set<std::string_view> names = {
      "assert", "assert/strict", "async_hooks", "buffer", "child_process", "cluster", "console", "constants",
      "crypto", "dgram", "diagnostics_channel", "dns", "dns/promises", "domain", "events", "fs", "fs/promises",
      "http", "http2", "https", "inspector", "inspector/promises", "module", "net", "os", "path", "path/posix",
      "path/win32", "perf_hooks", "process", "punycode", "querystring", "readline", "readline/promises", "repl",
      "stream", "stream/consumers", "stream/promises", "stream/web", "string_decoder", "sys", "timers",
      "timers/promises", "tls", "trace_events", "tty", "url", "util", "util/types", "v8", "vm", "wasi",
      "worker_threads", "zlib"};
  static const std::set<std::string_view> prefixed_only = {"test", "test/reporters", "sea", "sqlite"};
  if (name.starts_with("node:")) {
    name.remove_prefix(5);
    return names.count(name) || prefixed_only.count(name);
  }
  return names.count(name) > 0;
}

Resolver::Resolver(const std::string& root, ResolverOptions options) : opt_(std::move(options)) {
  // "node:fs" and "fs" name the same builtin: keys are kept without the prefix.
  for (auto it = opt_.builtins.begin(); it != opt_.builtins.end();) {
    if (!it->first.starts_with("node:")) {
      ++it;
      continue;
    }
    opt_.builtins.try_emplace(it->first.substr(5), it->second);
    it = opt_.builtins.erase(it);
  }
  char buf[PATH_MAX];
  if (!realpath(root.c_str(), buf)) throw std::invalid_argument("bundler: root does not exist: " + root);
  root_ = buf;
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_ == "/") root_.clear();  // every path then starts with '/'
  struct stat st {};
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::invalid_argument("bundler: root is not a directory: " + root);
}

bool Resolver::join(std::string_view base, std::string_view rel, std::string& out) {
  std::vector<std::string_view> parts;
  auto push = [&](std::string_view s) -> bool {
    std::size_t i = 0;
    while (i <= s.size()) {
      std::size_t j = s.find('/', i);
      if (j == std::string_view::npos) j = s.size();
      std::string_view seg = s.substr(i, j - i);
      if (seg == "..") {
        if (parts.empty()) return false;
        parts.pop_back();
      } else if (!seg.empty() && seg != ".") {
        parts.push_back(seg);
      }
      i = j + 1;
    }
    return true;
  };
  if (!rel.starts_with('/') && !push(base)) return false;
  if (!push(rel)) return false;
  out.clear();
  for (auto p : parts) {
    if (!out.empty()) out.push_back('/');
    out.append(p);
  }
  return true;
}

bool Resolver::is_file(const std::string& rel) const {
  struct stat st {};
  return ::stat(abs(rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool Resolver::is_dir(const std::string& rel) const {
  struct stat st {};
  return ::stat(abs(rel).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Resolved Resolver::finish(const std::string& rel) const {
  char buf[PATH_MAX];
  std::string a = abs(rel);
  if (!realpath(a.c_str(), buf)) return {Resolved::not_found, {}, "cannot resolve " + rel};
  std::string_view real = buf;
  if (!root_.empty() && !(real.starts_with(root_) && real.size() > root_.size() && real[root_.size()] == '/'))
    return {Resolved::forbidden, {}, rel + " leads outside the root"};
  std::string_view inside = real.substr(root_.size() + 1);
  if (!module_source(inside))
    return {Resolved::not_found, {}, rel + " is not a module source (.js, .mjs, .cjs, .json, .ts, .tsx, .jsx, .mts, .cts or .css, outside dotfiles)"};
  return {Resolved::ok, std::string(inside), {}};
}

Resolved Resolver::load_as_file(const std::string& rel) const {
  if (!rel.empty() && is_file(rel)) {
    Resolved r = finish(rel);
    if (r.status != Resolved::not_found) return r;  // a file no module can be: X.js, X.json may still be
  }
  // esbuild's order (its default resolveExtensions); "./x.js" also names x.ts or x.tsx, as TypeScript
  // writes imports of its own modules.
  for (const char* ext : kExtensions)
    if (is_file(rel + ext)) return finish(rel + ext);
  if (rel.ends_with(".js")) {
    std::string stem = rel.substr(0, rel.size() - 3);
    for (const char* ext : {".ts", ".tsx"})
      if (is_file(stem + ext)) return finish(stem + ext);
  }
  return {Resolved::not_found, {}, {}};
}

Resolved Resolver::load_index(const std::string& rel) const {
  std::string base = rel.empty() ? std::string() : rel + "/";
  for (const char* ext : kExtensions)
    if (is_file(base + "index" + ext)) return finish(base + "index" + ext);
  return {Resolved::not_found, {}, {}};
}

Conditions Resolver::conditions(ImportKind kind) const {
  const char* syntax = kind == ImportKind::import ? "import" : "require";
  if (opt_.platform == Platform::node) return {"node", syntax};
  return {"browser", "module", syntax};
}

std::shared_ptr<const PackageInfo> Resolver::package_info(const std::string& dir) const {
  std::string file = abs(dir.empty() ? std::string("package.json") : dir + "/package.json");
  Stamp st = stamp_of(file);
  if (!st.exists) return nullptr;
  std::lock_guard lock(cache_mu_);
  auto it = infos_.find(file);
  if (it != infos_.end()) {
    const CachedInfo& c = it->second;
    if (c.ino == st.ino && c.size == st.size && c.mtime_ns == st.mtime_ns && c.ctime_ns == st.ctime_ns &&
        st.ctime_ns < c.read_at_ns)
      return c.info;
  }
  CachedInfo c{st.ino, st.size, st.mtime_ns, st.ctime_ns, coarse_now_ns(), nullptr};
  if (auto parsed = parse_package_json(read_text(file))) c.info = std::make_shared<const PackageInfo>(std::move(*parsed));
  if (infos_.size() > 8192) infos_.clear();
  infos_[file] = c;
  return c.info;
}

std::shared_ptr<const TsPaths> Resolver::tsconfig() const {
  std::string file = abs("tsconfig.json");
  Stamp st = stamp_of(file);
  if (!st.exists) return nullptr;
  std::lock_guard lock(cache_mu_);
  if (tsconfig_ && tsconfig_->ino == st.ino && tsconfig_->size == st.size && tsconfig_->mtime_ns == st.mtime_ns &&
      tsconfig_->ctime_ns == st.ctime_ns && st.ctime_ns < tsconfig_->read_at_ns)
    return tsconfig_->ts;
  CachedTs c{st.ino, st.size, st.mtime_ns, st.ctime_ns, coarse_now_ns(), nullptr};
  if (auto parsed = parse_tsconfig(read_text(file))) c.ts = std::make_shared<const TsPaths>(std::move(*parsed));
  tsconfig_ = c;
  return c.ts;
}

std::optional<Resolved> Resolver::resolve_tsconfig(const std::string& from_dir, std::string_view spec, Ctx& cx) const {
  if (from_dir == "node_modules" || from_dir.starts_with("node_modules/") ||
      from_dir.find("/node_modules/") != std::string::npos || from_dir.ends_with("/node_modules"))
    return std::nullopt;
  if (cx.probed) cx.probed->push_back("");  // the root: tsconfig.json's edits
  auto ts = tsconfig();
  if (!ts || (!ts->base_url && ts->paths.empty())) return std::nullopt;
  std::string base;
  if (ts->base_url && !join("", *ts->base_url, base)) return std::nullopt;
  auto try_path = [&](std::string_view target) -> std::optional<Resolved> {
    std::string rel;
    if (!join(base, target, rel)) return Resolved{Resolved::forbidden, {}, "tsconfig.json maps " + std::string(spec) + " outside the root"};
    Resolved r = load_path(rel, false, cx);
    if (r.status == Resolved::not_found) return std::nullopt;
    return r;
  };
  for (const auto& target : match_paths(*ts, spec))
    if (auto r = try_path(target)) return r;
  if (ts->base_url)
    if (auto r = try_path(spec)) return r;
  return std::nullopt;
}

bool Resolver::side_effect_free(const std::string& rel) const {
  std::string d = dir_of(rel);
  while (true) {
    if (auto info = package_info(d)) return !has_side_effects(*info, d.empty() ? rel : rel.substr(d.size() + 1));
    if (d.empty()) return false;
    d = dir_of(d);
  }
}

std::optional<Resolver::Package> Resolver::enclosing_package(const std::string& dir, Ctx& cx) const {
  std::string d = dir;
  while (true) {
    if (cx.probed) cx.probed->push_back(d);
    if (auto info = package_info(d)) return Package{d, std::move(info)};
    if (d.empty()) return std::nullopt;
    d = dir_of(d);
  }
}

Resolved Resolver::load_path(const std::string& rel, bool dir_only, Ctx& cx) const {
  if (cx.probed) cx.probed->push_back(dir_of(rel));
  if (!dir_only) {
    Resolved r = load_as_file(rel);
    if (r.status != Resolved::not_found) return r;
  }
  if (!is_dir(rel)) return {Resolved::not_found, {}, {}};
  if (cx.probed) cx.probed->push_back(rel);
  auto pkg = package_info(rel);
  Resolved r = load_main(rel, pkg.get(), cx);
  if (pkg && r.status == Resolved::ok)  // the package's own browser map may replace its main file
    if (auto m = browser_file(r.path, Package{rel, pkg}, cx)) return *m;
  return r;
}

Resolved Resolver::load_main(const std::string& rel, const PackageInfo* pkg, Ctx& cx) const {
  std::string base = rel.empty() ? std::string() : rel + "/";
  if (pkg) {
    // The main field: "browser" (a string), then "module" for an import only, then "main", as esbuild
    // picks them for the browser.
    std::string main = pkg->main;
    if (opt_.platform == Platform::browser) {
      if (!pkg->browser_main.empty()) main = pkg->browser_main;
      else if (!pkg->module.empty() && cx.kind == ImportKind::import) main = pkg->module;
    }
    if (!main.empty()) {
      std::string m;
      if (!join(rel, main, m)) return {Resolved::forbidden, {}, base + "package.json main leaves the root"};
      Resolved r = load_as_file(m);
      if (r.status == Resolved::not_found) r = load_index(m);
      if (r.status != Resolved::not_found) return r;
    }
  }
  return load_index(rel);
}

Resolved Resolver::load_package(const std::string& pkg_dir, std::string_view subpath, Ctx& cx) const {
  auto pkg = package_info(pkg_dir);
  if (pkg && pkg->exports) {
    if (cx.probed) cx.probed->push_back(pkg_dir);
    std::string key = subpath.empty() ? std::string(".") : "./" + std::string(subpath);
    MapMatch m = match_exports(*pkg->exports, key, conditions(cx.kind));
    if (m.status != MapMatch::target || !m.value.starts_with("./"))
      return {Resolved::not_found, {}, "\"" + key + "\" is not exported by " + pkg_dir + "/package.json"};
    std::string file, base = pkg_dir + "/";
    if (!join(pkg_dir, m.value, file) || !(file == pkg_dir || file.starts_with(base)))
      return {Resolved::forbidden, {}, pkg_dir + "/package.json exports a path outside the package"};
    if (!is_file(file)) return {Resolved::not_found, {}, "exported file " + file + " does not exist"};
    return finish(file);
  }
  std::string full = subpath.empty() ? pkg_dir : pkg_dir + "/" + std::string(subpath);
  return load_path(full, false, cx);
}

std::optional<Resolved> Resolver::browser_replace(const Package& pkg, const std::string& key,
                                                  const std::optional<std::string>& to, Ctx& cx) const {
  bool file_key = key.starts_with("./") || key.starts_with("../");
  std::string shown = pkg.dir.empty() ? std::string("package.json") : pkg.dir + "/package.json";
  if (!to) {
    std::string label = key;
    if (file_key && !join(pkg.dir, key, label)) label = key;
    return empty_module(label);
  }
  if (++cx.depth > max_remaps) return Resolved{Resolved::not_found, {}, "browser field mappings loop (" + shown + ")"};
  if (to->starts_with("./") || to->starts_with("../")) {
    std::string file;
    if (!join(pkg.dir, *to, file)) return Resolved{Resolved::forbidden, {}, shown + " browser field leaves the root"};
    Resolved r = load_path(file, false, cx);
    if (r.status == Resolved::not_found)
      r.detail = "the browser field of " + shown + " maps " + key + " to " + *to + ", which does not exist";
    return r;
  }
  return resolve_bare(pkg.dir, *to, cx, /*browser_map=*/false);
}

std::optional<Resolved> Resolver::browser_file(const std::string& rel, const Package& pkg, Ctx& cx) const {
  if (opt_.platform != Platform::browser) return std::nullopt;
  for (const auto& [k, v] : pkg.info->browser_files) {
    std::string f;
    if (join(pkg.dir, k, f) && names_file(rel, f)) return browser_replace(pkg, k, v, cx);
  }
  for (const auto& [k, v] : pkg.info->browser_packages) {
    std::string f;
    if (path_like(k) && join(pkg.dir, k, f) && names_file(rel, f)) return browser_replace(pkg, "./" + k, v, cx);
  }
  return std::nullopt;
}

Resolved Resolver::resolve_builtin(std::string_view spec, Ctx& cx) const {
  std::string_view name = spec.starts_with("node:") ? spec.substr(5) : spec;
  auto it = opt_.builtins.find(name);
  if (it == opt_.builtins.end()) return {Resolved::not_found, {}, {}};
  if (it->second.empty()) return empty_module(std::string(name));
  if (++cx.depth > max_remaps) return {Resolved::not_found, {}, "builtins mappings loop"};
  const std::string& to = it->second;
  Resolved r = to.starts_with("./") || to.starts_with('/') ? resolve_in("", to, cx) : resolve_bare("", to, cx, false, false);
  if (r.status == Resolved::not_found)
    r.detail = "the builtins option maps '" + std::string(name) + "' to '" + to + "', which cannot be found" +
               (r.detail.empty() ? "" : ": " + r.detail);
  return r;
}

Resolved Resolver::resolve_import_map(const std::string& from_dir, std::string_view spec, Ctx& cx) const {
  auto pkg = enclosing_package(from_dir, cx);
  if (!pkg || !pkg->info->imports)
    return {Resolved::not_found, {}, "no package.json with an \"imports\" map encloses " + (from_dir.empty() ? "the root" : from_dir)};
  std::string shown = pkg->dir.empty() ? std::string("package.json") : pkg->dir + "/package.json";
  MapMatch m = match_exports(*pkg->info->imports, spec, conditions(cx.kind));
  if (m.status != MapMatch::target) return {Resolved::not_found, {}, "\"" + std::string(spec) + "\" is not in the imports of " + shown};
  if (m.value.starts_with("./")) {
    std::string file;
    if (!join(pkg->dir, m.value, file) || !has_prefix_path(file, pkg->dir))
      return {Resolved::forbidden, {}, shown + " imports a path outside the package"};
    if (!is_file(file)) return {Resolved::not_found, {}, "imported file " + file + " does not exist"};
    return finish(file);
  }
  if (m.value.starts_with('/') || m.value.starts_with("../") || m.value.starts_with('#'))
    return {Resolved::not_found, {}, shown + " imports \"" + std::string(spec) + "\" to an invalid target"};
  return resolve_bare(pkg->dir, m.value, cx, true);
}

Resolved Resolver::load_node_module(const std::string& from_dir, std::string_view spec, Ctx& cx) const {
  std::string_view name = package_name(spec);
  std::size_t name_end = name.size() < spec.size() ? name.size() : std::string_view::npos;
  std::string_view subpath = name_end == std::string_view::npos ? std::string_view{} : spec.substr(name_end + 1);
  if (name == "." || name == ".." || name.find("/..") != std::string_view::npos || subpath.starts_with("..") ||
      subpath.find("/../") != std::string_view::npos || subpath.ends_with("/.."))
    return {Resolved::forbidden, {}, "bad package path " + std::string(spec)};
  std::string dir = from_dir;
  while (true) {
    bool in_nm = dir == "node_modules" || dir.ends_with("/node_modules");
    if (!in_nm) {
      std::string nm = dir.empty() ? std::string("node_modules") : dir + "/node_modules";
      if (cx.probed) cx.probed->push_back(dir);
      std::string pkg = nm + "/" + std::string(name);
      if (is_dir(pkg)) {
        if (cx.probed) cx.probed->push_back(nm);
        Resolved r = load_package(pkg, subpath, cx);
        if (r.status != Resolved::not_found || !r.detail.empty()) return r;
      } else if (subpath.empty() && is_file(pkg + ".js")) {
        return finish(pkg + ".js");
      } else if (subpath.empty() && is_file(pkg + ".json")) {
        return finish(pkg + ".json");
      }
    }
    if (dir.empty()) break;
    dir = dir_of(dir);
  }
  return {Resolved::not_found, {}, {}};
}

Resolved Resolver::resolve_bare(const std::string& from_dir, std::string_view spec, Ctx& cx, bool browser_map,
                                bool builtin_map) const {
  if (browser_map && opt_.platform == Platform::browser) {
    if (auto pkg = enclosing_package(from_dir, cx)) {
      auto it = pkg->info->browser_packages.find(spec);
      if (it != pkg->info->browser_packages.end()) {
        bool same = it->second && *it->second == spec;  // "x": "x" keeps the package
        if (!same) return *browser_replace(*pkg, it->first, it->second, cx);
      }
    }
  }
  bool builtin = is_node_builtin(spec);
  if (builtin && builtin_map) {
    Resolved r = resolve_builtin(spec, cx);
    if (r.status != Resolved::not_found || !r.detail.empty()) return r;
  }
  std::string builtin_help;
  if (builtin) {
    std::string name(spec.starts_with("node:") ? spec.substr(5) : spec);
    builtin_help = "'" + name + "' is a Node builtin module, which browsers do not have; install a browser version (npm install " +
                   name + ") or map it with the bundler's builtins option (BundlerOptions::builtins[\"" + name +
                   "\"] = a package, a ./file or \"\" for an empty module; csgi-bundle --builtin " + name + "=...)";
    if (spec.starts_with("node:")) return {Resolved::not_found, {}, builtin_help};
  }
  Resolved r = load_node_module(from_dir, spec, cx);
  if (r.status == Resolved::not_found && r.detail.empty()) {
    if (builtin) return {Resolved::not_found, {}, builtin_help};
    return {Resolved::not_found, {}, "cannot find package " + std::string(package_name(spec)) +
                                         " in any node_modules up to the root"};
  }
  return r;
}

Resolved Resolver::resolve_in(std::string_view from_dir, std::string_view spec, Ctx& cx) const {
  if (spec.empty()) return {Resolved::not_found, {}, "empty module name"};
  if (spec.find('\0') != std::string_view::npos || spec.find('\\') != std::string_view::npos)
    return {Resolved::forbidden, {}, "bad character in module name"};
  std::string dir;
  if (!join("", from_dir, dir)) return {Resolved::forbidden, {}, "bad directory"};
  if (spec.starts_with('#')) return resolve_import_map(dir, spec, cx);
  bool relative = spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/');
  if (!relative) {
    if (auto r = resolve_tsconfig(dir, spec, cx)) return *r;
    return resolve_bare(dir, spec, cx, true);
  }
  std::string rel;
  if (!join(dir, spec, rel)) return {Resolved::forbidden, {}, std::string(spec) + " leads outside the root"};
  // The requiring module's package remaps its own relative requires, by name (the file need not exist)
  // or by the file they reach.
  std::optional<Package> pkg;
  if (opt_.platform == Platform::browser) pkg = enclosing_package(dir, cx);
  if (pkg)
    if (auto m = browser_file(rel, *pkg, cx)) return *m;
  bool dir_only = spec.ends_with('/') || spec == "." || spec == ".." || spec.ends_with("/.") || spec.ends_with("/..");
  Resolved r = load_path(rel, dir_only, cx);
  if (r.status == Resolved::not_found && r.detail.empty()) r.detail = "no file or directory module at " + rel;
  if (pkg && r.status == Resolved::ok && !r.empty)
    if (auto m = browser_file(r.path, *pkg, cx)) return *m;
  return r;
}

Resolved Resolver::resolve(std::string_view from_dir, std::string_view spec, std::vector<std::string>* probed,
                           ImportKind kind) const {
  Ctx cx{probed, kind};
  return resolve_in(from_dir, spec, cx);
}

}  // namespace csgi::mw::bundler
