// The app behind the bad-request corpus (tests/reliability/replay.py): /canary and /smuggled answer with
// markers the replayer looks for; every other path reads the whole body and answers 200 with its size.
#include <string>

#include "csgi/core/app_library.hpp"

namespace {
csgi::Response canary(csgi::Env& env) {
  std::string_view path = env.get(csgi::keys::PATH_INFO);
  if (path == "/canary") return csgi::Response::text(200, "canary-answered\n");
  if (path == "/smuggled") return csgi::Response::text(200, "smuggled-answered\n");
  std::string body = env.input().read_all();
  return csgi::Response::text(200, "path=" + std::string(path) + " body=" + std::to_string(body.size()) + "\n");
}
csgi::App make(const csgi::AppArgs&) { return canary; }
}  // namespace

CSGI_APP(make)
