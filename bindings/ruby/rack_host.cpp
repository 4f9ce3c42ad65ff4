// The program side of --rack (rack_host.hpp): finds the Rack host module, dlopen()s it and asks it for the
// app. Nothing here needs Ruby's headers or library.
#include "csgi/bindings/ruby/rack_host.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "csgi/bindings/ruby/rack_host_abi.h"
#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"

// Where the module is (bindings/ruby/CMakeLists.txt): in the build tree, for this program as built there,
// and under the install prefix, relative to the installed program.
#ifndef CSGI_RACK_HOST_BUILD_FILE
#define CSGI_RACK_HOST_BUILD_FILE ""
#endif
#ifndef CSGI_RACK_BUILD_PROGRAM_DIR
#define CSGI_RACK_BUILD_PROGRAM_DIR ""
#endif
#ifndef CSGI_RACK_INSTALL_RELATIVE_FILE
#define CSGI_RACK_INSTALL_RELATIVE_FILE ""
#endif

namespace csgi::rack_host {
namespace {

constexpr const char* needs = "--rack needs the Rack host module: ";

// The module has its own copy of csgi::log_files (csgi::core is linked into it): linked to this
// program's, so that a worker's flush before _exit() and the flush at exit() reach it (Ruby's at_exit
// handlers run there).
void link_log_files(void* handle) {
  using PeerFn = const log_files::Peer* (*)();
  auto peer = reinterpret_cast<PeerFn>(::dlsym(handle, "csgi_log_files_v1"));
  static std::shared_ptr<void> link;  // for the life of the process: the module is never unloaded
  if (peer && peer()) link = log_files::link(*peer(), nullptr);
}

const csgi_rack_host* open_host(const std::string& file) {
  if (file.empty())
    throw std::runtime_error(std::string(needs) + "no path is known for this program (set CSGI_RACK_HOST to "
                             "the path of " CSGI_RACK_HOST_FILE ")");
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw std::runtime_error(std::string(needs) + "cannot load it (" + ::dlerror() +
                             "); build the csgi_rack_host target, install csgi's ruby component, or set "
                             "CSGI_RACK_HOST to the path of " CSGI_RACK_HOST_FILE);
  // Never closed: the Ruby VM it started lives until the process exits.
  auto entry = reinterpret_cast<csgi_rack_host_entry_fn>(::dlsym(handle, CSGI_RACK_HOST_ENTRY));
  const csgi_rack_host* host = entry ? entry() : nullptr;
  if (!host) throw std::runtime_error(std::string(needs) + file + " has no " CSGI_RACK_HOST_ENTRY " entry");
  if (host->abi_version != CSGI_RACK_HOST_ABI_VERSION || host->cxx_abi != detail::cxx_abi_tag() ||
      host->core_layout != detail::core_layout_tag() || host->app_size != sizeof(App))
    throw std::runtime_error("--rack: " + file + " was built from other csgi sources than this program");
  link_log_files(handle);
  return host;
}

}  // namespace

std::string module_path() {
  if (const char* e = std::getenv("CSGI_RACK_HOST"); e && *e) return e;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path program_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec || program_dir.empty()) return {};
  if (*CSGI_RACK_BUILD_PROGRAM_DIR && fs::equivalent(program_dir, CSGI_RACK_BUILD_PROGRAM_DIR, ec))
    return CSGI_RACK_HOST_BUILD_FILE;
  if (!*CSGI_RACK_INSTALL_RELATIVE_FILE) return {};
  return (program_dir / CSGI_RACK_INSTALL_RELATIVE_FILE).lexically_normal().string();
}

App load_rack_app(const std::string& config_ru, unsigned workers, const std::vector<std::string>& args) {
  const csgi_rack_host* host = open_host(module_path());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  App app;
  char err[4096] = "";
  if (host->load_rack_app(config_ru.c_str(), workers, argv.data(), static_cast<int>(argv.size()), &app, err,
                          sizeof err) != 0)
    throw std::runtime_error(err);
  return app;
}

}  // namespace csgi::rack_host
