#include "csgi/middleware/health.hpp"

#include <stdexcept>

#include "csgi/core/server_stats.hpp"

namespace csgi::mw {

namespace {

Response health_answer(int status, std::string_view what) {
  Response r = Response::text(status, std::string(what) + "\n");
  r.headers.set("Cache-Control", "no-store");
  return r;
}

}  // namespace

Health::Health(App next, HealthOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Health: no next app");
  for (const std::string* p : {&options_.ready_path, &options_.live_path})
    if (!p->empty() && p->front() != '/') throw std::invalid_argument("Health: a check path starts with '/': " + *p);
}

Response Health::operator()(Env& env) {
  std::string_view path = env.get(keys::PATH_INFO);
  bool ready = !options_.ready_path.empty() && path == options_.ready_path;
  bool live = !options_.live_path.empty() && path == options_.live_path;
  if (!ready && !live) return next_(env);
  std::string_view method = env.get(keys::REQUEST_METHOD);
  if (method != "GET" && method != "HEAD") {
    Response r = health_answer(405, "405 Method Not Allowed");
    r.headers.add("Allow", "GET, HEAD");
    return r;
  }
  if (live) return health_answer(200, "alive");
  if (const auto* stats = env.object<ServerStats>(keys::x::server_stats); stats && stats->draining())
    return health_answer(503, "draining");
  if (options_.ready && !options_.ready()) return health_answer(503, "not ready");
  return health_answer(200, "ready");
}

}  // namespace csgi::mw
