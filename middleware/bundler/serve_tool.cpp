// csgi-bundle-serve: the demo/test/benchmark server for the bundler on the real standalone adapter.
//   csgi-bundle-serve ROOT [DOCROOT] [csgi serve options: --listen 127.0.0.1:0 --threads N …]
// Serves the bundler at /bundle over ROOT (modules) and, for every other path, the static files of
// DOCROOT (default ROOT): what `csgi serve --bundle ROOT --static DOCROOT` serves, in a program of the
// bundler's own target that its browser tests and benchmarks start without the cli.
// BUNDLER_FRESHNESS=inotify|stat|none, BUNDLER_PREBUILD=1 and BUNDLER_LIVE_RELOAD=1 in the environment set
// those options.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "csgi/adapters/runner/runner.hpp"
#include "csgi/middleware/bundler/bundler.hpp"
#include "csgi/middleware/static.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-' && positional.size() < 2 && rest.size() == 1) positional.push_back(argv[i]);
    else rest.push_back(argv[i]);
  }
  if (positional.empty()) {
    std::fprintf(stderr, "usage: csgi-bundle-serve ROOT [DOCROOT] [--listen ADDR] [--threads N] …\n");
    return 2;
  }
  try {
    csgi::mw::BundlerOptions bo;
    bo.mount = "/bundle";
    if (const char* f = std::getenv("BUNDLER_FRESHNESS")) {
      if (!std::strcmp(f, "stat")) bo.freshness = csgi::mw::BundlerOptions::Freshness::stat;
      else if (!std::strcmp(f, "none")) bo.freshness = csgi::mw::BundlerOptions::Freshness::none;
    }
    if (const char* p = std::getenv("BUNDLER_PREBUILD")) bo.prebuild = *p == '1';
    if (const char* p = std::getenv("BUNDLER_LIVE_RELOAD")) bo.live_reload = *p == '1';
    if (const char* e = std::getenv("BUNDLER_ESBUILD")) bo.esbuild = e;
    if (const char* m = std::getenv("BUNDLER_MODE"); m && !std::strcmp(m, "production"))
      bo.mode = csgi::mw::BundlerOptions::Mode::production;
    csgi::mw::StaticOptions so;
    so.root = positional.size() > 1 ? positional[1] : positional[0];
    csgi::App files = csgi::mw::Static(so);
    csgi::App app = csgi::wrap<csgi::mw::Bundler>(files, positional[0], bo);
    return csgi::run(app, int(rest.size()), rest.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csgi-bundle-serve: %s\n", e.what());
    return 1;
  }
}
