// The standalone server's process structure: io threads (one io_context each), listening sockets,
// signals, and the prefork master that restarts workers.
#include "csgi/adapters/standalone/server.hpp"

#include "csgi/core/server_stats.hpp"

#include <fcntl.h>
#include <signal.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <optional>
#include <iostream>
#include <map>
#include <thread>

#include "csgi/adapters/standalone/app_pool.hpp"
#include "csgi/adapters/standalone/detail.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone {

namespace detail {

using boost::system::error_code;

// ---------------------------------------------------------------------------------------------------
// Logs.

LogFile::~LogFile() {
  if (registered_) log_files::remove(*this);
  int fd = fd_.load();
  if (fd > 2) ::close(fd);
  for (int r : retired_)
    if (r > 2) ::close(r);
}

void LogFile::open(const std::string& path) {
  path_ = path;
  reopen();
  if (!path_.empty() && !std::exchange(registered_, true)) log_files::add(*this);
}

void LogFile::reopen() {
  int fd = -1;
  if (path_.empty()) return;
  if (path_ == "-") {
    fd = 1;
  } else if (path_ == "stderr") {
    fd = 2;
  } else {
    fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open log file " + path_);
  }
  std::lock_guard lock(mu_);
  int old = fd_.exchange(fd);
  if (old > 2 && old != fd) retired_.push_back(old);
}

void LogFile::write(std::string_view line) const noexcept {
  int fd = fd_.load(std::memory_order_relaxed);
  if (fd < 0) return;
  while (!line.empty()) {
    ssize_t w = ::write(fd, line.data(), line.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      // A full disk or a lost file must not stop the server: the line is dropped, the error reported
      // once (to stderr, which the error log may be the same file as), and again only after a recovery.
      if (!failing_.exchange(true, std::memory_order_relaxed))
        stderr_stream().write("csgi: cannot write the log " + path_ + ": " + std::strerror(errno) +
                              " (lines are dropped until writing works again)");
      return;
    }
    line.remove_prefix(static_cast<std::size_t>(w));
  }
  if (failing_.load(std::memory_order_relaxed) && failing_.exchange(false, std::memory_order_relaxed))
    stderr_stream().write("csgi: writing the log " + path_ + " works again");
}

namespace {
// SIGUSR1: every log file of the process (this server's and the app's: log_files) is reopened by name.
void reopen_logs(Shared& sh) {
  for (const std::string& e : log_files::reopen_all()) sh.errors.write("csgi: " + e);
}
}  // namespace

void LogErrorStream::write(std::string_view message) {
  std::string line(message);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  std::lock_guard lock(mu_);
  if (f_ && f_->enabled())
    f_->write(line);
  else
    stderr_stream().write(message);
}

void Shared::init_status_lines() {
  for (int s = 100; s < 600; ++s) {
    std::string_view reason = reason_phrase(s);
    if (reason == "Unknown") reason = "";
    status_lines[s] = "HTTP/1.1 " + std::to_string(s) + " " + std::string(reason) + "\r\n";
  }
}

// ---------------------------------------------------------------------------------------------------
// Io threads.

IoThread::IoThread(Shared& s, unsigned i) : shared(s), index(i) {}

IoThread::~IoThread() {
  // Connections still pending after a graceful-timeout cut are destroyed with ioc, after the members
  // declared below it (the env pool among them).
  destroying = true;
  // The app's threads may still hold Responders and Writers: what they do from now on is dropped.
  mailbox->close();
  close_all_connections();
  listeners_.clear();
  for (int fd : owned_fds_) ::close(fd);
}

void IoThread::listen(const std::vector<ListenSocket>& sockets, bool own_reuseport_sockets) {
  // With one shared socket, whichever thread wakes first would accept a burst of connections alone;
  // balancing hands each to the thread with the fewest. SO_REUSEPORT sockets are balanced by the kernel.
  balance = !own_reuseport_sockets;
  for (const ListenSocket& s : sockets) {
    int fd;
    bool own = false;
    if (own_reuseport_sockets && s.tcp && !s.systemd && index > 0) {
      // Thread 0 uses the socket opened by the server; the others bind their own with SO_REUSEPORT.
      ListenAddress a = parse_listen(s.display);
      ListenSocket mine = open_listen(a, true);
      fd = mine.fd;
      own = true;
    } else {
      fd = ::fcntl(s.fd, F_DUPFD_CLOEXEC, 3);
      if (fd < 0) throw std::system_error(errno, std::generic_category(), "dup listening socket");
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    auto l = std::make_unique<Listener>();
    l->acceptor = std::make_unique<Acceptor>(ioc, Protocol(ss.ss_family, 0), fd);
    l->acceptor->non_blocking(true);
    l->info = &s;
    l->own = own;
    listeners_.push_back(std::move(l));
  }
}

void IoThread::accept(Listener& l) {
  if (stopping) return;
  if (shared.connections.load(std::memory_order_relaxed) >= shared.opt.max_connections) {
    // At the limit: stop accepting (the kernel queues new connections) and look again shortly.
    if (!l.pause) l.pause = std::make_unique<asio::steady_timer>(ioc);
    l.pause->expires_after(std::chrono::milliseconds(20));
    l.pause->async_wait([this, &l](error_code ec) {
      if (!ec) accept(l);
    });
    return;
  }
  IoThread* target = this;
  if (balance && shared.threads.size() > 1 && !shared.stopping.load(std::memory_order_relaxed)) {
    for (IoThread* t : shared.threads)
      if (t->open.load(std::memory_order_relaxed) < target->open.load(std::memory_order_relaxed)) target = t;
  }
  l.acceptor->async_accept(target->ioc, [this, &l, target](error_code ec, Socket s) mutable {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      if (stopping) return;
      // EMFILE, ENFILE, ENOBUFS…: back off instead of spinning; never fatal.
      static std::atomic<long> last_log{0};
      long now_s = static_cast<long>(std::time(nullptr));
      if (last_log.exchange(now_s) != now_s) shared.errors.write("csgi: accept failed: " + ec.message());
      if (!l.pause) l.pause = std::make_unique<asio::steady_timer>(ioc);
      l.pause->expires_after(std::chrono::milliseconds(100));
      l.pause->async_wait([this, &l](error_code e) {
        if (!e) accept(l);
      });
      return;
    }
    // A connection accepted is always served, even when a stop began after the accept completed (its
    // client has sent or is sending a request; dropping it lost requests under SIGHUP restarts). A
    // stopping thread serves it itself: the chosen thread may have finished already.
    bool here = target == this || stopping;
    if (target != this && stopping) {
      error_code e;
      Protocol proto = s.local_endpoint(e).protocol();
      int fd = e ? -1 : s.release(e);
      if (fd < 0) return;
      Socket mine(ioc);
      mine.assign(proto, fd, e);
      if (e) {
        ::close(fd);
        return;
      }
      s = std::move(mine);
      target = this;
    }
    target->open.fetch_add(1, std::memory_order_relaxed);  // counted now, so the next choice sees it
    auto start = [target, info = l.info, s = std::move(s)]() mutable {
      target->now = Clock::now();
      try {
        start_connection(*target, std::move(s), *info);
      } catch (const std::exception& e) {
        target->shared.errors.write(std::string("csgi: connection setup failed: ") + e.what());
      }
      target->open.fetch_sub(1, std::memory_order_relaxed);
    };
    if (here)
      start();
    else
      asio::post(target->ioc, std::move(start));
    accept(l);
  });
}

void IoThread::run() {
  if (fault_slot) {
    // The fault handler runs on an alternate stack, so that a stack overflow in the app is contained too.
    static constexpr std::size_t alt_size = 64 * 1024;
    stack_t ss{};
    ss.ss_sp = ::malloc(alt_size);  // kept until the process exits (the thread may be frozen on it)
    ss.ss_size = alt_size;
    if (ss.ss_sp) ::sigaltstack(&ss, nullptr);
    fault_slot->tid.store(static_cast<long>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  }
  for (auto& l : listeners_) accept(*l);
  sweep();
  for (;;) {
    try {
      ioc.run();
      break;
    } catch (const std::exception& e) {
      // Handlers catch everything themselves; this is the last line of defence.
      shared.errors.write(std::string("csgi: internal error in io thread: ") + e.what());
    }
  }
  exited.store(true, std::memory_order_release);  // app threads waiting on this thread give up
}

std::unique_ptr<Env> IoThread::acquire_env() {
  if (env_pool_.empty()) return std::make_unique<Env>();
  auto e = std::move(env_pool_.back());
  env_pool_.pop_back();
  return e;
}

void IoThread::release_env(std::unique_ptr<Env> env) {
  if (!env || destroying) return;
  env->clear();
  if (env_pool_.size() < 64) env_pool_.push_back(std::move(env));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------

using namespace detail;

// ---------------------------------------------------------------------------------------------------
// Crash containment in prefork workers (docs/reliability.md §4).
//
// A SIGSEGV, SIGBUS, SIGFPE or SIGILL raised while an io thread runs the app's code for a connection
// (AppScope) does not end the worker at once. The handler (async-signal-safe calls only) records the
// fault, arms alarm(2) as the last-resort deadline, wakes the rescue thread (sem_post) and parks the
// faulting thread for good: its stack, and whatever it held, stay frozen. The rescue thread tells the
// master (which starts a replacement at once), abandons the faulting connection (500 or a half-close:
// only that client sees the failure), writes one line to the error log, stops every io thread (no more
// accepting, Connection: close on the next responses) and runs the frozen thread's io_context itself,
// so that its other connections complete. When every other connection is closed, or at the graceful
// timeout, the worker _exits without destructors. Memory after a fault is not trusted: the worker only
// finishes what it has and leaves. A fault anywhere else (outside the app, on another thread of the app,
// a second fault while draining) ends the worker with the signal's default action, as before.
namespace {
struct FaultState {
  FaultSlot* slots = nullptr;
  unsigned nslots = 0;
  std::atomic<bool> armed{false};
  std::atomic<int> sig{0};        // the first contained fault's signal
  std::atomic<int> slot{-1};      // its io thread
  unsigned alarm_s = 12;
  sem_t wake;
};
FaultState g_fault;

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic fault)";
    case SIGILL: return "SIGILL (illegal instruction)";
    default: return "a fault signal";
  }
}

// The signal's default action, now: the process ends the way it would have without containment.
void die_by(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);  // not reached for these signals
}

