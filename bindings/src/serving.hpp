#pragma once
/// Serving from inside a Python process (serve.cpp): what csgi.serve() and `python3 -m csgi serve`
/// (command.cpp) share.
#include <functional>
#include <string>

#include "common.hpp"
#ifdef CSGI_PY_RUNNER
#include "csgi/adapters/runner/options.hpp"
#endif

namespace csgi::python {

/// The csgi.App of the WSGI app (asgi_workers < 0) or ASGI app (asgi_workers = the server's --workers)
/// that `spec` ("module:attr") names, imported as gunicorn does. Called with the GIL held; throws what
/// the import raised.
App load_spec(const char* spec, int asgi_workers);

/// Runs `serve` on this thread with the GIL released (a fork from this thread takes it back around the
/// fork, as os.fork() does), then puts back the dispositions and mask of the signals the server takes
/// over (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGCHLD, SIGPIPE). `serve` owns what it serves and must drop
/// it before returning, while the GIL is free. Called with the GIL held. Returns serve()'s status; a
/// std::exception from it is returned in `failure` with status 1.
int serve_released(const std::function<int()>& serve, std::string& failure);

#ifdef CSGI_PY_RUNNER
/// `python3 -m csgi`: the csgi._csgi._main(argv) function (command.cpp).
void bind_command(py::module_& m);

/// csgi.serve()'s server options: `words` (words[0] a program name) read by csgi serve's parser, for the
/// HTTP server; --reload, --help and the other adapters are refused. Throws ValueError with the reason.
runner::Options server_options(std::vector<std::string> words);
#endif

}  // namespace csgi::python
