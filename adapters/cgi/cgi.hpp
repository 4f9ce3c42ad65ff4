#pragma once
/// The CGI/1.1 adapter (RFC 3875): one request per process, for hosts that allow nothing else.
/// The env comes from the process environment (see gateway.hpp for the rules, csgi.run_once is true),
/// the body from stdin (at most CONTENT_LENGTH bytes when the server gives it, else to EOF; seekable), the
/// response goes to stdout as "Status:" + headers + body, every body kind included (a streaming Writer's
/// chunks are flushed one by one). csgi.errors is stderr (the front server's error log).
#include <cstdint>
#include <optional>
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::cgi {

struct Options {
  std::optional<std::string> script_name;          // fixed mount point (see gateway.hpp)
  std::uint64_t max_body = std::uint64_t{64} << 20; // csgi.input throws 413 past this
};

/// Serves the one request of this process from `vars` (NAME=VALUE strings), `in_fd` and `out_fd`.
/// Returns 0, or 1 when the response could not be written completely.
int serve_request(const App& app, const char* const* vars, int in_fd, int out_fd, const Options& options = {});

/// serve_request with the process environment, stdin and stdout. SIGPIPE is ignored.
int serve(const App& app, const Options& options = {});

}  // namespace csgi::cgi
