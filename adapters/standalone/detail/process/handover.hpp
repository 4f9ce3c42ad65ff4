#pragma once
// The prefork master's handovers (master.cpp's cycle calls in here): from old workers to new ones
// once the new ones listen (--reload: a changed library or module), from this master to a new binary
// (SIGUSR2, binary_upgrade.hpp), and what systemd hears of both (READY, RELOADING, STATUS, the watchdog).
//
// Workers are the master's map pid → generation. A reload starts a *pending* generation: its workers
// load the app and report that they listen (worker_reports.hpp); once all of them do, the current
// generation is sent SIGTERM (it finishes its requests) and the pending one becomes current. When one of
// them exits before it is ready (dlopen failure, Python import error), the others are stopped and the
// current generation keeps serving.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "csgi/adapters/standalone/detail/process/file_watch.hpp"
#include "csgi/adapters/standalone/detail/process/binary_upgrade.hpp"

namespace csgi::standalone {
struct ServerOptions;
}

namespace csgi::standalone::detail {

struct Shared;
class SystemdNotify;
class WorkerReports;

class Handover {
public:
  using Workers = std::map<pid_t, unsigned>;  // pid → generation (~0u: retiring, never replaced)
  using Clock = std::chrono::steady_clock;

  /// Starts watching the --reload files, if any (a failure to watch is logged, and reload is off).
  Handover(const ServerOptions& opt, Shared& sh, SystemdNotify& sd, WorkerReports& reports, int& upgrade_fd,
           Workers& workers, unsigned& generation, std::function<pid_t()> spawn);

  /// --reload was given: every generation of workers, the first included, is started pending.
  bool reloading() const noexcept { return reload_; }
  /// Starts a pending generation (stopping one still pending).
  void start_generation();
  /// Once per turn of the master's loop: workers that became ready, the pending generation, READY=1 (or
  /// the old master told, in a new one), the upgrade under way, the watched files, the watchdog.
  void poll(bool stopping);
  /// The master reaped `pid` (before it forgets it).
  void exited(pid_t pid, int wait_status);
  /// SIGHUP: the master starts a new generation at once; systemd hears RELOADING, then READY once it listens.
  void restarting();
  /// SIGUSR2: starts the new binary (binary_upgrade.hpp).
  void upgrade();
  /// A new master said it is ready: this one stops its workers and leaves (its unix sockets stay).
  bool handed_over() const noexcept { return handed_over_; }

private:
  std::size_t ready_in(unsigned generation) const;
  std::size_t alive_in(unsigned generation) const;
  void cancel_pending();
  void commit_pending();
  void log(const std::string& line);
  std::string status() const;

  const ServerOptions& opt_;
  Shared& sh_;
  SystemdNotify& sd_;
  WorkerReports& reports_;
  int& upgrade_fd_;
  Workers& workers_;
  unsigned& generation_;
  std::function<pid_t()> spawn_;
  bool reload_ = false;
  std::optional<FileWatch> watch_;
  std::set<pid_t> ready_;
  unsigned pending_ = 0;  // the pending generation, 0 when none
  bool announced_ = false;
  BinaryUpgrade upgrade_;
  bool handed_over_ = false;
};

}  // namespace csgi::standalone::detail