void on_fault(int sig, siginfo_t*, void*) {
  if (!g_fault.armed.load(std::memory_order_relaxed)) die_by(sig);
  long tid = static_cast<long>(::syscall(SYS_gettid));
  int mine = -1;
  for (unsigned i = 0; i < g_fault.nslots; ++i)
    if (g_fault.slots[i].tid.load(std::memory_order_relaxed) == tid) mine = static_cast<int>(i);
  // Not an io thread, or an io thread outside the app's code: nothing known to contain.
  if (mine < 0 || g_fault.slots[mine].conn.load(std::memory_order_relaxed) == nullptr) die_by(sig);
  int none = 0;
  if (!g_fault.sig.compare_exchange_strong(none, sig)) die_by(sig);  // a second fault: end at once
  g_fault.slot.store(mine);
  // The last resort: if the rescue cannot finish (a lock the frozen thread holds), SIGALRM ends it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGALRM, &dfl, nullptr);
  ::alarm(g_fault.alarm_s);
  ::sem_post(&g_fault.wake);
  for (;;) ::pause();  // every signal is blocked here (sa_mask): this thread never runs again
}
}  // namespace

struct Server::Impl {
  App app;
  ServerOptions opt;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool listening = false;
  bool failed = false;
  bool stop_requested = false;
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<IoThread>> threads;
  Shared* shared = nullptr;
  ServerStats stats;  // this server's counters: its io threads record, the app reads csgix.server_stats

