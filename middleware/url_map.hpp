#pragma once
/// UrlMap app (Plack::App::URLMap): the core csgi::UrlMap under the middleware set's name, buildable
/// from a list. Dispatches by location ("/path" or "http://host/path"; longest host, then longest path
/// first; '/' boundaries), moving the matched prefix from PATH_INFO to SCRIPT_NAME while the app runs
/// and restoring both afterwards; no match: 404.
/// Reads:  PATH_INFO, SCRIPT_NAME, HTTP_HOST, SERVER_NAME, SERVER_PORT. Writes: SCRIPT_NAME, PATH_INFO
///         (restored).
/// Order:  an app; Builder::mount() builds the same thing.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "csgi/core/url_map.hpp"

namespace csgi::mw {

class UrlMap {
public:
  using Mapping = std::pair<std::string, App>;
  UrlMap() : map_(std::make_shared<csgi::UrlMap>()) {}
  /// Throws std::invalid_argument for a malformed location or an empty app.
  explicit UrlMap(std::vector<Mapping> mappings);
  UrlMap(std::initializer_list<Mapping> mappings) : UrlMap(std::vector<Mapping>(mappings)) {}

  /// Adds a location; only before the map serves requests.
  UrlMap& map(std::string location, App app);
  Response operator()(Env& env) const { return (*map_)(env); }

private:
  std::shared_ptr<csgi::UrlMap> map_;  // copies of this app share one table
};

}  // namespace csgi::mw
