#pragma once
/// The one format in which every adapter (standalone HTTP/1.1 and HTTP/2, FastCGI, CGI, the Python hosts)
/// logs a request the app failed:
///   csgi: 500 for "GET /path?q=1 HTTP/1.1": the app raised: <what>
/// with the request line as the client sent it; a multi-line reason (a Python traceback) follows on the
/// lines after it. A failure after the response had begun (its head sent) reads
///   csgi: response cut short for "GET /path HTTP/1.1": …
#include <exception>
#include <string>
#include <string_view>

#include "csgi/core/env.hpp"

namespace csgi {

/// `csgi: STATUS for "METHOD URI PROTOCOL": WHAT`; status 0: the response had begun and was cut short.
std::string app_failure_line(const Env& env, int status, std::string_view what);

/// The line for an exception from the app: "the app raised: what()" for a std::exception, "the app raised
/// a non-standard exception" for anything else.
std::string app_exception_line(const Env& env, int status, std::exception_ptr e);

}  // namespace csgi