  int notify_fd = -1;   // worker → master: "I contained a fault and am leaving" (the worker's pid)
  pid_t master_pid = 0;

  int run();
  int serve(Shared& sh, bool in_worker);
  void arm_fault_containment(Shared& sh);
  [[noreturn]] void rescue(Shared& sh);
  int master(Shared& sh);
  void announce(const std::vector<ListenSocket>& socks);
};

Server::Server(App app, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->app = std::move(app);
  impl_->opt = std::move(options);
  if (!impl_->app) throw std::invalid_argument("csgi::standalone::Server: no app");
  if (impl_->opt.threads == 0) impl_->opt.threads = 1;
  if (!impl_->opt.script_name.empty() &&
      (impl_->opt.script_name.front() != '/' || impl_->opt.script_name.back() == '/'))
    throw std::invalid_argument("script name must start with '/' and not end with '/': " + impl_->opt.script_name);
}

Server::~Server() = default;

int Server::run() { return impl_->run(); }

void Server::stop() {
  std::lock_guard lock(impl_->mu);
  impl_->stop_requested = true;
  for (auto& t : impl_->threads) t->stop();
}

ServerStats& Server::stats() noexcept { return impl_->stats; }

std::vector<std::string> Server::addresses() const {
  std::lock_guard lock(impl_->mu);
  return impl_->addresses;
}

