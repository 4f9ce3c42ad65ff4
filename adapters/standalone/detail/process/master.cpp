// The prefork master (--workers N): forks the workers, restarts those that die, forwards signals; never
// serves. Its cycle is a loop of named steps: hand over, read the leaving workers' notices, reap, wait
// for a signal and handle it (stop, restart, reopen, upgrade).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "csgi/adapters/standalone/detail/http3/quic_sockets.hpp"
#include "csgi/adapters/standalone/detail/process/handover.hpp"
#include "csgi/adapters/standalone/detail/process/server_impl.hpp"
#include "csgi/adapters/standalone/detail/process/signal_actions.hpp"
#include "csgi/core/log_files.hpp"

namespace csgi::standalone {

using namespace detail;

namespace {
volatile sig_atomic_t g_dummy = 0;
void noop_handler(int) { g_dummy = 1; }

class Master {
public:
  Master(Server::Impl& server, Shared& sh);
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;
  /// Until every worker has exited after a stop; returns the master's exit status.
  int run();

private:
  static constexpr unsigned retiring = ~0u;  // the generation of a worker leaving after a contained fault

  pid_t spawn();
  [[noreturn]] void serve_in_worker(WorkerBoard::Slot* slot, unsigned quic_index);
  std::set<unsigned> quic_accepting() const;
  void route_quic();
  void start_worker();
  void start_workers();
  void replace_worker(WorkerBoard::Cause cause);
  void begin_stop();
  void signal_workers(int sig);
  void take_over_from_handover();
  void read_notices();
  void reap();
  void worker_exited(pid_t pid, int status, unsigned gen);
  int wait_signal();
  void handle_signal(int sig);
  void stop(int sig);
  void restart(int sig);
  void reopen(int sig);
  void finish();

