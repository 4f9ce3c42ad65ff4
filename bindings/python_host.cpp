// The program side of --wsgi (python_host.hpp): finds the Python host module beside the csgi package,
// dlopen()s it and asks it for the app. Nothing here needs Python's headers or library.
#include "csgi/bindings/python_host.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "csgi/bindings/python_host_abi.h"
#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"

// Where the csgi package is (bindings/CMakeLists.txt): in the build tree, for this program as built there
// (CSGI_PYTHON_BUILD_PROGRAM_DIR), and under the install prefix, relative to the installed program.
#ifndef CSGI_PYTHON_PACKAGE_DIR
#define CSGI_PYTHON_PACKAGE_DIR ""
#endif
#ifndef CSGI_PYTHON_BUILD_PROGRAM_DIR
#define CSGI_PYTHON_BUILD_PROGRAM_DIR ""
#endif
#ifndef CSGI_PYTHON_INSTALL_RELATIVE_DIR
#define CSGI_PYTHON_INSTALL_RELATIVE_DIR ""
#endif
#ifndef CSGI_PYTHON_PROGRAM
#define CSGI_PYTHON_PROGRAM ""
#endif

namespace csgi::python_host {
namespace {

constexpr const char* needs = "--wsgi needs the Python host module: ";

const csgi_python_host* open_host(const std::string& dir) {
  if (dir.empty())
    throw std::runtime_error(std::string(needs) + "no csgi Python package directory is known for this program "
                             "(set CSGI_PYTHON_DIR to the directory holding csgi/)");
  std::string file = (std::filesystem::path(dir) / "csgi" / CSGI_PYTHON_HOST_FILE).string();
  // RTLD_GLOBAL: the module's libpython serves the symbols of the C extensions Python imports later.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    throw std::runtime_error(std::string(needs) + "cannot load it (" + ::dlerror() +
                             "); build the csgi_python target, install csgi's python component, or set "
                             "CSGI_PYTHON_DIR to the directory holding csgi/" CSGI_PYTHON_HOST_FILE);
  // Never closed: the interpreter it started lives until the process exits.
  auto entry = reinterpret_cast<csgi_python_host_entry_fn>(::dlsym(handle, CSGI_PYTHON_HOST_ENTRY));
  const csgi_python_host* host = entry ? entry() : nullptr;
  if (!host) throw std::runtime_error(std::string(needs) + file + " has no " CSGI_PYTHON_HOST_ENTRY " entry");
  if (host->abi_version != CSGI_PYTHON_HOST_ABI_VERSION || host->cxx_abi != detail::cxx_abi_tag() ||
      host->core_layout != detail::core_layout_tag() || host->app_size != sizeof(App))
    throw std::runtime_error("--wsgi: " + file + " was built from other csgi sources than this program");
  return host;
}

}  // namespace

// $CSGI_PYTHON_DIR; else the build tree's package for the program in the build tree; else the package
// installed beside the program (bin/../lib/python3/dist-packages). An installed program never looks in
// the tree it was built in: that may hold other sources by now, or be gone.
std::string package_dir() {
  if (const char* e = std::getenv("CSGI_PYTHON_DIR"); e && *e) return e;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path program_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec || program_dir.empty()) return {};
  if (*CSGI_PYTHON_BUILD_PROGRAM_DIR && fs::equivalent(program_dir, CSGI_PYTHON_BUILD_PROGRAM_DIR, ec))
    return CSGI_PYTHON_PACKAGE_DIR;
  if (!*CSGI_PYTHON_INSTALL_RELATIVE_DIR) return {};
  return (program_dir / CSGI_PYTHON_INSTALL_RELATIVE_DIR).lexically_normal().string();
}

namespace {

App load_python_app(const std::string& spec, const std::vector<std::string>& args, int asgi_workers) {
  std::string dir = package_dir();
  const csgi_python_host* host = open_host(dir);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  App app;
  const void* peer = nullptr;
  char err[1024] = "";
  int rc = asgi_workers < 0
               ? host->load_wsgi_app(spec.c_str(), argv.data(), static_cast<int>(argv.size()), dir.c_str(), &app,
                                     &peer, err, sizeof err)
               : host->load_asgi_app(spec.c_str(), static_cast<unsigned>(asgi_workers), argv.data(),
                                     static_cast<int>(argv.size()), dir.c_str(), &app, &peer, err, sizeof err);
  if (rc != 0) throw std::runtime_error(err);
  // The extension has its own copy of csgi::log_files (csgi.mw.access_log's writers are there): linked to
  // this program's, so that the server's SIGUSR1 reopens them and a worker flushes them before it exits.
  static std::shared_ptr<void> link;  // for the life of the process: the extension is never unloaded
  if (peer) link = log_files::link(*static_cast<const log_files::Peer*>(peer), nullptr);
  return app;
}

}  // namespace

App load_wsgi_app(const std::string& spec, const std::vector<std::string>& args) {
  return load_python_app(spec, args, -1);
}

App load_asgi_app(const std::string& spec, unsigned workers, const std::vector<std::string>& args) {
  return load_python_app(spec, args, static_cast<int>(workers));
}

namespace {

// The package at `dir` has what both ways of serving need: the extension (python3's side) and the host
// module (so that a package the embedded way would refuse is refused with its message, not by python3).
bool complete_package(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path pkg = fs::path(dir) / "csgi";
  if (dir.empty() || !fs::is_regular_file(pkg / CSGI_PYTHON_HOST_FILE, ec)) return false;
  for (fs::directory_iterator it(pkg, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with("_csgi.") && name.ends_with(".so")) return true;
  }
  return false;
}

}  // namespace

void exec_python_server(int argc, char** argv) {
  if (const char* e = std::getenv("CSGI_PYTHON_EMBED"); e && *e) return;
  const char* program = CSGI_PYTHON_PROGRAM;
  std::string dir = package_dir();
  if (!*program || ::access(program, X_OK) != 0 || !complete_package(dir)) return;
  // sys.path as embedded: the package directory in place of -c's "" (before the rest under PYTHONSAFEPATH,
  // which puts no ""; the app's directory goes first when it is imported); sys.argv is then set to
  // ["csgi", --app-arg...] by the command, and the process is named csgi again (ps -C csgi, top).
  static const char boot[] =
      "import sys; sys.path[:1 if sys.path[:1] == [''] else 0] = sys.argv[1:2]; from csgi._csgi import _main; "
      "sys.exit(_main(sys.argv[2:], process_name='csgi'))";
  std::vector<char*> args{const_cast<char*>(program), const_cast<char*>("-c"), const_cast<char*>(boot), dir.data(),
                          const_cast<char*>("csgi")};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(program, args.data());
}

}  // namespace csgi::python_host
