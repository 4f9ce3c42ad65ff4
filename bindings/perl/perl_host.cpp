// The program side of --psgi (perl_host.hpp): loads libperl, then the CSGI module, and asks it for the app.
// Nothing here needs Perl's headers or library.
#include "csgi/bindings/perl/perl_host.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "csgi/bindings/perl/perl_host_abi.h"
#include "csgi/core/app_library.hpp"

// Set by bindings/perl/CMakeLists.txt.
#ifndef CSGI_LIBPERL
#define CSGI_LIBPERL "libperl.so"
#endif
#ifndef CSGI_PERL_BUILD_DIR
#define CSGI_PERL_BUILD_DIR ""
#endif
#ifndef CSGI_PERL_BUILD_PROGRAM_DIR
#define CSGI_PERL_BUILD_PROGRAM_DIR ""
#endif
#ifndef CSGI_PERL_INSTALL_RELATIVE_DIR
#define CSGI_PERL_INSTALL_RELATIVE_DIR ""
#endif

namespace csgi::perl_host {
namespace {

constexpr const char* needs = "--psgi needs the CSGI Perl module: ";

const csgi_perl_host* open_host(const std::string& dir) {
  if (dir.empty())
    throw std::runtime_error(std::string(needs) + "no Perl library directory is known for this program "
                             "(set CSGI_PERL_DIR to the directory holding CSGI.pm)");
  // libperl's symbols global: the module and the XS modules the app loads resolve them there.
  if (!::dlopen(CSGI_LIBPERL, RTLD_NOW | RTLD_GLOBAL))
    throw std::runtime_error(std::string(needs) + "cannot load libperl (" + ::dlerror() + ")");
  std::string file = (std::filesystem::path(dir) / "auto" / "CSGI" / "CSGI.so").string();
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: the interpreter lives on
  if (!handle)
    throw std::runtime_error(std::string(needs) + "cannot load it (" + ::dlerror() +
                             "); build the csgi_perl target, install csgi's perl component, or set "
                             "CSGI_PERL_DIR to the directory holding CSGI.pm");
  auto entry = reinterpret_cast<csgi_perl_host_entry_fn>(::dlsym(handle, CSGI_PERL_HOST_ENTRY));
  const csgi_perl_host* host = entry ? entry() : nullptr;
  if (!host) throw std::runtime_error(std::string(needs) + file + " has no " CSGI_PERL_HOST_ENTRY " entry");
  if (host->abi_version != CSGI_PERL_HOST_ABI_VERSION || host->cxx_abi != detail::cxx_abi_tag() ||
      host->core_layout != detail::core_layout_tag() || host->app_size != sizeof(App))
    throw std::runtime_error("--psgi: " + file + " was built from other csgi sources than this program");
  return host;
}

}  // namespace

std::string lib_dir() {
  if (const char* e = std::getenv("CSGI_PERL_DIR"); e && *e) return e;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path program_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec || program_dir.empty()) return {};
  if (*CSGI_PERL_BUILD_PROGRAM_DIR && fs::equivalent(program_dir, CSGI_PERL_BUILD_PROGRAM_DIR, ec))
    return CSGI_PERL_BUILD_DIR;
  if (!*CSGI_PERL_INSTALL_RELATIVE_DIR) return {};
  return (program_dir / CSGI_PERL_INSTALL_RELATIVE_DIR).lexically_normal().string();
}

App load_psgi_app(const std::string& psgi_file, unsigned workers, const std::vector<std::string>& args) {
  const csgi_perl_host* host = open_host(lib_dir());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  App app;
  char err[2048] = "";
  if (host->load_psgi_app(psgi_file.c_str(), workers, argv.data(), static_cast<int>(argv.size()), &app, err,
                          sizeof err) != 0)
    throw std::runtime_error(err);
  return app;
}

}  // namespace csgi::perl_host
