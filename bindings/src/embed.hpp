#pragma once
/// Embedding Python in a csgi server program: `csgi serve --wsgi module:app` (adapters/cli) and
/// `csgi-fcgi --wsgi module:app` (adapters/fastcgi) call load_wsgi_app() and serve what it returns.
/// Built into those programs only when CMake finds Python's embedding library (bindings/CMakeLists.txt
/// defines CSGI_EMBED_PYTHON then).
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::python::embed {

/// Starts the interpreter (Py_InitializeFromConfig: Python's signal handlers not installed, sys.argv =
/// ["csgi", args...], sys.executable = the Python csgi was built for), puts the csgi package directory
/// ($CSGI_PYTHON_DIR, else the build tree's) and the current directory on sys.path, imports `spec`
/// ("module:attr" as gunicorn: attr may be a.b or make_app(); default `application`, then `app`) and
/// returns it as a csgi::App. The calling thread then gives up the GIL for serving: requests take it per
/// call, and prefork masters forking from this thread keep the interpreter consistent. Python is
/// finalised at exit. Throws std::runtime_error (the Python traceback printed to stderr first).
App load_wsgi_app(const std::string& spec, const std::vector<std::string>& args = {});

}  // namespace csgi::python::embed
