#pragma once
/// HttpExceptions (Plack::Middleware::HTTPExceptions): turns a csgi::HttpError thrown by the app —
/// while it runs, or from a delayed response's callable before it answers — into a response with that
/// status. An HttpException (below) also carries headers and a body, e.g. a redirect:
///
///   throw csgi::mw::HttpException::redirect("/login");        // 302 with Location
///   throw csgi::mw::HttpException(405, "no", {{"Allow", "GET"}});
///
/// For 4xx the message is shown in the body; for 5xx it is written to csgi.errors and the body only
/// says the status (no internals leak). The body is text/plain (Response::error), or an RFC 9457
/// application/problem+json document (csgi::problem_response) when the request's Accept prefers JSON
/// or the `format` option says so. Any other exception passes up untouched, as does an HttpError
/// thrown after a streaming response has started (its status line is already gone).
/// Reads:  csgi.errors, HTTP_ACCEPT. Writes: nothing in the env.
/// Order:  inside anything that should see the converted response (access_log, error_document).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"
#include "csgi/core/http_error.hpp"

namespace csgi::mw {

/// An HttpError with response headers and, optionally, a body of its own.
class HttpException : public HttpError {
public:
  HttpException(int status, const std::string& message = {}, Headers headers = {},
                std::optional<std::string> body = std::nullopt)
      : HttpError(status, message), headers_(std::move(headers)), body_(std::move(body)) {}
  /// A redirect to `location` (301, 302, 303, 307 or 308; std::invalid_argument otherwise).
  static HttpException redirect(std::string location, int status = 302);

  const Headers& headers() const noexcept { return headers_; }
  const std::optional<std::string>& body() const noexcept { return body_; }

private:
  Headers headers_;
  std::optional<std::string> body_;
};

/// The body of a converted error (an HttpException with a body of its own keeps it).
enum class ErrorFormat : std::uint8_t {
  by_accept,     // problem+json when Accept prefers JSON (csgi::prefers_problem_json), else text/plain
  text,          // always text/plain: "404 Not Found: <message>"
  problem_json,  // always application/problem+json
};

struct HttpExceptionsOptions {
  /// Show the message of 5xx errors in the body too (development only).
  bool show_server_errors = false;
  ErrorFormat format = ErrorFormat::by_accept;
};

class HttpExceptions {
public:
  explicit HttpExceptions(App next, HttpExceptionsOptions options = {});
  Response operator()(Env& env);

  /// The response for `e` to a request whose Accept field is `accept` (also used by adapters'
  /// catch-alls if they like); logs 5xx messages to `errors`.
  static Response to_response(const HttpError& e, ErrorStream& errors, const HttpExceptionsOptions& options = {},
                              std::string_view accept = {});

private:
  App next_;
  HttpExceptionsOptions options_;
};

}  // namespace csgi::mw
