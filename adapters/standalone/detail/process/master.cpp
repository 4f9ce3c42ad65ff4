// The prefork master (--workers N): forks the workers, restarts those that die, forwards signals; never
// serves.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "csgi/adapters/standalone/detail/process/handover.hpp"
#include "csgi/adapters/standalone/detail/process/server_impl.hpp"
#include "csgi/adapters/standalone/detail/process/signal_actions.hpp"
#include "csgi/core/log_files.hpp"

namespace csgi::standalone {

using namespace detail;

namespace {
volatile sig_atomic_t g_dummy = 0;
void noop_handler(int) { g_dummy = 1; }
}  // namespace

// The prefork master: forks the workers, restarts those that die, forwards signals; never serves.
int Server::Impl::master(Shared& sh) {
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, &old);
  // SIGCHLD must not be ignored for sigtimedwait to see it.
  struct sigaction sa {};
  sa.sa_handler = noop_handler;
  ::sigaction(SIGCHLD, &sa, nullptr);

  std::map<pid_t, unsigned> workers;  // pid → generation
  int exit_status = 0;
  constexpr unsigned retiring = ~0u;  // the generation of a worker leaving after a contained fault
  unsigned generation = 0;
  // Workers that contained a fault say so through this pipe (their pid), so that a replacement starts
  // while they finish their other requests.
  int notify[2] = {-1, -1};
  if (::pipe2(notify, O_CLOEXEC | O_NONBLOCK) != 0) notify[0] = notify[1] = -1;
  master_pid = ::getpid();
  WorkerReports worker_reports;
  reports = &worker_reports;
  auto spawn = [&]() -> pid_t {
    WorkerBoard::Slot* slot = board->claim();
    pid_t pid = ::fork();
    if (pid == 0) {
      // Worker: serve with the inherited sockets; signals stay blocked until the handlers are set.
      if (notify[0] >= 0) ::close(notify[0]);
      notify_fd = notify[1];
      sh.slot = slot;
      worker_reports.in_worker();
      if (upgrade_fd >= 0) ::close(upgrade_fd);
      upgrade_fd = -1;
      int rc = 0;
      try {
        threads.clear();
        rc = serve(sh, true);
      } catch (const std::exception& e) {
        sh.errors.write(std::string("csgi: worker failed: ") + e.what());
        rc = 1;
      }
      log_files::flush_all();  // the app's log writers: no destructors run after _exit
      std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
      __lsan_do_leak_check();  // _exit skips LeakSanitizer's check at exit: a worker that served is checked here
#endif
      ::_exit(rc);
    }
    if (pid < 0) {
      sh.errors.write(std::string("csgi: fork failed: ") + std::strerror(errno));
      board->release(slot);
    } else {
      WorkerBoard::set_pid(slot, pid);
    }
    return pid;
  };
  Handover handover(opt, sh, sd, worker_reports, upgrade_fd, workers, generation, spawn);
  if (handover.reloading()) {
    handover.start_generation();  // with --reload the first workers load the app, as later ones do
  } else {
    for (unsigned i = 0; i < opt.workers; ++i)
      if (pid_t p = spawn(); p > 0) workers[p] = generation;
  }
  announce(sh.listeners);

