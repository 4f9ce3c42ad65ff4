#include "csgi/middleware/bundler/detail/tsconfig.hpp"

#include <nlohmann/json.hpp>

namespace csgi::mw::bundler {

std::optional<TsPaths> parse_tsconfig(std::string_view text) {
  using json = nlohmann::ordered_json;
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (!j.is_object()) return std::nullopt;
  TsPaths ts;
  auto co = j.find("compilerOptions");
  if (co == j.end() || !co->is_object()) return ts;
  auto base = co->find("baseUrl");
  if (base != co->end() && base->is_string()) ts.base_url = base->get<std::string>();
  auto paths = co->find("paths");
  if (paths != co->end() && paths->is_object())
    for (auto it = paths->begin(); it != paths->end(); ++it) {
      if (!it.value().is_array()) continue;
      std::vector<std::string> targets;
      for (const auto& t : it.value())
        if (t.is_string()) targets.push_back(t.get<std::string>());
      ts.paths.emplace_back(it.key(), std::move(targets));
    }
  return ts;
}

std::vector<std::string> match_paths(const TsPaths& ts, std::string_view spec) {
  for (const auto& [key, targets] : ts.paths)
    if (key == spec) return targets;
  const std::vector<std::string>* best = nullptr;
  std::size_t best_prefix = 0;
  std::string_view star_match;
  for (const auto& [key, targets] : ts.paths) {
    auto star = key.find('*');
    if (star == std::string::npos || key.find('*', star + 1) != std::string::npos) continue;
    std::string_view prefix = std::string_view(key).substr(0, star), suffix = std::string_view(key).substr(star + 1);
    if (spec.size() < prefix.size() + suffix.size() || !spec.starts_with(prefix) || !spec.ends_with(suffix)) continue;
    if (best && prefix.size() <= best_prefix) continue;
    best = &targets;
    best_prefix = prefix.size();
    star_match = spec.substr(prefix.size(), spec.size() - prefix.size() - suffix.size());
  }
  std::vector<std::string> out;
  if (!best) return out;
  for (const auto& t : *best) {
    std::string s = t;
    if (auto at = s.find('*'); at != std::string::npos) s.replace(at, 1, star_match);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace csgi::mw::bundler
