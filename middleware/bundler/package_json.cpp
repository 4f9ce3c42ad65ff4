#include "csgi/middleware/bundler/detail/package_json.hpp"

namespace csgi::mw::bundler {

using json = nlohmann::ordered_json;

std::optional<PackageInfo> parse_package_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  PackageInfo p;
  if (auto it = j.find("main"); it != j.end() && it->is_string()) p.main = it->get<std::string>();
  if (auto it = j.find("module"); it != j.end() && it->is_string()) p.module = it->get<std::string>();
  if (auto it = j.find("browser"); it != j.end()) {
    if (it->is_string()) {
      p.browser_main = it->get<std::string>();
    } else if (it->is_object()) {
      for (auto& [k, v] : it->items()) {
        std::optional<std::string> value;
        if (v.is_string()) value = v.get<std::string>();
        else if (!(v.is_boolean() && !v.get<bool>())) continue;  // neither a path nor false: ignored
        bool file = k.starts_with("./") || k.starts_with("../");
        (file ? p.browser_files : p.browser_packages)[k] = std::move(value);
      }
    }
  }
  if (auto it = j.find("exports"); it != j.end()) p.exports = *it;
  if (auto it = j.find("imports"); it != j.end() && it->is_object()) p.imports = *it;
  if (auto it = j.find("sideEffects"); it != j.end()) {
    if (it->is_boolean()) p.side_effects = it->get<bool>();
    if (it->is_array()) {
      p.side_effects = false;
      for (auto& g : *it)
        if (g.is_string()) p.side_effect_globs.push_back(g.get<std::string>());
        else p.side_effects = true;  // not understood: assume side effects
    }
  }
  return p;
}

namespace {
bool glob_match(std::string_view g, std::string_view s) {
  if (g.empty()) return s.empty();
  if (g.starts_with("**")) {
    std::string_view rest = g.substr(2);
    if (rest.starts_with('/')) rest.remove_prefix(1);
    for (std::size_t i = 0; i <= s.size(); ++i)
      if ((i == 0 || s[i - 1] == '/') && glob_match(rest, s.substr(i))) return true;
    return glob_match(rest, "") && s.empty();
  }
  if (g.front() == '*') {
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(g.substr(1), s.substr(i))) return true;
      if (i < s.size() && s[i] == '/') break;
    }
    return false;
  }
  if (s.empty() || (g.front() != '?' && g.front() != s.front()) || (g.front() == '?' && s.front() == '/')) return false;
  return glob_match(g.substr(1), s.substr(1));
}
}  // namespace

bool has_side_effects(const PackageInfo& pkg, std::string_view file) {
  if (pkg.side_effects) return true;
  for (std::string_view g : pkg.side_effect_globs) {
    if (g.starts_with("./")) g.remove_prefix(2);
    bool by_name = g.find('/') == std::string_view::npos;
    std::string_view subject = file;
    if (by_name && subject.rfind('/') != std::string_view::npos) subject = subject.substr(subject.rfind('/') + 1);
    if (glob_match(g, subject)) return true;
  }
  return false;
}

namespace {

// The target of one exports/imports value under `conds`; `star` replaces each '*' in a string target.
MapMatch pick(const json& v, std::string_view star, const Conditions& conds) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    for (auto p = s.find('*'); p != std::string::npos; p = s.find('*', p + star.size())) s.replace(p, 1, star);
    return {MapMatch::target, std::move(s)};
  }
  if (v.is_array()) {
    for (const auto& e : v)
      if (auto r = pick(e, star, conds); r.status == MapMatch::target) return r;
    return {MapMatch::excluded, {}};
  }
  if (v.is_object()) {
    for (const auto& [k, e] : v.items())
      if (k == "default" || conds.count(k)) {
        MapMatch r = pick(e, star, conds);
        if (r.status == MapMatch::target) return r;
      }
  }
  return {MapMatch::excluded, {}};  // null, false, or no condition applies
}

}  // namespace

MapMatch match_exports(const json& map, std::string_view key, const Conditions& conds) {
  bool keyed = map.is_object() && !map.empty() && (map.begin().key().starts_with('.') || map.begin().key().starts_with('#'));
  if (!keyed) return key == "." ? pick(map, "", conds) : MapMatch{};
  if (auto it = map.find(std::string(key)); it != map.end()) return pick(*it, "", conds);
  const json* best = nullptr;
  std::size_t best_pre = 0;
  std::string_view best_star;
  for (const auto& [k, v] : map.items()) {
    auto star = k.find('*');
    if (star == std::string::npos || k.find('*', star + 1) != std::string::npos) continue;
    std::string_view pre = std::string_view(k).substr(0, star), post = std::string_view(k).substr(star + 1);
    if (key.size() >= pre.size() + post.size() && key.starts_with(pre) && key.ends_with(post) &&
        (!best || pre.size() > best_pre)) {
      best = &v;
      best_pre = pre.size();
      best_star = key.substr(pre.size(), key.size() - pre.size() - post.size());
    }
  }
  if (!best) return {};
  return pick(*best, best_star, conds);
}

}  // namespace csgi::mw::bundler