  Server::Impl& server_;
  Shared& sh_;
  const ServerOptions& opt_;
  sigset_t signals_{};
  sigset_t old_mask_{};
  Handover::Workers workers_;  // pid → generation
  unsigned generation_ = 0;
  int exit_status_ = 0;
  // Workers that contained a fault say so through this pipe (their pid), so that a replacement starts
  // while they finish their other requests.
  int notify_[2] = {-1, -1};
  std::optional<WorkerReports> reports_;
  std::optional<Handover> handover_;
  bool stopping_ = false;
  Clock::time_point stop_deadline_{};
  std::vector<Clock::time_point> recent_crashes_;
  std::map<pid_t, WorkerBoard::Cause> leaving_;  // retiring workers: why they leave
  std::map<pid_t, unsigned> quic_index_;         // --http3: each live worker's index (quic_sockets.hpp)
  bool quic_route_failed_ = false;
};

Master::Master(Server::Impl& server, Shared& sh) : server_(server), sh_(sh), opt_(server.opt) {
  sigemptyset(&signals_);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&signals_, s);
  ::sigprocmask(SIG_BLOCK, &signals_, &old_mask_);
  // SIGCHLD must not be ignored for sigtimedwait to see it.
  struct sigaction sa {};
  sa.sa_handler = noop_handler;
  ::sigaction(SIGCHLD, &sa, nullptr);
  if (::pipe2(notify_, O_CLOEXEC | O_NONBLOCK) != 0) notify_[0] = notify_[1] = -1;
  server_.master_pid = ::getpid();
  reports_.emplace();
  server_.reports = &*reports_;
  handover_.emplace(opt_, sh_, server_.sd, *reports_, server_.upgrade_fd, workers_, generation_,
                    [this] { return spawn(); });
}

int Master::run() {
  if (handover_->reloading())
    handover_->start_generation();  // with --reload the first workers load the app, as later ones do
  else
    start_workers();
  server_.announce(sh_.listeners);
  for (;;) {
    handover_->poll(stopping_);
    take_over_from_handover();
    read_notices();
    reap();
    if (stopping_ && workers_.empty()) break;
    if (stopping_ && Clock::now() > stop_deadline_) signal_workers(SIGKILL);
    route_quic();
    handle_signal(wait_signal());
  }
  finish();
  return exit_status_;
}

// Forks one worker, which serves with the inherited sockets and never returns here.
pid_t Master::spawn() {
  WorkerBoard::Slot* slot = server_.board->claim();
  unsigned quic_index = 0;
  if (sh_.quic) {
    std::set<unsigned> held;
    for (auto& [pid, index] : quic_index_) held.insert(index);
    quic_index = sh_.quic->pick(held, quic_accepting());
  }
  pid_t pid = ::fork();
  if (pid == 0) serve_in_worker(slot, quic_index);
  if (pid < 0) {
    sh_.errors.write(std::string("csgi: fork failed: ") + std::strerror(errno));
    server_.board->release(slot);
  } else {
    WorkerBoard::set_pid(slot, pid);
    if (sh_.quic) quic_index_[pid] = quic_index;
  }
  return pid;
}

// --http3: the indexes of the workers that take new connections (the current generation's).
std::set<unsigned> Master::quic_accepting() const {
  std::set<unsigned> out;
  for (auto& [pid, index] : quic_index_)
    if (auto it = workers_.find(pid); it != workers_.end() && it->second == generation_) out.insert(index);
  return out;
}

// New QUIC connections to the current generation's workers, once per turn (after a restart, a reload's
// handover, a worker replaced).
void Master::route_quic() {
  if (!sh_.quic) return;
  if (!sh_.quic->route(quic_accepting()) && !quic_route_failed_) {
    quic_route_failed_ = true;
    sh_.errors.write(std::string("csgi: HTTP/3: cannot replace the routing program of the UDP sockets (") +
                     std::strerror(errno) + "): new connections go where the previous one sends them");
  }
}

// In the worker after its fork: signals stay blocked until serve() has set its handlers.
void Master::serve_in_worker(WorkerBoard::Slot* slot, unsigned quic_index) {
  if (sh_.quic) sh_.quic->serve_at(quic_index);
  if (notify_[0] >= 0) ::close(notify_[0]);
  server_.notify_fd = notify_[1];
  sh_.slot = slot;
  reports_->in_worker();
  if (server_.upgrade_fd >= 0) ::close(server_.upgrade_fd);
  server_.upgrade_fd = -1;
  int rc = 0;
  try {
    server_.threads.clear();
    rc = server_.serve(sh_, true);
  } catch (const std::exception& e) {
    sh_.errors.write(std::string("csgi: worker failed: ") + e.what());
    rc = 1;
  }
  log_files::flush_all();  // the app's log writers: no destructors run after _exit
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
  __lsan_do_leak_check();  // _exit skips LeakSanitizer's check at exit: a worker that served is checked here
#endif
  ::_exit(rc);
}

void Master::start_worker() {
  if (pid_t p = spawn(); p > 0) workers_[p] = generation_;
}

// A generation: --workers of them.
void Master::start_workers() {
  for (unsigned i = 0; i < opt_.workers; ++i) start_worker();
}

void Master::replace_worker(WorkerBoard::Cause cause) {
  server_.board->count_restart(cause);
  // Back off when workers die in a loop (a broken app) instead of forking hundreds a second.
  if (cause == WorkerBoard::Cause::crash || cause == WorkerBoard::Cause::timeout) {
    auto now = Clock::now();
    std::erase_if(recent_crashes_, [&](auto t) { return now - t > std::chrono::seconds(1); });
    recent_crashes_.push_back(now);
    if (recent_crashes_.size() > 10) ::usleep(500000);
  }
  start_worker();
}

void Master::begin_stop() {
  stopping_ = true;
  stop_deadline_ = Clock::now() + opt_.graceful_timeout + std::chrono::seconds(1);
}

void Master::signal_workers(int sig) {
  for (auto& [pid, g] : workers_) ::kill(pid, sig);
}

// A new master said it is ready: it serves, and the workers here finish what they have and exit.
void Master::take_over_from_handover() {
  if (!handover_->handed_over() || stopping_) return;
  begin_stop();
  signal_workers(SIGTERM);
}

// Workers leaving (a contained fault, a request timeout, recycling): replaced now, not when they exit.
void Master::read_notices() {
  for (Server::Impl::Notice n{}; notify_[0] >= 0 && ::read(notify_[0], &n, sizeof n) == sizeof n;) {
    auto it = workers_.find(n.pid);
    if (it == workers_.end() || it->second == retiring) continue;
    bool replace = !stopping_ && it->second == generation_;
    it->second = retiring;
    leaving_[n.pid] = n.cause;
    if (replace) replace_worker(n.cause);
  }
}

void Master::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    handover_->exited(pid, status);
    quic_index_.erase(pid);
    auto it = workers_.find(pid);
    if (it == workers_.end()) continue;
    unsigned gen = it->second;
    workers_.erase(it);
    server_.board->release(server_.board->find(pid));
    worker_exited(pid, status, gen);
  }
}

