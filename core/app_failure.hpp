#pragma once
/// The one format in which every adapter (standalone HTTP/1.1 and HTTP/2, FastCGI, CGI, the Python hosts)
/// logs a request the app failed:
///   csgi: 500 for "GET /path?q=1 HTTP/1.1": the app raised: <what>
/// with the request line as the client sent it; a multi-line reason (a Python traceback) follows on the
/// lines after it. A failure after the response had begun (its head sent) reads
///   csgi: response cut short for "GET /path HTTP/1.1": …
/// and app_failure_response() is what every adapter answers for an exception from the app (ADP-5, ADP-6).
#include <exception>
#include <string>
#include <string_view>

#include "csgi/core/env.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

/// `csgi: STATUS for "METHOD URI PROTOCOL": WHAT`; status 0: the response had begun and was cut short.
std::string app_failure_line(const Env& env, int status, std::string_view what);

/// The line for an exception from the app: "the app raised: what()" for a std::exception, "the app raised
/// a non-standard exception" for anything else.
std::string app_exception_line(const Env& env, int status, std::exception_ptr e);

/// The response an adapter sends for exception `e` from the app, logged to the env's csgi.errors where the
/// server is at fault: an HttpError below 500 answers its status with its message (the client's mistake,
/// not logged); an HttpError of 500 or more answers its status without the message, and anything else
/// (an HttpError of no valid status too) answers 500, both logged with app_exception_line(). The body is
/// text, or RFC 9457 problem+json when the request's Accept prefers JSON (error_response(), core/json.hpp).
Response app_failure_response(const Env& env, std::exception_ptr e);

}  // namespace csgi
