#include "csgi/middleware/url_map.hpp"

#include <stdexcept>

namespace csgi::mw {

UrlMap::UrlMap(std::vector<Mapping> mappings) : UrlMap() {
  for (auto& [location, app] : mappings) map(std::move(location), std::move(app));
}

UrlMap& UrlMap::map(std::string location, App app) {
  if (!app) throw std::invalid_argument("UrlMap: empty app for " + location);
  map_->map(std::move(location), std::move(app));
  return *this;
}

}  // namespace csgi::mw