// A reaped worker of generation `gen`: says why it left, and starts its replacement if it was one of the
// current generation and not leaving by its own word.
void Master::worker_exited(pid_t pid, int status, unsigned gen) {
  auto why = leaving_.find(pid);
  std::optional<WorkerBoard::Cause> cause;
  if (why != leaving_.end()) {
    cause = why->second;
    leaving_.erase(why);
  }
  bool crashed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
  // Under --reload a worker that cannot start is the handover's to report: the old workers (or the
  // next change) go on.
  bool cannot_start = WIFEXITED(status) && WEXITSTATUS(status) == kWorkerCannotStart && !handover_->reloading();
  bool replace = !stopping_ && gen == generation_ && !cannot_start;
  if (cannot_start && !stopping_) {
    // The app cannot start in a worker (an ASGI lifespan startup failed): a new one would fail alike.
    sh_.errors.write("csgi: worker " + std::to_string(pid) + " could not start the app (exit " +
                     std::to_string(kWorkerCannotStart) + "); stopping the server");
    begin_stop();
    exit_status_ = kWorkerCannotStart;
    signal_workers(SIGTERM);
  } else if (gen == retiring && WIFEXITED(status) && WEXITSTATUS(status) == 70) {
    sh_.errors.write("csgi: worker " + std::to_string(pid) + " exited after " +
                     (cause == WorkerBoard::Cause::timeout ? "a request timeout" : "containing a fault"));
  } else if (gen == retiring && cause && !crashed) {
    sh_.errors.write("csgi: worker " + std::to_string(pid) + " exited (recycled: " +
                     std::string(WorkerBoard::cause_names[static_cast<unsigned>(*cause)]) + ")");
  } else if (crashed) {
    sh_.errors.write("csgi: worker " + std::to_string(pid) + " died (" +
                     (WIFSIGNALED(status) ? std::string("signal ") + std::to_string(WTERMSIG(status))
                                          : "exit " + std::to_string(WEXITSTATUS(status))) +
                     ")" + (replace ? "; starting a new one" : ""));
  }
  if (replace) replace_worker(WorkerBoard::Cause::crash);
}

// The next signal, or -1 after 200 ms without one (the loop then polls the handover again).
int Master::wait_signal() {
  timespec ts{0, 200 * 1000 * 1000};
  return ::sigtimedwait(&signals_, nullptr, &ts);
}

void Master::handle_signal(int sig) {
  if (sig == SIGTERM || sig == SIGINT) {
    stop(sig);
  } else if (sig == SIGUSR2 && !stopping_ && sh_.quic) {
    sh_.errors.write("csgi: SIGUSR2 (binary upgrade) is not done with --http3: the new binary's UDP sockets "
                     "would join the old ones' group under other numbers; ignored (restart the service)");
  } else if (sig == SIGUSR2 && !stopping_) {
    handover_->upgrade();
  } else if (sig == SIGHUP && !stopping_) {
    restart(sig);
  } else if (sig == SIGUSR1) {
    reopen(sig);
  }
  // SIGCHLD: the next turn reaps.
}

// SIGTERM, SIGINT: the workers finish the requests in flight.
void Master::stop(int sig) {
  if (!stopping_) {
    server_.sd.stopping("stopping: the workers finish the requests in flight");
    log_signal(sh_, sig, "stopping gracefully: " + std::to_string(workers_.size()) +
                             " workers finish the requests in flight, for up to " + seconds_text(opt_.graceful_timeout));
    begin_stop();
  }
  // A second TERM/INT is passed on too: the workers then close their idle connections at once.
  signal_workers(SIGTERM);
}

// SIGHUP, a graceful restart: new workers first (they accept at once on the same sockets), then the old
// ones stop accepting and finish what they have. Workers of earlier generations were told already (a
// second SIGTERM would close their idle connections at once).
void Master::restart(int sig) {
  handover_->restarting();
  std::vector<pid_t> old_pids;
  for (auto& [pid, g] : workers_)
    if (g == generation_) old_pids.push_back(pid);
  ++generation_;
  reload_tls(sh_);  // the new workers start with the certificates as the files now say
  start_workers();
  for (pid_t p : old_pids) ::kill(p, SIGTERM);
  reopen_logs(sh_);
  log_signal(sh_, sig, "started " + std::to_string(opt_.workers) + " new workers; the " +
                           std::to_string(old_pids.size()) + " old ones finish their requests and exit");
}

// SIGUSR1: the master's log files, then the workers'.
void Master::reopen(int sig) {
  reopen_logs(sh_);
  log_signal(sh_, sig, "reopened the log files (the workers reopen theirs)");
  signal_workers(SIGUSR1);
}

void Master::finish() {
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  for (int fd : notify_)
    if (fd >= 0) ::close(fd);
  for (const auto& s : sh_.listeners)
    if (!s.tcp && !s.systemd && !handover_->handed_over() && s.display.rfind("unix:", 0) == 0)
      ::unlink(s.display.c_str() + 5);
  server_.reports = nullptr;
}
}  // namespace

int Server::Impl::master(Shared& sh) { return Master(*this, sh).run(); }

}  // namespace csgi::standalone
