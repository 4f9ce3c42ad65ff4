#include "csgi/adapters/standalone/detail/process/systemd_notify.hpp"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#if CSGI_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace csgi::standalone::detail {

namespace {

#if CSGI_HAVE_SYSTEMD
static_assert(std::is_same_v<decltype(&::sd_notify), int (*)(int, const char*)>);

// Loaded once per process, the first time a server runs under systemd, and kept.
int (*load_sd_notify())(int, const char*) {
  static auto* fn = []() -> int (*)(int, const char*) {
    void* lib = ::dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr,
                   "csgi: NOTIFY_SOCKET is set but libsystemd.so.0 cannot be loaded (%s); systemd is "
                   "not notified\n",
                   ::dlerror());
      return nullptr;
    }
    return reinterpret_cast<int (*)(int, const char*)>(::dlsym(lib, "sd_notify"));
  }();
  return fn;
}
#endif

}  // namespace

SystemdNotify::SystemdNotify() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (!socket || !*socket) return;
#if CSGI_HAVE_SYSTEMD
  notify_ = load_sd_notify();
#endif
  enabled_ = notify_ != nullptr;
  if (!enabled_) return;
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  bool mine = !pid || std::strtol(pid, nullptr, 10) == static_cast<long>(::getpid());
  if (usec && mine) {
    long long us = std::strtoll(usec, nullptr, 10);
    if (us > 0) watchdog_ = std::chrono::microseconds(us);
  }
}

std::chrono::milliseconds SystemdNotify::tick_interval() const noexcept {
  std::chrono::milliseconds t(1000);
  if (watchdog_.count() > 0)
    t = std::min(t, std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(watchdog_ / 4)));
  return t;
}

bool SystemdNotify::send(const std::string& message) {
  if (!enabled_) return false;
  return notify_(0, message.c_str()) > 0;
}

void SystemdNotify::ready(const std::string& status, pid_t main_pid) {
  std::string m = main_pid > 0 ? "MAINPID=" + std::to_string(main_pid) + "\n" : std::string();
  send(m + "READY=1\nSTATUS=" + status);
}

void SystemdNotify::reloading(const std::string& status) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  auto usec =
      static_cast<unsigned long long>(ts.tv_sec) * 1000000ull + static_cast<unsigned long long>(ts.tv_nsec) / 1000;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=" + status);
}

void SystemdNotify::stopping(const std::string& status) {
  send("STOPPING=1\nSTATUS=" + status);
}

void SystemdNotify::status(const std::string& text) {
  send("STATUS=" + text);
}

void SystemdNotify::tick(Clock::time_point now, std::uint64_t requests, const std::string& what) {
  if (!enabled_) return;
  if (watchdog_.count() > 0 && now >= next_ping_) {
    send("WATCHDOG=1");
    // Due every half interval on average, however late the caller's loop came round to this one.
    auto half = std::chrono::duration_cast<Clock::duration>(watchdog_ / 2);
    next_ping_ += half;
    if (next_ping_ <= now) next_ping_ = now + half;
  }
  if (requests != last_requests_ && now >= next_status_) {
    last_requests_ = requests;
    next_status_ = now + std::chrono::seconds(1);
    status(what + std::to_string(requests) + " requests served");
  }
}

}  // namespace csgi::standalone::detail
