#include "csgi/middleware/bundler/resolver.hpp"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

namespace csgi::mw::bundler {

namespace pt = boost::property_tree;

namespace {

std::optional<pt::ptree> read_package_json(const std::string& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  pt::ptree tree;
  try {
    pt::read_json(in, tree);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return tree;
}

const pt::ptree* child(const pt::ptree& t, std::string_view key) {
  for (const auto& [k, v] : t)
    if (k == key) return &v;
  return nullptr;
}
bool is_leaf(const pt::ptree& t) { return t.empty(); }
bool is_array(const pt::ptree& t) { return !t.empty() && t.begin()->first.empty(); }

// Picks the target of an exports value for the require() conditions; "" when none applies.
std::optional<std::string> exports_target(const pt::ptree& v, std::string_view star) {
  if (is_leaf(v)) {
    std::string s = v.data();
    if (s == "null" || s.rfind("./", 0) != 0) return std::nullopt;
    if (auto p = s.find('*'); p != std::string::npos) s.replace(p, 1, star);
    return s;
  }
  if (is_array(v)) {
    for (const auto& [k, e] : v)
      if (auto r = exports_target(e, star)) return r;
    return std::nullopt;
  }
  for (const auto& [k, e] : v) {
    if (k == "require" || k == "node" || k == "default") {
      if (auto r = exports_target(e, star)) return r;
    }
  }
  return std::nullopt;
}

}  // namespace

Resolver::Resolver(const std::string& root) {
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
  return {Resolved::ok, std::string(real.substr(root_.size() + 1)), {}};
}

Resolved Resolver::load_as_file(const std::string& rel) const {
  if (!rel.empty() && is_file(rel)) return finish(rel);
  if (is_file(rel + ".js")) return finish(rel + ".js");
  if (is_file(rel + ".json")) return finish(rel + ".json");
  return {Resolved::not_found, {}, {}};
}

Resolved Resolver::load_index(const std::string& rel) const {
  std::string base = rel.empty() ? std::string() : rel + "/";
  if (is_file(base + "index.js")) return finish(base + "index.js");
  if (is_file(base + "index.json")) return finish(base + "index.json");
  return {Resolved::not_found, {}, {}};
}

Resolved Resolver::load_path(const std::string& rel, bool dir_only, std::vector<std::string>* probed) const {
  if (probed) {
    auto slash = rel.rfind('/');
    probed->push_back(slash == std::string::npos ? std::string() : rel.substr(0, slash));
  }
  if (!dir_only) {
    Resolved r = load_as_file(rel);
    if (r.status != Resolved::not_found) return r;
  }
  if (!is_dir(rel)) return {Resolved::not_found, {}, {}};
  if (probed) probed->push_back(rel);
  std::string base = rel.empty() ? std::string() : rel + "/";
  if (is_file(base + "package.json")) {
    if (auto pkg = read_package_json(abs(base + "package.json"))) {
      if (const pt::ptree* main = child(*pkg, "main"); main && is_leaf(*main) && !main->data().empty()) {
        std::string m;
        if (!join(rel, main->data(), m)) return {Resolved::forbidden, {}, base + "package.json main leaves the root"};
        Resolved r = load_as_file(m);
        if (r.status == Resolved::not_found) r = load_index(m);
        if (r.status != Resolved::not_found) return r;
      }
    }
  }
  return load_index(rel);
}

Resolved Resolver::load_package(const std::string& pkg_dir, std::string_view subpath, std::vector<std::string>* probed) const {
  std::string base = pkg_dir + "/";
  if (is_file(base + "package.json")) {
    auto pkg = read_package_json(abs(base + "package.json"));
    const pt::ptree* exports = pkg ? child(*pkg, "exports") : nullptr;
    if (exports) {
      if (probed) probed->push_back(pkg_dir);
      std::string key = subpath.empty() ? std::string(".") : "./" + std::string(subpath);
      std::optional<std::string> target;
      bool has_subpaths = !is_leaf(*exports) && !is_array(*exports) && exports->begin()->first.starts_with('.');
      if (!has_subpaths) {
        if (key == ".") target = exports_target(*exports, "");
      } else {
        if (const pt::ptree* e = child(*exports, key)) {
          target = exports_target(*e, "");
        } else {
          // One-'*' patterns: the longest matching prefix wins.
          std::size_t best = 0;
          for (const auto& [k, v] : *exports) {
            auto star = k.find('*');
            if (star == std::string::npos) continue;
            std::string_view pre = std::string_view(k).substr(0, star), post = std::string_view(k).substr(star + 1);
            if (key.size() >= pre.size() + post.size() && key.starts_with(pre) && key.ends_with(post) &&
                pre.size() >= best) {
              best = pre.size();
              target = exports_target(v, key.substr(pre.size(), key.size() - pre.size() - post.size()));
            }
          }
        }
      }
      if (!target) return {Resolved::not_found, {}, "\"" + key + "\" is not exported by " + pkg_dir + "/package.json"};
      std::string file;
      if (!join(pkg_dir, *target, file) || !(file == pkg_dir || file.starts_with(base)))
        return {Resolved::forbidden, {}, pkg_dir + "/package.json exports a path outside the package"};
      if (!is_file(file)) return {Resolved::not_found, {}, "exported file " + file + " does not exist"};
      return finish(file);
    }
  }
  std::string full = subpath.empty() ? pkg_dir : pkg_dir + "/" + std::string(subpath);
  return load_path(full, false, probed);
}

Resolved Resolver::resolve(std::string_view from_dir, std::string_view spec, std::vector<std::string>* probed) const {
  if (spec.empty()) return {Resolved::not_found, {}, "empty module name"};
  if (spec.find('\0') != std::string_view::npos || spec.find('\\') != std::string_view::npos)
    return {Resolved::forbidden, {}, "bad character in module name"};
  bool relative = spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/');
  if (relative) {
    std::string rel;
    if (!join(from_dir, spec, rel)) return {Resolved::forbidden, {}, std::string(spec) + " leads outside the root"};
    bool dir_only = spec.ends_with('/') || spec == "." || spec == ".." || spec.ends_with("/.") || spec.ends_with("/..");
    Resolved r = load_path(rel, dir_only, probed);
    if (r.status == Resolved::not_found && r.detail.empty()) r.detail = "no file or directory module at " + rel;
    return r;
  }
  // A package name: "name" or "@scope/name", then an optional subpath.
  std::size_t name_end = spec.find('/');
  if (spec.starts_with('@') && name_end != std::string_view::npos) name_end = spec.find('/', name_end + 1);
  std::string_view name = spec.substr(0, name_end);
  std::string_view subpath = name_end == std::string_view::npos ? std::string_view{} : spec.substr(name_end + 1);
  if (name == "." || name == ".." || name.find("/..") != std::string_view::npos || subpath.starts_with("..") ||
      subpath.find("/../") != std::string_view::npos || subpath.ends_with("/.."))
    return {Resolved::forbidden, {}, "bad package path " + std::string(spec)};
  std::string dir;
  if (!join("", from_dir, dir)) return {Resolved::forbidden, {}, "bad directory"};
  while (true) {
    bool in_nm = dir == "node_modules" || dir.ends_with("/node_modules");
    if (!in_nm) {
      std::string nm = dir.empty() ? std::string("node_modules") : dir + "/node_modules";
      if (probed) probed->push_back(dir);
      std::string pkg = nm + "/" + std::string(name);
      if (is_dir(pkg)) {
        if (probed) probed->push_back(nm);
        Resolved r = load_package(pkg, subpath, probed);
        if (r.status != Resolved::not_found || !r.detail.empty()) return r;
      } else if (subpath.empty() && is_file(pkg + ".js")) {
        return finish(pkg + ".js");
      } else if (subpath.empty() && is_file(pkg + ".json")) {
        return finish(pkg + ".json");
      }
    }
    if (dir.empty()) break;
    auto slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string() : dir.substr(0, slash);
  }
  return {Resolved::not_found, {}, "cannot find package " + std::string(name) + " in any node_modules up to the root"};
}

}  // namespace csgi::mw::bundler
