#pragma once
// Server::Impl: the state of one Server and its steps, shared by server.cpp (run, the public members),
// serve.cpp (a process serving with its io threads) and master.cpp (the prefork master).
#include <sys/types.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/process/systemd_notify.hpp"
#include "csgi/adapters/standalone/detail/process/worker_reports.hpp"
#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/worker_board.hpp"

namespace csgi::standalone {

struct Server::Impl {
  App app;
  ServerOptions opt;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool listening = false;
  bool failed = false;
  bool stop_requested = false;
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<detail::IoThread>> threads;
  detail::Shared* shared = nullptr;
  ServerStats stats;  // this server's counters: its io threads record, the app reads csgix.server_stats

  int notify_fd = -1;   // worker → master: "I am leaving, start my replacement" (a Notice)
  pid_t master_pid = 0;
  std::shared_ptr<WorkerBoard> board;  // every worker's gauges and the restarts, shared across the fork

  /// What a leaving worker writes to the master (one write, atomic on a pipe).
  struct Notice {
    pid_t pid;
    WorkerBoard::Cause cause;
  };
  detail::SystemdNotify sd;                  // systemd Type=notify (nothing unless NOTIFY_SOCKET is set)
  detail::WorkerReports* reports = nullptr;  // a prefork master's and its workers': ready, requests served
  int upgrade_fd = -1;  // this process was started by a binary upgrade: tells the old master it is ready

  int run();
  /// Serves in this process (a single process, or a prefork worker after its fork) until a stop.
  int serve(detail::Shared& sh, bool in_worker);
  /// A signal while serving; false once it stopped the server (no more signals are waited for).
  bool on_signal(detail::Shared& sh, bool in_worker, int sig, std::future<void>& tls_reload);
  void notify_master(WorkerBoard::Cause cause) noexcept;
  void retire(detail::Shared& sh, WorkerBoard::Cause cause, const std::string& why);
  /// The prefork master (--workers): master.cpp.
  int master(detail::Shared& sh);
  std::string served_status() const;
  void install_ticker(std::optional<detail::Ticker>& ticker, bool in_worker);
  void announce(const std::vector<ListenSocket>& socks);
};

}  // namespace csgi::standalone
