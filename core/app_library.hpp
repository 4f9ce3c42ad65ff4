#pragma once
/// Apps shipped as shared libraries, loadable unchanged by every adapter (`csgi serve --app libx.so`,
/// the FastCGI and CGI adapters, `csgi.load_app()` in Python).
///
/// An app library defines one factory and exports it with CSGI_APP:
///
///   csgi::App make_app(const csgi::AppArgs& args) { return [](csgi::Env&) { ... }; }
///   CSGI_APP(make_app)
///
/// which emits the C entry point `csgi_app_v1` (spec rule LIB-1). The loader checks the entry's ABI
/// version, the spec version and the C++ library ABI it was built with, and refuses a mismatch with a
/// clear message instead of crashing.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/log_files.hpp"

// 2: Stream::trailers() and Writer::set_trailers() joined the vtables.
// 3: Headers holds a sealed HeaderBlock (its layout and inline readers changed).
#define CSGI_APP_ABI_VERSION 3

namespace csgi {

/// Arguments given to the factory: `--app-arg` values from the command line, in order.
using AppArgs = std::vector<std::string>;
using AppFactory = App (*)(const AppArgs&);

/// Loads `path` (dlopen) and builds its app with `args`. The library stays loaded while any copy of the
/// returned App exists. Throws std::runtime_error with the reason when it cannot.
App load_app(const std::string& path, const AppArgs& args = {});

namespace detail {
inline constexpr unsigned long cxx_abi_tag() {
#if defined(__GLIBCXX__)
  return static_cast<unsigned long>(_GLIBCXX_USE_CXX11_ABI) + 2;
#else
  return 1;
#endif
}
/// Changes whenever the layout of the types an app shares with the server changes size.
inline constexpr unsigned long core_layout_tag() {
  return sizeof(Env) * 1000003UL + sizeof(Response) * 1009UL + sizeof(Value) * 31UL + sizeof(Headers);
}
}  // namespace detail
}  // namespace csgi

extern "C" {
/// What `csgi_app_v1()` returns. Plain C layout; never changes for a given abi_version.
struct csgi_app_entry {
  int abi_version;              // CSGI_APP_ABI_VERSION
  const char* spec_version;     // csgi::keys::spec_version
  unsigned long cxx_abi;        // csgi::detail::cxx_abi_tag()
  unsigned long app_size;       // sizeof(csgi::App)
  unsigned long core_layout;    // csgi::detail::core_layout_tag()
  csgi::AppFactory factory;
};
}

#define CSGI_APP(factory_fn)                                                                                 \
  extern "C" __attribute__((visibility("default"))) const csgi_app_entry* csgi_app_v1() {                  \
    static const csgi_app_entry entry{CSGI_APP_ABI_VERSION, "1.0", ::csgi::detail::cxx_abi_tag(),          \
                                      sizeof(::csgi::App), ::csgi::detail::core_layout_tag(), &factory_fn}; \
    return &entry;                                                                                           \
  }                                                                                                          \
  extern "C" __attribute__((visibility("default"))) const ::csgi::log_files::Peer* csgi_log_files_v1() {   \
    return ::csgi::log_files::self();                                                                        \
  }
