#pragma once
/// AccessLog — one line per request in Apache's log formats (Plack::Middleware::AccessLog(::Timed),
/// mod_log_config), written by a background LogWriter so a request never waits for the disk.
///
/// `format` is "common", "combined", "combined_id" (combined + request id + %D), "json", or an Apache
/// LogFormat string. Directives: %h %a (REMOTE_ADDR) %l (-) %u (REMOTE_USER) %t (request start, local time;
/// %{strftime}t, %{sec|msec|usec}t) %r (first line) %m %U %q %H %v %V %p %>s %s %b (body bytes, "-" for
/// none) %B (body bytes) %D (µs taken) %T (s taken; %{ms}T %{us}T %{s}T) %{Name}i (request header)
/// %{Name}o (response header) %{key}e (env text value) %L (request id: env request_id.id) %%. Text is
/// escaped as nginx does it, by the one escaping of core/access_log_line.hpp that the standalone server's
/// own log uses too (`"`, `\`, controls and bytes ≥ 0x7f → \xHH); missing values "-".
///
/// "json" writes one JSON object per line, its fields named as nginx's variables: time_iso8601, msec (log
/// time, s.mmm), remote_addr, remote_user, request, request_method, request_uri, server_protocol, host,
/// status and body_bytes_sent (numbers), request_time (s.mmm to the line), upstream_header_time (s.mmm
/// until the inner app's status and headers were known: for a delayed response, when it answered),
/// http_referer, http_user_agent, request_id. Text is a JSON string ("" when missing): `"`, `\` and
/// controls escaped, valid UTF-8 kept, a byte of no UTF-8 sequence as U+FFFD, so every line parses.
///
/// When the adapter runs cleanup handlers (csgix.cleanup, EXT-4: the standalone server, FastCGI, CGI),
/// the line is written by one, once the response went out: the status and body bytes are those the
/// adapter reports it sent (CleanupHandlers::sent(): a response cut short by the client logs the bytes
/// the client got, as nginx's $body_bytes_sent), else those this layer saw; time taken runs from the call
/// to the response's end on the wire; an exception from the app is logged with the adapter's answer.
/// Otherwise bytes are the body bytes handed to the adapter: known at once for string, shared and file
/// bodies; a stream or a streaming Writer is counted chunk by chunk through on_response, and the line is
/// logged at its end (or when it is abandoned, with the bytes sent so far). Time taken then runs from the
/// call to the line (for streams: to the last chunk). An exception from the app is logged as 500 and
/// rethrown.
///
/// Reads:  REMOTE_ADDR, REMOTE_USER, REQUEST_METHOD, REQUEST_URI, SERVER_PROTOCOL, SCRIPT_NAME,
///         PATH_INFO, QUERY_STRING, SERVER_NAME, SERVER_PORT, HTTP_* and env keys named in the format,
///         request_id.id — all read after the inner app returned, so values set inside (REMOTE_USER by
///         auth_basic) appear; the response status, headers and body size.
/// Writes: a cleanup handler (csgix.cleanup.handlers) when the adapter runs them; nothing in the
///         response.
/// Order:  outermost (after request_id, if used), so it sees the final response and times the stack.
#include <memory>
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/middleware/log_writer.hpp"

namespace csgi::mw {

struct AccessLogOptions {
  std::string format = "combined";
  std::string path;                     // file to append to; empty: stderr (ignored when writer is set)
  std::size_t queue_lines = 8192;       // bounded queue of the writer it creates
  std::shared_ptr<LogWriter> writer;    // share one writer (and its reopen/flush/dropped) between logs
};

class AccessLog {
public:
  /// Throws std::invalid_argument for an unknown directive or an unterminated %{…}.
  AccessLog(App next, AccessLogOptions options = {});
  Response operator()(Env& env);

  /// The writer (reopen(), flush(), dropped()).
  const std::shared_ptr<LogWriter>& writer() const noexcept { return writer_; }

  struct Item;  // one compiled directive or literal

private:
  App next_;
  std::shared_ptr<const std::vector<Item>> items_;
  std::shared_ptr<LogWriter> writer_;
  bool response_headers_ = false;  // the format has %{Name}o items
};

/// The LogFormat strings behind the names.
inline constexpr const char* common_log_format = "%h %l %u %t \"%r\" %>s %b";
inline constexpr const char* combined_log_format = "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"";

}  // namespace csgi::mw
