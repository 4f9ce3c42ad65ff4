// The embedding side of `csgi serve --wsgi` / `csgi-fcgi --wsgi` (embed.hpp): starts libpython, imports
// the csgi package and goes through its capsule (embed_api.hpp) for everything else, so the GIL
// bookkeeping and the WSGI bridge exist once, in the extension module.
#include "embed.hpp"

#include <Python.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"
#include "embed_api.hpp"

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
#define CSGI_PYTHON_PROGRAM "/usr/bin/python3"
#endif

namespace csgi::python::embed {
namespace {

const csgi_python_embed_api* g_api = nullptr;

[[noreturn]] void fail(const std::string& what) {
  if (PyErr_Occurred()) PyErr_Print();
  throw std::runtime_error(what);
}

void finalize() {
  if (!g_api || !Py_IsInitialized()) return;
  g_api->reacquire();
  Py_FinalizeEx();
}

void start_interpreter(const std::vector<std::string>& args) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the server owns SIGINT/SIGTERM
  config.parse_argv = 0;
  std::vector<std::string> argv_s{"csgi"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, CSGI_PYTHON_PROGRAM);
  if (!PyStatus_Exception(st)) st = PyConfig_SetBytesArgv(&config, static_cast<Py_ssize_t>(argv.size()), argv.data());
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    throw std::runtime_error(std::string("cannot start Python: ") + (st.err_msg ? st.err_msg : "unknown error"));
}

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

void put_package_dir_first() {
  std::string dir = package_dir();
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(std::filesystem::path(dir) / "csgi", ec)) return;
  PyObject* path = PySys_GetObject("path");  // borrowed
  PyObject* d = PyUnicode_DecodeFSDefault(dir.c_str());
  if (!path || !d || PyList_Insert(path, 0, d) < 0) {
    Py_XDECREF(d);
    fail("cannot put " + dir + " on sys.path");
  }
  Py_DECREF(d);
}

// The extension has its own copy of csgi::log_files (csgi.mw.access_log's writers are there): linked to
// this program's, so that the server's SIGUSR1 reopens them and a worker flushes them before it exits.
void link_extension_logs(PyObject* mod) {
  PyObject* file = PyObject_GetAttrString(mod, "__file__");
  const char* path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : nullptr;
  void* handle = path ? ::dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  Py_XDECREF(file);
  PyErr_Clear();
  if (!handle) return;
  using PeerFn = const log_files::Peer* (*)();
  auto peer = reinterpret_cast<PeerFn>(::dlsym(handle, "csgi_log_files_v1"));
  static std::shared_ptr<void> link;  // for the life of the process: the extension is never unloaded
  if (peer && peer()) link = log_files::link(*peer(), nullptr);
  ::dlclose(handle);  // drops the reference RTLD_NOLOAD took; Python keeps the module loaded
}

}  // namespace

App load_wsgi_app(const std::string& spec, const std::vector<std::string>& args) {
  if (Py_IsInitialized()) throw std::runtime_error("--wsgi: Python is already running in this process");
  start_interpreter(args);
  put_package_dir_first();
  PyObject* mod = PyImport_ImportModule("csgi._csgi");
  if (!mod) fail("--wsgi: cannot import the csgi Python package (set CSGI_PYTHON_DIR to its directory)");
  link_extension_logs(mod);
  PyObject* cap = PyObject_GetAttrString(mod, "_embed_api");
  Py_DECREF(mod);
  const void* p = cap ? PyCapsule_GetPointer(cap, CSGI_PY_EMBED_CAPSULE) : nullptr;
  Py_XDECREF(cap);
  if (!p) fail("--wsgi: the csgi Python package has no embedding entry (csgi._csgi._embed_api)");
  const auto* api = static_cast<const csgi_python_embed_api*>(p);
  if (api->version != CSGI_PY_EMBED_API_VERSION || api->core_layout != detail::core_layout_tag() ||
      api->app_size != sizeof(App))
    fail("--wsgi: the csgi Python package was built from other csgi sources than this program");
  g_api = api;
  App app;
  if (!api->load(spec.c_str(), &app)) fail("--wsgi: cannot load the WSGI app " + spec);
  api->release_for_serving();
  std::atexit(finalize);
  return app;
}

}  // namespace csgi::python::embed
