// csgi-fcgi: serves an app library over FastCGI.
//   csgi-fcgi --app libapp.so [--app-arg VALUE]... [--listen unix:/path|host:port] [--threads N] ...
// Without --listen, fd 0 must be the listening socket a front server handed over (mod_fcgid, spawn-fcgi,
// lighttpd bin-path). --app may also come from the CSGI_APP environment variable.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "csgi/adapters/fastcgi/fastcgi.hpp"
#include "csgi/core/app_library.hpp"
#ifdef CSGI_EMBED_PYTHON  // set by bindings/CMakeLists.txt: --wsgi MODULE:APP serves a Python WSGI app
#include "csgi/bindings/python_host.hpp"
#endif

int main(int argc, char** argv) {
  csgi::fastcgi::Options options;
  std::string app_path;
  csgi::AppArgs app_args;
  std::string wsgi_spec;  // --wsgi MODULE:APP (embedded Python), when built with it
  if (const char* env_app = std::getenv("CSGI_APP")) app_path = env_app;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: csgi-fcgi --app LIB.so [--app-arg V]... [--listen unix:/path|host:port] [--threads N]\n"
          "                 [--workers N] [--backlog N] [--script-name /prefix] [--max-body BYTES]\n"
          "                 [--graceful-timeout S] [--socket-mode OCTAL]\n"
          "Without --listen, fd 0 must be a listening socket (spawned by the front server).\n");
      return 0;
    }
    if ((a == "--app" || a == "--app-arg") && i + 1 < argc) {
      (a == "--app" ? app_path = argv[++i] : app_args.emplace_back(argv[++i]));
      continue;
    }
#ifdef CSGI_EMBED_PYTHON
    if (a == "--wsgi" && i + 1 < argc) {
      wsgi_spec = argv[++i];
      continue;
    }
#endif
    if (a.starts_with("--app=")) {
      app_path = a.substr(6);
      continue;
    }
    if (a.starts_with("--app-arg=")) {
      app_args.emplace_back(a.substr(10));
      continue;
    }
    std::string error;
    if (!csgi::fastcgi::parse_option(options, argc, argv, i, error)) {
      std::fprintf(stderr, "csgi-fcgi: %s (see --help)\n", error.c_str());
      return 2;
    }
  }
  if (app_path.empty() && wsgi_spec.empty()) {
    std::fprintf(stderr, "csgi-fcgi: no app: give --app LIB.so (or set CSGI_APP)\n");
    return 2;
  }
  csgi::App app;
  try {
#ifdef CSGI_EMBED_PYTHON
    if (!wsgi_spec.empty())
      app = csgi::python_host::load_wsgi_app(wsgi_spec, app_args);
    else
#endif
      app = csgi::load_app(app_path, app_args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csgi-fcgi: %s\n", e.what());
    return 1;
  }
  return csgi::fastcgi::serve(std::move(app), options);
}
