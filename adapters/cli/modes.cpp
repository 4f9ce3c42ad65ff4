#include "csgi/adapters/cli/modes.hpp"

#include "csgi/adapters/cli/demo.hpp"
#include "csgi/core/app_library.hpp"

namespace csgi::cli {

const std::vector<Mode>& modes() {
  static const std::vector<Mode> table = {
      {"app", "LIB.so", Mode::Kind::source, "serve the app in this shared library (CSGI_APP entry point)",
       "Loads LIB.so with dlopen, checks its csgi_app_v1 entry (ABI, spec and C++ library versions) and calls "
       "its factory with the --app-arg values. The same library runs unchanged under the FastCGI, CGI and "
       "Python adapters.",
       [](const ModeArgs& a, App) { return load_app(a.value, a.app_args); }},
      {"demo", nullptr, Mode::Kind::source, "serve the built-in demo (hello, /env, /stream)",
       "A small app to try the server: a greeting at /, the request env at /env, a streamed response "
       "written by a delayed writer at /stream.",
       [](const ModeArgs& a, App) { return demo_app(a.app_args); }},
      // Later modes plug in here, e.g.
      //   {"static", "DIR", Mode::Kind::layer, ...}   files from DIR in front of the app (middleware)
      //   {"wsgi", "MODULE:APP", Mode::Kind::source, ...}   a Python WSGI app (bindings)
      //   {"bundle", "DIR", Mode::Kind::layer, ...}   JavaScript module bundles (bundler middleware)
  };
  return table;
}

const Mode* find_mode(std::string_view option) {
  for (const Mode& m : modes())
    if (option == m.option) return &m;
  return nullptr;
}

}  // namespace csgi::cli
