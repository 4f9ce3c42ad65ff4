#include "csgi/core/app_library.hpp"

#include <dlfcn.h>

#include <memory>
#include <stdexcept>

namespace csgi {

App load_app(const std::string& path, const AppArgs& args) {
  // A path without a slash would make dlopen search the library path; loading an app is always by file.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // RTLD_NODELETE: the library stays mapped once the server lets go of it, so nothing of it (a thread it
  // started, a pointer its globals hold, its copy of csgi::log_files) outlives its code. GCC's unique
  // symbols keep most C++ libraries loaded anyway; a library built by clang has none.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) throw std::runtime_error("cannot load app library " + path + ": " + ::dlerror());
  std::shared_ptr<void> keep(handle, [](void* h) { ::dlclose(h); });
  using EntryFn = const csgi_app_entry* (*)();
  auto fn = reinterpret_cast<EntryFn>(::dlsym(handle, "csgi_app_v1"));
  if (!fn) throw std::runtime_error(path + " is not a csgi app library: no csgi_app_v1 symbol (use CSGI_APP(factory))");
  const csgi_app_entry* e = fn();
  if (!e || e->abi_version != CSGI_APP_ABI_VERSION)
    throw std::runtime_error(path + ": app ABI version " + std::to_string(e ? e->abi_version : -1) +
                             ", this server speaks " + std::to_string(CSGI_APP_ABI_VERSION));
  if (std::string_view(e->spec_version) != keys::spec_version)
    throw std::runtime_error(path + ": built for csgi spec " + e->spec_version + ", this server implements " +
                             std::string(keys::spec_version));
  if (e->cxx_abi != detail::cxx_abi_tag() || e->app_size != sizeof(App))
    throw std::runtime_error(path + ": built against a different C++ standard library ABI; rebuild it");
  if (e->core_layout != detail::core_layout_tag())
    throw std::runtime_error(path + ": built against a different version of csgi's core headers; rebuild it");
  App app;
  try {
    app = e->factory(args);
  } catch (const std::exception& x) {
    throw std::runtime_error(path + ": the app's factory (CSGI_APP) threw: " + x.what());
  } catch (...) {
    throw std::runtime_error(path + ": the app's factory (CSGI_APP) threw an exception that is not a std::exception");
  }
  if (!app) throw std::runtime_error(path + ": the factory returned an empty app");
  // The library's log files (its own copy of csgi::log_files) reopen and flush with the loader's.
  std::shared_ptr<void> logs;
  using PeerFn = const log_files::Peer* (*)();
  if (auto peer = reinterpret_cast<PeerFn>(::dlsym(handle, "csgi_log_files_v1")); peer && peer())
    logs = log_files::link(*peer(), keep);
  return [keep, logs, app = std::move(app)](Env& env) { return app(env); };
}

}  // namespace csgi