  bool stopping = false;
  Clock::time_point stop_deadline{};
  std::vector<Clock::time_point> recent_crashes;
  std::map<pid_t, WorkerBoard::Cause> leaving;  // retiring workers: why they leave
  auto replace_worker = [&](WorkerBoard::Cause cause) {
    board->count_restart(cause);
    // Back off when workers die in a loop (a broken app) instead of forking hundreds a second.
    if (cause == WorkerBoard::Cause::crash || cause == WorkerBoard::Cause::timeout) {
      auto now = Clock::now();
      std::erase_if(recent_crashes, [&](auto t) { return now - t > std::chrono::seconds(1); });
      recent_crashes.push_back(now);
      if (recent_crashes.size() > 10) ::usleep(500000);
    }
    if (pid_t p = spawn(); p > 0) workers[p] = generation;
  };
  for (;;) {
    handover.poll(stopping);
    if (handover.handed_over() && !stopping) {
      stopping = true;  // the new master serves: the workers here finish what they have and exit
      stop_deadline = Clock::now() + opt.graceful_timeout + std::chrono::seconds(1);
      for (auto& [pid, g] : workers) ::kill(pid, SIGTERM);
    }
    // Workers leaving (a contained fault, a request timeout, recycling): replaced now, not when they exit.
    for (Notice n{}; notify[0] >= 0 && ::read(notify[0], &n, sizeof n) == sizeof n;) {
      auto it = workers.find(n.pid);
      if (it == workers.end() || it->second == retiring) continue;
      bool replace = !stopping && it->second == generation;
      it->second = retiring;
      leaving[n.pid] = n.cause;
      if (replace) replace_worker(n.cause);
    }
    // Reap.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      handover.exited(pid, status);
      auto it = workers.find(pid);
      if (it == workers.end()) continue;
      unsigned gen = it->second;
      workers.erase(it);
      board->release(board->find(pid));
      auto why = leaving.find(pid);
      std::optional<WorkerBoard::Cause> cause;
      if (why != leaving.end()) {
        cause = why->second;
        leaving.erase(why);
      }
      bool crashed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
      // Under --reload a worker that cannot start is the handover's to report: the old workers (or the
      // next change) go on.
      bool cannot_start =
          WIFEXITED(status) && WEXITSTATUS(status) == kWorkerCannotStart && !handover.reloading();
      bool replace = !stopping && gen == generation && !cannot_start;
      if (cannot_start && !stopping) {
        // The app cannot start in a worker (an ASGI lifespan startup failed): a new one would fail alike.
        sh.errors.write("csgi: worker " + std::to_string(pid) + " could not start the app (exit " +
                        std::to_string(kWorkerCannotStart) + "); stopping the server");
        stopping = true;
        exit_status = kWorkerCannotStart;
        stop_deadline = Clock::now() + opt.graceful_timeout + std::chrono::seconds(1);
        for (auto& [other, g] : workers) ::kill(other, SIGTERM);
      } else if (gen == retiring && WIFEXITED(status) && WEXITSTATUS(status) == 70) {
        sh.errors.write("csgi: worker " + std::to_string(pid) + " exited after " +
                        (cause == WorkerBoard::Cause::timeout ? "a request timeout" : "containing a fault"));
      } else if (gen == retiring && cause && !crashed) {
        sh.errors.write("csgi: worker " + std::to_string(pid) + " exited (recycled: " +
                        std::string(WorkerBoard::cause_names[static_cast<unsigned>(*cause)]) + ")");
      } else if (crashed) {
        sh.errors.write("csgi: worker " + std::to_string(pid) + " died (" +
                        (WIFSIGNALED(status) ? std::string("signal ") + std::to_string(WTERMSIG(status))
                                             : "exit " + std::to_string(WEXITSTATUS(status))) +
                        ")" + (replace ? "; starting a new one" : ""));
      }
      if (replace) replace_worker(WorkerBoard::Cause::crash);
    }
    if (stopping && workers.empty()) break;
    if (stopping && Clock::now() > stop_deadline) {
      for (auto& [pid, g] : workers) ::kill(pid, SIGKILL);
    }
    timespec ts{0, 200 * 1000 * 1000};
    int sig = ::sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      if (!stopping) {
        sd.stopping("stopping: the workers finish the requests in flight");
        log_signal(sh, sig, "stopping gracefully: " + std::to_string(workers.size()) +
                                " workers finish the requests in flight, for up to " + seconds_text(opt.graceful_timeout));
        stopping = true;
        stop_deadline = Clock::now() + opt.graceful_timeout + std::chrono::seconds(1);
      }
      // A second TERM/INT is passed on too: the workers then close their idle connections at once.
      for (auto& [pid, g] : workers) ::kill(pid, SIGTERM);
    } else if (sig == SIGUSR2 && !stopping) {
      handover.upgrade();
    } else if (sig == SIGHUP && !stopping) {
      handover.restarting();
      // Graceful restart: new workers first (they accept at once on the same sockets), then the old
      // ones stop accepting and finish what they have. Workers of earlier generations were told
      // already (a second SIGTERM would close their idle connections at once).
      std::vector<pid_t> old_pids;
      for (auto& [pid, g] : workers)
        if (g == generation) old_pids.push_back(pid);
      ++generation;
      reload_tls(sh);  // the new workers start with the certificates as the files now say
      for (unsigned i = 0; i < opt.workers; ++i)
        if (pid_t p = spawn(); p > 0) workers[p] = generation;
      for (pid_t p : old_pids) ::kill(p, SIGTERM);
      reopen_logs(sh);
      log_signal(sh, sig, "started " + std::to_string(opt.workers) + " new workers; the " +
                              std::to_string(old_pids.size()) + " old ones finish their requests and exit");
    } else if (sig == SIGUSR1) {
      reopen_logs(sh);
      log_signal(sh, sig, "reopened the log files (the workers reopen theirs)");
      for (auto& [pid, g] : workers) ::kill(pid, SIGUSR1);
    }
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  for (int fd : notify)
    if (fd >= 0) ::close(fd);
  for (const auto& s : sh.listeners)
    if (!s.tcp && !s.systemd && !handover.handed_over() && s.display.rfind("unix:", 0) == 0) ::unlink(s.display.c_str() + 5);
  reports = nullptr;
  return exit_status;
}

}  // namespace csgi::standalone
