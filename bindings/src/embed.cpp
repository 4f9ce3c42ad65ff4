// The Python host module, libcsgi_python_host.so (python_host_abi.h): the embedding side of
// `csgi serve --wsgi` / `csgi-fcgi --wsgi`. Starts libpython, imports the csgi package and goes through
// its capsule (embed_api.hpp) for everything else, so the GIL bookkeeping and the WSGI bridge exist once,
// in the extension module. Uses only csgi's core headers, no csgi library: the program that loads it owns
// the server and the log registry.
#include <Python.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "csgi/bindings/python_host_abi.h"
#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"
#include "embed_api.hpp"

#ifndef CSGI_PYTHON_PROGRAM
#define CSGI_PYTHON_PROGRAM "/usr/bin/python3"
#endif

namespace csgi::python::host {
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

void put_package_dir_first(const std::string& dir) {
  if (dir.empty()) return;
  PyObject* path = PySys_GetObject("path");  // borrowed
  PyObject* d = PyUnicode_DecodeFSDefault(dir.c_str());
  if (!path || !d || PyList_Insert(path, 0, d) < 0) {
    Py_XDECREF(d);
    fail("cannot put " + dir + " on sys.path");
  }
  Py_DECREF(d);
}

// The extension's copy of csgi::log_files (csgi.mw.access_log's writers are there), for the program to
// link to its own.
const void* extension_log_peer(PyObject* mod) {
  PyObject* file = PyObject_GetAttrString(mod, "__file__");
  const char* path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : nullptr;
  void* handle = path ? ::dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  Py_XDECREF(file);
  PyErr_Clear();
  if (!handle) return nullptr;
  using PeerFn = const log_files::Peer* (*)();
  auto peer = reinterpret_cast<PeerFn>(::dlsym(handle, "csgi_log_files_v1"));
  const void* p = peer ? peer() : nullptr;
  ::dlclose(handle);  // drops the reference RTLD_NOLOAD took; Python keeps the module loaded
  return p;
}

App load(const std::string& spec, int asgi_workers, const std::vector<std::string>& args,
         const std::string& package_dir, const void** log_peer) {
  if (Py_IsInitialized()) throw std::runtime_error("--wsgi: Python is already running in this process");
  start_interpreter(args);
  put_package_dir_first(package_dir);
  PyObject* mod = PyImport_ImportModule("csgi._csgi");
  if (!mod) fail("--wsgi: cannot import the csgi Python package from " + package_dir +
                 " (set CSGI_PYTHON_DIR to its directory)");
  *log_peer = extension_log_peer(mod);
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
  if (asgi_workers < 0 ? !api->load(spec.c_str(), &app)
                       : !api->load_asgi(spec.c_str(), static_cast<unsigned>(asgi_workers), &app))
    fail(asgi_workers < 0 ? "--wsgi: cannot load the WSGI app " + spec : "--asgi: cannot load the ASGI app " + spec);
  api->release_for_serving();
  std::atexit(finalize);
  return app;
}

int load_any(const char* spec, int asgi_workers, const char* const* argv, int argc, const char* package_dir,
             void* app_out, const void** log_peer_out, char* err, size_t err_size) noexcept {
  *log_peer_out = nullptr;
  try {
    *static_cast<App*>(app_out) =
        load(spec, asgi_workers, std::vector<std::string>(argv, argv + argc), package_dir, log_peer_out);
    return 0;
  } catch (const std::exception& e) {
    if (err_size) {
      std::strncpy(err, e.what(), err_size - 1);
      err[err_size - 1] = '\0';
    }
    return -1;
  }
}

int load_wsgi_app(const char* spec, const char* const* argv, int argc, const char* package_dir, void* app_out,
                  const void** log_peer_out, char* err, size_t err_size) noexcept {
  return load_any(spec, -1, argv, argc, package_dir, app_out, log_peer_out, err, err_size);
}

int load_asgi_app(const char* spec, unsigned workers, const char* const* argv, int argc, const char* package_dir,
                  void* app_out, const void** log_peer_out, char* err, size_t err_size) noexcept {
  return load_any(spec, static_cast<int>(workers), argv, argc, package_dir, app_out, log_peer_out, err, err_size);
}

}  // namespace

}  // namespace csgi::python::host

extern "C" __attribute__((visibility("default"))) const csgi_python_host* csgi_python_host_v1() {
  static const csgi_python_host host{CSGI_PYTHON_HOST_ABI_VERSION, csgi::detail::cxx_abi_tag(),
                                     csgi::detail::core_layout_tag(), sizeof(csgi::App),
                                     &csgi::python::host::load_wsgi_app, &csgi::python::host::load_asgi_app};
  return &host;
}