bool Server::wait_listening(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait_for(lock, timeout, [&] { return impl_->listening || impl_->failed; });
  return impl_->listening;
}

void Server::Impl::announce(const std::vector<ListenSocket>& socks) {
  {
    std::lock_guard lock(mu);
    for (const auto& s : socks) addresses.push_back(s.display);
    listening = true;
  }
  cv.notify_all();
  for (const auto& s : socks) {
    std::string url = s.tcp ? "http://" + s.display + "/" : s.display;
    if (opt.on_listening) {
      opt.on_listening(url);
    } else {
      std::printf("csgi: listening on %s\n", url.c_str());
      std::fflush(stdout);
    }
  }
}

// In a worker, before its io threads start: slots, the rescue thread, the handlers.
void Server::Impl::arm_fault_containment(Shared& sh) {
  g_fault.nslots = static_cast<unsigned>(threads.size());
  g_fault.slots = new FaultSlot[g_fault.nslots];  // lives as long as the process
  for (unsigned i = 0; i < g_fault.nslots; ++i) threads[i]->fault_slot = &g_fault.slots[i];
  auto secs = std::chrono::ceil<std::chrono::seconds>(opt.graceful_timeout).count();
  g_fault.alarm_s = static_cast<unsigned>(std::max<long long>(1, secs) + 2);
  ::sem_init(&g_fault.wake, 0, 0);
  std::thread([this, &sh] { rescue(sh); }).detach();
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
  g_fault.armed = true;
}

