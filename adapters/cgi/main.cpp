// csgi-cgi: serves one CGI request with an app library.
//   csgi-cgi --app libapp.so [--app-arg VALUE]... [--script-name /prefix] [--max-body BYTES]
// Run it from a wrapper script that does not forward "$@" (Apache passes an ISINDEX query string as
// arguments): `exec /usr/local/bin/csgi-cgi --app /srv/app/libapp.so`. --app may also come from CSGI_APP.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "csgi/adapters/cgi/cgi.hpp"
#include "csgi/core/app_library.hpp"

int main(int argc, char** argv) {
  csgi::cgi::Options options;
  std::string app_path;
  csgi::AppArgs app_args;
  if (const char* env_app = std::getenv("CSGI_APP")) app_path = env_app;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view value;
    bool has_value = false;
    if (auto eq = a.find('='); a.starts_with("--") && eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    } else if (a.starts_with("--") && a != "--help" && i + 1 < argc) {
      value = argv[++i];
      has_value = true;
    }
    if (a == "--help") {
      std::printf("usage: csgi-cgi --app LIB.so [--app-arg V]... [--script-name /prefix] [--max-body BYTES]\n");
      return 0;
    }
    if (!a.starts_with("--")) continue;  // not ours (an ISINDEX query)
    if (!has_value) {
      std::fprintf(stderr, "csgi-cgi: %s needs a value\n", argv[i]);
      return 2;
    }
    if (a == "--app") app_path = value;
    else if (a == "--app-arg") app_args.emplace_back(value);
    else if (a == "--script-name") options.script_name = std::string(value);
    else if (a == "--max-body") options.max_body = std::strtoull(std::string(value).c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "csgi-cgi: unknown option %.*s\n", static_cast<int>(a.size()), a.data());
      return 2;
    }
  }
  if (app_path.empty()) {
    std::fprintf(stderr, "csgi-cgi: no app: give --app LIB.so (or set CSGI_APP)\n");
    std::fputs("Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nno app configured\n", stdout);
    return 1;
  }
  csgi::App app;
  try {
    app = csgi::load_app(app_path, app_args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csgi-cgi: %s\n", e.what());
    std::fputs("Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\napp failed to load\n", stdout);
    return 1;
  }
  return csgi::cgi::serve(app, options);
}
