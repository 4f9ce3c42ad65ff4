#pragma once
// systemd's notification protocol for Type=notify services (sd_notify(3), through libsystemd), as the
// standalone server uses it (docs/deploy/systemd.md). Every call does nothing unless NOTIFY_SOCKET is set;
// libsystemd (and the compression and crypto libraries it pulls in) is loaded only then.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace csgi::standalone::detail {

class SystemdNotify {
 public:
  using Clock = std::chrono::steady_clock;

  /// Reads NOTIFY_SOCKET, and WATCHDOG_USEC when WATCHDOG_PID is unset or this process.
  SystemdNotify();
  bool enabled() const noexcept { return enabled_; }
  /// Sends nothing from now on (a server embedded with handle_signals off: the program owns the process).
  void disable() noexcept { enabled_ = false; }
  /// The watchdog interval systemd asked for (WatchdogSec=), 0 when none.
  std::chrono::microseconds watchdog() const noexcept { return watchdog_; }
  /// How often tick() should run: often enough for the watchdog and the STATUS line.
  std::chrono::milliseconds tick_interval() const noexcept;

  /// READY=1 with a STATUS line; with `main_pid`, MAINPID= first (a new master taking over).
  void ready(const std::string& status, pid_t main_pid = 0);
  /// RELOADING=1 with MONOTONIC_USEC= (systemd 253's reload protocol; older ones ignore the field).
  void reloading(const std::string& status);
  /// STOPPING=1: a graceful stop has begun.
  void stopping(const std::string& status);
  /// A STATUS= line alone.
  void status(const std::string& text);
  /// From the supervising loop while it is healthy: WATCHDOG=1 once half the interval has passed since
  /// the last one, and a STATUS line with the requests served when the count changed (at most once a
  /// second).
  void tick(Clock::time_point now, std::uint64_t requests, const std::string& what);

 private:
  bool send(const std::string& message);
  using NotifyFn = int (*)(int, const char*);
  NotifyFn notify_ = nullptr;
  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  Clock::time_point next_ping_{};
  Clock::time_point next_status_{};
  std::uint64_t last_requests_ = ~std::uint64_t{0};
};

}  // namespace csgi::standalone::detail
