#pragma once
/// Serving from inside a Python process (serve.cpp): what csgi.serve() and `python3 -m csgi serve`
/// (command.cpp) share.
#include <functional>
#include <string>

#include "common.hpp"

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

/// `python3 -m csgi`: the csgi._csgi._main(argv) function (command.cpp).
void bind_command(py::module_& m);

}  // namespace csgi::python
