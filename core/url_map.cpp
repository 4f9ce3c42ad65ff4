#include "csgi/core/url_map.hpp"

#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

#include <algorithm>
#include <stdexcept>

namespace csgi {

namespace {

/// The request's host without a port, lower-cased.
std::string request_host(const Env& env) {
  std::string_view h = env.get(keys::HTTP_HOST);
  if (h.empty()) h = env.get(keys::SERVER_NAME);
  if (!h.empty() && h.front() == '[') {
    auto end = h.find(']');
    h = end == std::string_view::npos ? h : h.substr(0, end + 1);
  } else if (auto colon = h.rfind(':'); colon != std::string_view::npos) {
    h = h.substr(0, colon);
  }
  return csgi::to_lower(h);
}

class Restore {
public:
  explicit Restore(Env& env)
      : env_(env), script_(env.get(keys::SCRIPT_NAME)), path_(env.get(keys::PATH_INFO)),
        had_path_(env.contains(keys::PATH_INFO)) {}
  ~Restore() {
    env_.set_view(keys::SCRIPT_NAME, script_);
    if (had_path_)
      env_.set_view(keys::PATH_INFO, path_);
    else
      env_.erase(keys::PATH_INFO);
  }

private:
  Env& env_;
  std::string_view script_, path_;
  bool had_path_;
};
}  // namespace

void UrlMap::map(std::string location, App app) {
  std::string host;
  std::string_view loc = location;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (loc.starts_with(scheme)) {
      loc.remove_prefix(scheme.size());
      auto slash = loc.find('/');
      host = csgi::to_lower(loc.substr(0, slash));
      loc = slash == std::string_view::npos ? std::string_view("/") : loc.substr(slash);
      break;
    }
  }
  if (loc.empty() || loc.front() != '/')
    throw std::invalid_argument("UrlMap: location must start with '/' or http(s)://: " + location);
  while (!loc.empty() && loc.back() == '/') loc.remove_suffix(1);
  entries_.push_back(Entry{std::move(host), std::string(loc), std::move(app)});
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    if (a.host.empty() != b.host.empty()) return !a.host.empty();
    if (a.host.size() != b.host.size()) return a.host.size() > b.host.size();
    return a.path.size() > b.path.size();
  });
}

Response UrlMap::operator()(Env& env) const {
  // Adapters hand over a canonical PATH_INFO; one set by a layer above is made canonical before routing.
  std::string_view path = without_dot_segments(env, env.get(keys::PATH_INFO));
  std::string host;
  bool host_known = false;
  for (const Entry& e : entries_) {
    if (!e.host.empty()) {
      if (!host_known) {
        host = request_host(env);
        host_known = true;
      }
      if (host != e.host) continue;
    }
    if (path.substr(0, e.path.size()) != e.path) continue;
    if (path.size() > e.path.size() && path[e.path.size()] != '/') continue;
    Restore guard(env);
    std::string_view script = env.get(keys::SCRIPT_NAME);
    std::string joined;
    joined.reserve(script.size() + e.path.size());
    joined.append(script).append(e.path);
    env.set(keys::SCRIPT_NAME, joined);
    env.set_view(keys::PATH_INFO, path.substr(e.path.size()));
    return e.app(env);
  }
  return Response::error(404);
}

}  // namespace csgi
