#include "csgi/middleware/bundler/package_json.hpp"

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
  return p;
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
