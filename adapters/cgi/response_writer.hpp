#pragma once
/// Writing a csgi response in CGI response form ("Status: 200 OK", header lines, a blank line, the body),
/// shared by the CGI and FastCGI adapters, and the adapter-boundary catch-all.
///
/// Every body kind is sent: complete bytes, shared bytes, files (read in 64 KB pieces), pull streams
/// (flushed after each chunk, close() always called) and delayed responses — the calling thread waits
/// until the app answers through its Responder from any thread; a streaming Writer writes and flushes on
/// each write() and returns false once the client has gone. A Responder or Writer dropped without an
/// answer or close() ends the response (500 when nothing was sent yet).
#include <chrono>
#include <string>
#include <string_view>

#include "csgi/adapters/cgi/gateway.hpp"
#include "csgi/core/app.hpp"

namespace csgi::cgi {

/// Where the response bytes go (stdout for CGI, the FastCGI stdout stream).
class Output {
public:
  virtual ~Output() = default;
  /// False once the bytes cannot be delivered.
  virtual bool write(std::string_view bytes) = 0;
  virtual bool flush() = 0;
  /// A cheap check, made before each streamed chunk and while waiting for a delayed response.
  virtual bool client_gone() { return false; }
};

/// Calls `app`; an escaping csgi::HttpError becomes a response with its status, any other exception a
/// 500 whose reason is written to csgi.errors (the one catch-all of the adapter boundary).
Response call_app(const App& app, Env& env) noexcept;

/// The "Status:" line and header block of `res`, validated (header names are tokens, values hold no
/// CR, LF or NUL, no "Status" field). The app's Content-Length fields are replaced by `length`, when
/// given: the length the body is sent with (ADP-13). Throws std::invalid_argument for a response that
/// cannot be sent.
std::string format_head(int status, const Headers& headers, std::optional<std::uint64_t> length);

struct SendOptions {
  /// How often a thread waiting for a delayed response checks Output::client_gone().
  std::chrono::milliseconds gone_poll{250};
};

/// Sends `res`. No body is written for HEAD requests nor for 1xx/204/304. A stream or writer body is held
/// to the Content-Length the app declared: nothing past it is written, and running past it or ending
/// short of it fails the response, logged (ADP-13). Returns true when the whole response went out; false
/// when the client went away or the body was cut short or ran long (the caller should drop the
/// connection so the front server sees an incomplete response). Streamed chunks are flushed as
/// they go; the end of a complete response is left in `out` for the adapter to flush (FastCGI sends it
/// with FCGI_END_REQUEST in one write). Never throws; errors are written to csgi.errors.
bool send_response(Response res, Env& env, Output& out, const SendOptions& options = {}) noexcept;

/// One request: build the env from `vars` (400/431 on bad meta-variables), attach `input` and `errors`,
/// call the app through call_app, send the response, then run csgix.cleanup.handlers (after flushing the
/// response). Returns what send_response returns.
bool handle_request(const App& app, Env& env, const char* const* vars, const EnvOptions& env_options, Input& input,
                    ErrorStream& errors, Output& out, const SendOptions& options = {}) noexcept;

}  // namespace csgi::cgi