void Server::Impl::rescue(Shared& sh) {
  // Blocks every signal but SIGALRM (the handler's deadline must find a thread to end the process on).
  sigset_t mask;
  sigfillset(&mask);
  sigdelset(&mask, SIGALRM);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigdelset(&mask, sig);
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  while (::sem_wait(&g_fault.wake) != 0) {
  }
  int sig = g_fault.sig.load();
  int slot = g_fault.slot.load();
  pid_t me = ::getpid();
  // 1. The master starts a replacement now (the pid through the pipe; SIGCHLD wakes it up).
  if (notify_fd >= 0) {
    ssize_t w = ::write(notify_fd, &me, sizeof me);
    (void)w;
    ::kill(master_pid, SIGCHLD);
  }
  IoThread& t = *threads[static_cast<std::size_t>(slot)];
  // 2. Only the faulting request's client sees the failure.
  Conn* c = g_fault.slots[slot].conn.load();
  std::string request = c ? abandon_faulted(*c) : std::string();
  // 3. One line in the error log.
  sh.errors.write("csgi: worker " + std::to_string(me) + ": " + signal_name(sig) + " in the app on io thread " +
                  std::to_string(slot) + " while serving \"" + request +
                  "\"; that request failed; the worker stops accepting, finishes its other requests and exits "
                  "(a new worker replaces it)");
  // 4. Every io thread stops gracefully; the frozen one's io_context is run here.
  for (auto& th : threads) th->stop();
  auto deadline = Clock::now() + opt.graceful_timeout;
  while (sh.connections.load() > (c ? 1u : 0u) && Clock::now() < deadline) {
    try {
      t.ioc.run_for(std::chrono::milliseconds(50));
    } catch (const std::exception& e) {
      sh.errors.write(std::string("csgi: internal error in io thread: ") + e.what());
    }
    if (t.ioc.stopped()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // 5. No destructors: the frozen thread's stack still refers to much of what they would free. The log
  // writers are flushed (alarm(2) still bounds this).
  log_files::flush_all();
  ::_exit(70);
}

int Server::Impl::run() {
  ::signal(SIGPIPE, SIG_IGN);
  Shared sh;
  sh.app = app;
  sh.opt = opt;
  sh.init_status_lines();
  sh.multithread = opt.threads > 1 || opt.app_threads > 0;
  sh.multiprocess = opt.workers > 0;
  sh.stats = &stats;
  stats.attach_adapter("standalone");
  stats.set_workers(opt.workers > 0 ? opt.workers : 1);
  try {
    sh.access_log.open(opt.access_log);
    sh.error_log.open(opt.error_log);
    sh.listeners = systemd_sockets();
    if (sh.listeners.empty()) {
      std::vector<std::string> specs = opt.listen;
      if (specs.empty()) specs.push_back("127.0.0.1:5000");
      for (const auto& spec : specs) sh.listeners.push_back(open_listen(parse_listen(spec), opt.reuseport));
    }
  } catch (...) {
    {
      std::lock_guard lock(mu);
      failed = true;
    }
    cv.notify_all();
    for (auto& s : sh.listeners) ::close(s.fd);
    throw;
  }
  shared = &sh;
  int rc = opt.workers > 0 ? master(sh) : serve(sh, false);
  for (auto& s : sh.listeners) {
    ::close(s.fd);
    if (!s.tcp && !s.systemd && s.display.rfind("unix:", 0) == 0 && opt.workers == 0) ::unlink(s.display.c_str() + 5);
  }
  return rc;
}

// Serves in this process with opt.threads io threads until a stop.
int Server::Impl::serve(Shared& sh, bool in_worker) {
  {
    std::lock_guard lock(mu);
    for (unsigned i = 0; i < opt.threads; ++i) threads.push_back(std::make_unique<IoThread>(sh, i));
  }
  for (auto& t : threads) sh.threads.push_back(t.get());
  // The app's pool: created here, in the process that serves (a prefork worker after its fork); joined
  // once the io threads are done and before they are destroyed (its jobs use their connections).
  std::optional<AppPool> pool;
  if (opt.app_threads > 0) {
    pool.emplace(opt.app_threads);
    sh.pool = &*pool;
  }
  sh.accepting = static_cast<unsigned>(threads.size());
  if (in_worker) arm_fault_containment(sh);
  for (auto& t : threads) t->listen(sh.listeners, opt.reuseport);
  // The signal set belongs to thread 0's io_context and must go before it does (below).
  std::optional<asio::signal_set> signals(std::in_place, threads[0]->ioc);
  threads[0]->on_stop = [&signals] {
    error_code ignore;
    if (signals) signals->cancel(ignore);
  };
  if (opt.handle_signals || in_worker) {
    signals->add(SIGTERM);
    signals->add(SIGINT);
    signals->add(SIGHUP);
    signals->add(SIGUSR1);
  }
  std::function<void(const error_code&, int)> on_signal = [&](const error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGTERM || sig == SIGINT) {
      std::lock_guard lock(mu);
      stop_requested = true;
      for (auto& t : threads) t->stop();
      return;
    }
    // SIGUSR1 (and SIGHUP in a single process): reopen every log file of the process, the app's too.
    reopen_logs(sh);
    signals->async_wait(on_signal);
  };
  if (opt.handle_signals || in_worker) signals->async_wait(on_signal);
  if (in_worker) {
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
  } else {
    announce(sh.listeners);
  }
  {
    std::lock_guard lock(mu);
    if (stop_requested)
      for (auto& t : threads) t->stop();
  }
  std::vector<std::thread> extra;
  for (std::size_t i = 1; i < threads.size(); ++i) extra.emplace_back([t = threads[i].get()] { t->run(); });
  // Thread 0 runs here; its signal wait ends with the stop.
  threads[0]->run();
  for (auto& th : extra) th.join();
  if (pool) pool->shutdown();
  g_fault.armed = false;  // a fault from here on (teardown) is not contained
  if (in_worker) {
    // Done serving: a SIGTERM that comes now (the master repeating a stop) must not find the default
    // action once the signal set is gone; the worker is about to exit anyway.
    sigset_t block;
    sigemptyset(&block);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&block, sig);
    ::sigprocmask(SIG_BLOCK, &block, nullptr);
  }
  signals.reset();
  {
    std::lock_guard lock(mu);
    sh.threads.clear();
    threads.clear();
  }
  sh.pool = nullptr;
  return 0;
}

namespace {
volatile sig_atomic_t g_dummy = 0;
void noop_handler(int) { g_dummy = 1; }
}  // namespace

