#pragma once
// Zero-downtime binary upgrade (SIGUSR2 to the prefork master; docs/standalone.md, "Binary upgrade").
// The old master starts the csgi binary again (the path /proc/self/exe names, the arguments of
// /proc/self/cmdline) with its listening sockets as LISTEN_FDS (fds 3…) and one end of a pipe in
// CSGI_UPGRADE_FD. The new master serves on the inherited sockets and, once every worker of its own
// listens, writes one byte to the pipe; only then does the old master stop its workers gracefully and
// leave. A new master that exits, closes the pipe or stays silent past the deadline is a failed upgrade:
// the old master keeps serving.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "csgi/adapters/standalone/listen.hpp"

namespace csgi::standalone::detail {

class BinaryUpgrade {
public:
  using Clock = std::chrono::steady_clock;
  enum class State { none, waiting, ready, failed };

  BinaryUpgrade() = default;
  ~BinaryUpgrade();
  BinaryUpgrade(const BinaryUpgrade&) = delete;
  BinaryUpgrade& operator=(const BinaryUpgrade&) = delete;

  /// Starts the new binary with `sockets`; false with the reason in `why` when it cannot be started.
  bool start(const std::vector<ListenSocket>& sockets, std::chrono::seconds deadline, std::string& why);
  /// The new process (0 when none is being started).
  pid_t pid() const noexcept { return pid_; }
  /// Where the upgrade stands: `ready` and `failed` are reported once, then it is `none` again (a failed
  /// new process that still runs is sent SIGTERM). `why` says what failed.
  State poll(Clock::time_point now, std::string& why);
  /// The master reaped the new process (it exited): an upgrade not yet ready has failed.
  void exited(int wait_status);

private:
  void finish();
  pid_t pid_ = 0;
  int fd_ = -1;  // the read end of the readiness pipe
  Clock::time_point deadline_{};
  int exit_status_ = -1;  // wait status once reaped
};

/// In the new process: the readiness pipe to the old master, from CSGI_UPGRADE_FD (then unset, and the
/// descriptor made close-on-exec); -1 when this process was not started by an upgrade.
int take_upgrade_fd();
/// Tells the old master that this process is ready: one byte on `fd`, which is then closed and set to -1.
void tell_upgrade_ready(int& fd);

}  // namespace csgi::standalone::detail
