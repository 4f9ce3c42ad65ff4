#pragma once
/// Serving a Python app from a csgi server program (csgi, and csgi-fcgi and csgi-cgi, the same program
/// under other names): the --wsgi and --asgi modes (adapters/cli/modes.cpp) call load_wsgi_app() and
/// load_asgi_app() and serve what they return; before that, adapters/cli/main.cpp hands a command line
/// the Python program can serve alone to exec_python_server().
/// The interpreter lives in the Python host module (python_host_abi.h), loaded with dlopen() on the first
/// call: a program built with this file has no libpython among its dependencies.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::python_host {

/// The csgi Python package directory (the one holding csgi/): $CSGI_PYTHON_DIR when set; else the build
/// tree's for the program as built there; else the one installed beside the program
/// (<prefix>/bin → <prefix>/lib/python3/dist-packages). "" when none is known.
std::string package_dir();

/// Loads <package_dir>/csgi/libcsgi_python_host.so (RTLD_GLOBAL: C extension modules resolve libpython's
/// symbols through it), then has it start the interpreter (Python's signal handlers not installed,
/// sys.argv = ["csgi", args...], sys.executable = the Python csgi was built for), put the package
/// directory and the current directory on sys.path, import `spec` ("module:attr" as gunicorn: attr may be
/// a.b or make_app(); default `application`, then `app`) and return it as a csgi::App. The calling thread
/// then gives up the GIL for serving: requests take it per call, and prefork masters forking from this
/// thread keep the interpreter consistent. Python is finalised at exit. Throws std::runtime_error (the
/// Python traceback printed to stderr first); "--wsgi needs the Python host module: ..." when the module
/// or libpython cannot be loaded.
App load_wsgi_app(const std::string& spec, const std::vector<std::string>& args = {});

/// As load_wsgi_app, for an ASGI 3 app (`csgi serve --asgi`), served through csgi._asgi_host: an asyncio
/// event loop on a thread of each serving process; with `workers` 0 it and the lifespan startup start
/// now (a failing startup throws, its traceback printed), else in each forked worker (which then ends
/// with status 3 when the startup fails).
App load_asgi_app(const std::string& spec, unsigned workers, const std::vector<std::string>& args = {});

/// `csgi serve --asgi` run by the Python program csgi was built for (/usr/bin/python3): replaces this
/// process (same pid, arguments, environment) with `python3 -c <boot> <package_dir> csgi serve ...`, which
/// serves through the csgi package's `python3 -m csgi` command, the same server and command line in the
/// statically linked interpreter (libpython3.11.so runs the same Python with about 17% more instructions).
/// Returns only when that cannot be done (no such program, no csgi package with its extension and host
/// module at package_dir(), $CSGI_PYTHON_EMBED set non-empty, or execv() failed); the caller then embeds.
void exec_python_server(int argc, char** argv);

}  // namespace csgi::python_host
