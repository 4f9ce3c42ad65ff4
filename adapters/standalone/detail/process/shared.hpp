#pragma once
// What every io thread of a server process shares (Shared).
#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/adapters/standalone/detail/exchange/inline_watch.hpp"
#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"
#include "csgi/adapters/standalone/detail/process/log_file.hpp"
#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/app.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/worker_board.hpp"

namespace csgi::standalone::detail {

/// What every io thread of a process shares.
struct Shared {
  App app;
  ServerOptions opt;
  ProxyTrust proxy;  // --proxy-protocol, --trusted-proxy
  std::vector<ListenSocket> listeners;
  LogFile error_log;
  std::shared_ptr<LogErrorStream> errors_owner = std::make_shared<LogErrorStream>(error_log);
  LogErrorStream& errors = *errors_owner;
  std::atomic<std::size_t> connections{0};
  std::unique_ptr<BodyMemory> body_memory;  // request bodies in memory, process-wide (request_body.hpp)
  BodyLimits body_limits;
  // Incoming WebSocket message bytes of the whole process (ServerOptions::ws_process_buffer_bytes); set
  // with the options, shared with the sessions, which may end after the server.
  std::shared_ptr<class ByteBudget> ws_budget;
  ServerStats* stats = nullptr;  // the server's own (Server::stats()), in the env as csgix.server_stats
  std::atomic<bool> stopping{false};  // set as soon as a stop is asked: responses say Connection: close
  std::atomic<unsigned> accepting{0};  // io threads that have not closed their acceptors yet
  bool multithread = false;
  bool multiprocess = false;
  std::vector<class IoThread*> threads;  // every io thread of this process (for accept balancing)
  class AppPool* pool = nullptr;         // --app-threads > 0: where the app runs
  class InlineWatch* inline_watch = nullptr;  // app_inline_first: the app runs inline while it says so
  /// True when the app is called on the pool rather than on the io thread.
  bool app_on_pool() const noexcept { return pool && (!inline_watch || !inline_watch->inline_now()); }
  WorkerBoard::Slot* slot = nullptr;     // this process's gauges on the server's WorkerBoard
  class Recycler* recycler = nullptr;    // a prefork worker with --max-requests/--max-worker-memory
  std::unique_ptr<class TlsContext> tls;  // certificates given: the TLS listeners' (tls.hpp)
  // --http3: the Alt-Svc value ("h3=\":PORT\"; ma=86400") of each TLS listener's SERVER_PORT.
  std::vector<std::pair<std::string, std::string>> alt_svc;
  class QuicSockets* quic = nullptr;  // --http3: the UDP sockets, this process's index (quic_sockets.hpp)
  std::array<std::string, 600> status_lines;  // "HTTP/1.1 200 OK\r\n"
  std::string_view status_line(int status) const noexcept {
    return status >= 100 && status < 600 ? std::string_view(status_lines[status]) : std::string_view(status_lines[500]);
  }
  void init_status_lines();
  /// Takes the app, the options and the stats a server process serves with: the request-body limits,
  /// the WebSocket budget, the PROXY trust, the status lines (not the listeners, logs nor TLS).
  void configure(App a, const ServerOptions& o, ServerStats& s);
  Shared() = default;
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  ~Shared();
};

}  // namespace csgi::standalone::detail
