#pragma once
/// Dispatches to apps by location (Plack::App::URLMap), as Builder::mount() does.
///
/// Locations are "/path" or "http://host/path". Matching: entries with a host come first (longest host
/// first), then longest path first; a path matches only on a '/' boundary ("/foo" matches "/foo" and
/// "/foo/bar", not "/foobar"). The matched prefix moves from PATH_INFO to the end of SCRIPT_NAME while
/// the app runs, and both are restored afterwards. No match: 404. Matching is on the canonical path
/// (ENV-5): a PATH_INFO that a layer above set with dot segments is resolved first (csgi::without_dot_segments,
/// a ".." above the root throws csgi::BadRequest), so "/admin/.." never reaches the "/admin" app.
/// Reads: PATH_INFO, SCRIPT_NAME, HTTP_HOST, SERVER_NAME, SERVER_PORT. Writes: SCRIPT_NAME, PATH_INFO.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi {

class UrlMap {
public:
  UrlMap() = default;
  /// Throws std::invalid_argument for a location that is not "/…" or "http(s)://host/…".
  void map(std::string location, App app);
  Response operator()(Env& env) const;
  bool empty() const noexcept { return entries_.empty(); }

private:
  struct Entry {
    std::string host;  // "" = any host
    std::string path;  // no trailing '/'; "" = root
    App app;
  };
  std::vector<Entry> entries_;
};

}  // namespace csgi
