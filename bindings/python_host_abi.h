#pragma once
/// The C interface of the Python host module, libcsgi_python_host.so: the part of `csgi serve --wsgi` and
/// `csgi-fcgi --wsgi` that embeds libpython. The programs do not link libpython; they dlopen() this module
/// (python_host.cpp) only when a Python app is asked for, so serving a C++ app never maps the interpreter.
/// The module lies in the csgi Python package directory, next to the extension csgi._csgi it works with.
#include <stddef.h>

#define CSGI_PYTHON_HOST_ABI_VERSION 2
#define CSGI_PYTHON_HOST_FILE "libcsgi_python_host.so"
#define CSGI_PYTHON_HOST_ENTRY "csgi_python_host_v1"

#ifdef __cplusplus
extern "C" {
#endif

/// What the module's entry point `csgi_python_host_v1()` returns. Plain C layout; never changes for a
/// given abi_version.
struct csgi_python_host {
  int abi_version;            /* CSGI_PYTHON_HOST_ABI_VERSION */
  unsigned long cxx_abi;      /* csgi::detail::cxx_abi_tag() the module was built with */
  unsigned long core_layout;  /* csgi::detail::core_layout_tag() */
  unsigned long app_size;     /* sizeof(csgi::App) */
  /// Starts the interpreter (sys.argv = ["csgi", argv...]), puts package_dir first on sys.path, imports the
  /// csgi package from there and loads the WSGI app `spec` ("module:attr") into *app_out, a csgi::App the
  /// caller constructed. *log_peer_out receives the extension's log registry (a const
  /// csgi::log_files::Peer*) or NULL. The calling thread then gives up the GIL for serving; Python is
  /// finalised at exit. Returns 0; or -1 with a message in err (NUL-terminated, at most err_size bytes),
  /// the Python traceback printed to stderr first. Called at most once per process.
  int (*load_wsgi_app)(const char* spec, const char* const* argv, int argc, const char* package_dir,
                       void* app_out, const void** log_peer_out, char* err, size_t err_size);
  /// As load_wsgi_app, for an ASGI app (`csgi serve --asgi`): `workers` is the server's --workers (0:
  /// the event loop and the lifespan startup start now; N: in each forked worker).
  int (*load_asgi_app)(const char* spec, unsigned workers, const char* const* argv, int argc,
                       const char* package_dir, void* app_out, const void** log_peer_out, char* err,
                       size_t err_size);
};

typedef const struct csgi_python_host* (*csgi_python_host_entry_fn)(void);

#ifdef __cplusplus
}
#endif
