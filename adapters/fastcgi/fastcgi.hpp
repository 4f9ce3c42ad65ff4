#pragma once
/// The FastCGI adapter (Debian's libfcgi): serves a csgi app to a front server — nginx, Apache mod_fcgid,
/// lighttpd, spawn-fcgi — over FastCGI.
///
/// Threads: `threads` workers each run FCGX_Accept_r on the shared listen socket (libfcgi without
/// multiplexing: one request per connection at a time, so with nginx `fastcgi_keep_conn on` every kept
/// connection pins one thread — give at least as many threads as nginx's `keepalive`).
/// Listen socket: fd 0 when the front server spawned the process (mod_fcgid, spawn-fcgi, lighttpd
/// `bin-path`), else `listen` ("unix:/path", "host:port" or ":port").
/// Env: see csgi/adapters/cgi/gateway.hpp (params last-value-wins, HTTP_CONTENT_*/HTTP_PROXY dropped,
/// SCRIPT_NAME/PATH_INFO normalised, `script_name` override). csgi.input is the FastCGI stdin stream read
/// to its end (seekable: kept in memory, then in a temp file). csgi.errors is the process's stderr (the
/// front server's error log under mod_fcgid).
/// csgix.server_stats: this process's counters (requests, statuses, body bytes, requests in progress),
/// shared by its threads, for the server_status middleware (spec EXT-7).
/// Stop: SIGTERM or SIGINT stops accepting, wakes the threads idle in accept() or waiting on a kept
/// connection, lets requests in flight finish (up to `graceful_timeout`) and returns 0.
/// `workers` > 0: a master process forks that many children sharing the socket, restarts a child that
/// dies, and forwards SIGTERM (for apps that are not thread-safe, use workers=N, threads=1).
/// The command line that fills these options is csgi::runner's (csgi/adapters/runner/options.hpp).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::fastcgi {

struct Options {
  std::string listen;                        // "" → fd 0, which must be a listening socket
  int threads = 16;                          // ≥ the front server's keep-alive pool
  int workers = 0;                           // 0: serve in this process; N: a master forks N workers
  int backlog = 1024;
  std::optional<std::string> script_name;    // fixed mount point (see gateway.hpp)
  std::uint64_t max_body = std::uint64_t{64} << 20;  // csgi.input throws 413 past this
  std::chrono::milliseconds graceful_timeout{10000};
  int socket_mode = -1;                      // chmod for a unix socket it creates (-1: leave umask's)
};

/// Serves `app` until SIGTERM/SIGINT. Returns the process exit status (0 after a graceful stop, 1 when
/// the socket cannot be opened). Blocks SIGTERM/SIGINT in the calling thread, ignores SIGPIPE.
int serve(App app, const Options& options = {});

/// True when `fd` is a listening stream socket (how a spawned FastCGI process recognises fd 0).
bool is_fastcgi_socket(int fd) noexcept;

/// Opens the listen socket named by `spec` ("unix:/path", "/path", "host:port", ":port"); -1 on error
/// (errno set). A stale unix socket file is replaced.
int open_socket(const std::string& spec, int backlog, int socket_mode = -1);

}  // namespace csgi::fastcgi