// The prefork master: forks the workers, restarts those that die, forwards signals; never serves.
int Server::Impl::master(Shared& sh) {
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGCHLD}) sigaddset(&set, s);
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
  auto spawn = [&]() -> pid_t {
    pid_t pid = ::fork();
    if (pid == 0) {
      // Worker: serve with the inherited sockets; signals stay blocked until the handlers are set.
      if (notify[0] >= 0) ::close(notify[0]);
      notify_fd = notify[1];
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
      ::_exit(rc);
    }
    if (pid < 0) sh.errors.write(std::string("csgi: fork failed: ") + std::strerror(errno));
    return pid;
  };
  for (unsigned i = 0; i < opt.workers; ++i)
    if (pid_t p = spawn(); p > 0) workers[p] = generation;
  announce(sh.listeners);

  bool stopping = false;
  Clock::time_point stop_deadline{};
  std::vector<Clock::time_point> recent_crashes;
  auto replace_worker = [&] {
    // Back off when workers die in a loop (a broken app) instead of forking hundreds a second.
    auto now = Clock::now();
    std::erase_if(recent_crashes, [&](auto t) { return now - t > std::chrono::seconds(1); });
    recent_crashes.push_back(now);
    if (recent_crashes.size() > 10) ::usleep(500000);
    if (pid_t p = spawn(); p > 0) workers[p] = generation;
  };
  for (;;) {
    // Workers leaving after a contained fault: replaced now, not when they exit.
    for (pid_t leaving = 0; notify[0] >= 0 && ::read(notify[0], &leaving, sizeof leaving) == sizeof leaving;) {
      auto it = workers.find(leaving);
      if (it == workers.end() || it->second == retiring) continue;
      bool replace = !stopping && it->second == generation;
      it->second = retiring;
      if (replace) replace_worker();
    }
    // Reap.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      auto it = workers.find(pid);
      if (it == workers.end()) continue;
      unsigned gen = it->second;
      workers.erase(it);
      bool crashed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
      bool cannot_start = WIFEXITED(status) && WEXITSTATUS(status) == kWorkerCannotStart;
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
        sh.errors.write("csgi: worker " + std::to_string(pid) + " exited after containing a fault");
      } else if (crashed) {
        sh.errors.write("csgi: worker " + std::to_string(pid) + " died (" +
                        (WIFSIGNALED(status) ? std::string("signal ") + std::to_string(WTERMSIG(status))
                                             : "exit " + std::to_string(WEXITSTATUS(status))) +
                        ")" + (replace ? "; starting a new one" : ""));
      }
      if (replace) replace_worker();
    }
    if (stopping && workers.empty()) break;
    if (stopping && Clock::now() > stop_deadline) {
      for (auto& [pid, g] : workers) ::kill(pid, SIGKILL);
    }
    timespec ts{0, 200 * 1000 * 1000};
    int sig = ::sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      if (!stopping) {
        stopping = true;
        stop_deadline = Clock::now() + opt.graceful_timeout + std::chrono::seconds(1);
      }
      // A second TERM/INT is passed on too: the workers then close their idle connections at once.
      for (auto& [pid, g] : workers) ::kill(pid, SIGTERM);
    } else if (sig == SIGHUP && !stopping) {
      // Graceful restart: new workers first (they accept at once on the same sockets), then the old
      // ones stop accepting and finish what they have. Workers of earlier generations were told
      // already (a second SIGTERM would close their idle connections at once).
      std::vector<pid_t> old_pids;
      for (auto& [pid, g] : workers)
        if (g == generation) old_pids.push_back(pid);
      ++generation;
      for (unsigned i = 0; i < opt.workers; ++i)
        if (pid_t p = spawn(); p > 0) workers[p] = generation;
      for (pid_t p : old_pids) ::kill(p, SIGTERM);
      reopen_logs(sh);
    } else if (sig == SIGUSR1) {
      reopen_logs(sh);
      for (auto& [pid, g] : workers) ::kill(pid, SIGUSR1);
    }
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  for (int fd : notify)
    if (fd >= 0) ::close(fd);
  for (const auto& s : sh.listeners)
    if (!s.tcp && !s.systemd && s.display.rfind("unix:", 0) == 0) ::unlink(s.display.c_str() + 5);
  return exit_status;
}

}  // namespace csgi::standalone
