// The standalone server's process structure: io threads (one io_context each), listening sockets,
// signals, and the prefork master that restarts workers.
#include "csgi/adapters/standalone/server.hpp"

#include "csgi/core/server_stats.hpp"

#include <cxxabi.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <future>
#include <optional>
#include <map>
#include <thread>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/process/handover.hpp"
#include "csgi/adapters/standalone/detail/process/recycle.hpp"
#include "csgi/adapters/standalone/detail/process/systemd_notify.hpp"
#include "csgi/adapters/standalone/detail/process/binary_upgrade.hpp"
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"
#include "csgi/adapters/standalone/detail/process/worker_reports.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone {

namespace detail {

using boost::system::error_code;

namespace {
// SIGUSR1: every log file of the process (this server's and the app's: log_files) is reopened by name.
void reopen_logs(Shared& sh) {
  for (const std::string& e : log_files::reopen_all()) sh.errors.write("csgi: " + e);
}

// "csgi: SIGTERM: stopping gracefully…": what the server does on a signal, in the error log.
void log_signal(Shared& sh, int sig, const std::string& what) {
  const char* name = ::sigabbrev_np(sig);
  sh.errors.write("csgi: SIG" + std::string(name ? name : std::to_string(sig)) + ": " + what);
}

std::string seconds_text(std::chrono::milliseconds d) {
  std::string n = std::to_string(d.count() / 1000);
  if (d.count() % 1000) n += "." + std::to_string(d.count() % 1000 + 1000).substr(1);
  return n + " s";
}
}  // namespace

namespace {
/// The calling thread's alternate signal stack for the fault handler (so that a stack overflow in the
/// app is contained too). The stack it replaced (a sanitizer's, or none) is put back when the thread
/// ends, before its owner frees it at thread exit, and ours is freed then. A thread frozen on it by the
/// fault handler never ends: its stack stays until the process exits.
class AltStack {
public:
  AltStack() {
    ss_.ss_sp = ::malloc(size);
    ss_.ss_size = size;
    if (ss_.ss_sp && ::sigaltstack(&ss_, &old_) != 0) {
      ::free(ss_.ss_sp);
      ss_.ss_sp = nullptr;
    }
  }
  ~AltStack() {
    if (!ss_.ss_sp) return;
    ::sigaltstack(&old_, nullptr);
    ::free(ss_.ss_sp);
  }
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;

private:
  static constexpr std::size_t size = 64 * 1024;
  stack_t ss_{};
  stack_t old_{};
};
}  // namespace

void take_fault_slot(FaultSlot& slot) {
  thread_local AltStack alt;
  slot.tid.store(static_cast<long>(::syscall(SYS_gettid)), std::memory_order_relaxed);
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
// An app call on an app pool thread (--app-threads) is contained the same way, except that the pool
// thread's connection is answered by its io thread, which runs on.
//
// The request timeout (--request-timeout) ends the same way: a watchdog thread sees an app call running
// too long and signals its thread (on_timeout), which records its backtrace and parks; the rescue thread
// answers 504 and logs the stack.
namespace {
struct FaultState {
  FaultSlot* slots = nullptr;
  unsigned nslots = 0;
  std::atomic<bool> armed{false};
  std::atomic<int> sig{0};        // the first contained fault's signal
  std::atomic<int> slot{-1};      // its thread's slot (io threads first, then app pool threads)
  unsigned alarm_s = 12;
  sem_t wake;
  // The request timeout: the watchdog names the slot and the app call it timed out, and signals that
  // thread with timeout_sig; the thread records its own backtrace and parks as a faulting thread does.
  int timeout_sig = 0;
  std::atomic<int> timeout_slot{-1};
  std::atomic<std::uint64_t> timeout_call{0};
  void* frames[64];
  int nframes = 0;
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

// Parks the calling thread (an io thread, or an app pool thread) for good and hands its connection to the
// rescue thread: the common end of a contained fault and of a request timeout. Async-signal-safe.
[[noreturn]] void park_for_rescue(int slot) {
  g_fault.slot.store(slot);
  // The last resort: if the rescue cannot finish (a lock the frozen thread holds), SIGALRM ends it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGALRM, &dfl, nullptr);
  ::alarm(g_fault.alarm_s);
  ::sem_post(&g_fault.wake);
  for (;;) ::pause();  // every signal is blocked here (sa_mask): this thread never runs again
}

int my_slot() noexcept {
  long tid = static_cast<long>(::syscall(SYS_gettid));
  for (unsigned i = 0; i < g_fault.nslots; ++i)
    if (g_fault.slots[i].tid.load(std::memory_order_relaxed) == tid) return static_cast<int>(i);
  return -1;
}

// The request timeout's signal, sent by the watchdog to the thread running an app call too long. If
// that call has ended meanwhile, nothing happens. backtrace() was called once when the handler was
// installed (its first call loads the unwinder), so here it only walks the stack.
void on_timeout(int sig, siginfo_t*, void*) {
  if (!g_fault.armed.load(std::memory_order_relaxed)) return;
  int mine = my_slot();
  if (mine < 0 || mine != g_fault.timeout_slot.load() || g_fault.slots[mine].conn.load(std::memory_order_relaxed) == nullptr ||
      g_fault.slots[mine].calls.load(std::memory_order_relaxed) != g_fault.timeout_call.load())
    return;
  g_fault.nframes = ::backtrace(g_fault.frames, static_cast<int>(std::size(g_fault.frames)));
  int none = 0;
  if (!g_fault.sig.compare_exchange_strong(none, sig)) return;  // a fault is being contained: it ends the worker
  park_for_rescue(mine);
}

void on_fault(int sig, siginfo_t*, void*) {
  if (!g_fault.armed.load(std::memory_order_relaxed)) die_by(sig);
  int mine = my_slot();
  // Not a thread with a slot, or one outside the app's code: nothing known to contain.
  if (mine < 0 || g_fault.slots[mine].conn.load(std::memory_order_relaxed) == nullptr) die_by(sig);
  int none = 0;
  if (!g_fault.sig.compare_exchange_strong(none, sig)) die_by(sig);  // a second fault: end at once
  park_for_rescue(mine);
}

// The frames of a backtrace, one per line, C++ names demangled where backtrace_symbols found a name.
std::string describe_frames(void* const* frames, int n) {
  std::string out;
  char** names = ::backtrace_symbols(frames, n);
  for (int i = 0; i < n; ++i) {
    std::string line = names ? names[i] : "?";
    // "object(mangled+0x12) [0xaddr]": the mangled name, demangled.
    std::size_t open = line.find('('), plus = line.find('+', open == std::string::npos ? 0 : open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = -1;
      char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      if (status == 0 && d) line.replace(open + 1, mangled.size(), d);
      std::free(d);
    }
    out += "  #" + std::to_string(i) + " " + line + "\n";
  }
  std::free(names);
  return out;
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

  int notify_fd = -1;   // worker → master: "I am leaving, start my replacement" (a Notice)
  pid_t master_pid = 0;
  std::shared_ptr<WorkerBoard> board;  // every worker's gauges and the restarts, shared across the fork

  /// What a leaving worker writes to the master (one write, atomic on a pipe).
  struct Notice {
    pid_t pid;
    WorkerBoard::Cause cause;
  };
  SystemdNotify sd;                  // systemd Type=notify (nothing unless NOTIFY_SOCKET is set)
  WorkerReports* reports = nullptr;  // a prefork master's and its workers': ready, requests served
  int upgrade_fd = -1;  // this process was started by a binary upgrade: tells the old master it is ready

  int run();
  int serve(Shared& sh, bool in_worker);
  void make_fault_slots();
  void arm_fault_containment(Shared& sh);
  [[noreturn]] void rescue(Shared& sh);
  void watch_requests();
  void notify_master(WorkerBoard::Cause cause) noexcept;
  void retire(Shared& sh, WorkerBoard::Cause cause, const std::string& why);
  int master(Shared& sh);
  std::string served_status() const;
  void install_ticker(std::optional<Ticker>& ticker, bool in_worker);
  void announce(const std::vector<ListenSocket>& socks);
};

Server::Server(App app, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->app = std::move(app);
  impl_->opt = std::move(options);
  if (!impl_->app) throw std::invalid_argument("csgi::standalone::Server: no app");
  if (impl_->opt.threads == 0) impl_->opt.threads = 1;
  if (impl_->opt.reload.load && impl_->opt.workers == 0) impl_->opt.workers = 1;
  if (!impl_->opt.handle_signals) impl_->sd.disable();
  if (!impl_->opt.script_name.empty() &&
      (impl_->opt.script_name.front() != '/' || impl_->opt.script_name.back() == '/'))
    throw std::invalid_argument("script name must start with '/' and not end with '/': " + impl_->opt.script_name);
  (void)ProxyTrust(impl_->opt.proxy_protocol, impl_->opt.trusted_proxies);  // throws for a bad block
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
    std::string url = s.tcp ? (s.tls ? "https://" : "http://") + s.display + "/" : s.display;
    if (opt.on_listening) {
      opt.on_listening(url);
    } else {
      std::printf("csgi: listening on %s\n", url.c_str());
      std::fflush(stdout);
    }
  }
}

// In a worker, before its app pool starts: one slot per io thread, then one per app thread.
void Server::Impl::make_fault_slots() {
  g_fault.nslots = static_cast<unsigned>(threads.size()) + opt.app_threads;
  g_fault.slots = new FaultSlot[g_fault.nslots];  // lives as long as the process
  for (std::size_t i = 0; i < threads.size(); ++i) threads[i]->fault_slot = &g_fault.slots[i];
}

// In a worker, before its io threads start: the rescue thread, the handlers.
void Server::Impl::arm_fault_containment(Shared& sh) {
  auto secs = std::chrono::ceil<std::chrono::seconds>(opt.graceful_timeout).count();
  g_fault.alarm_s = static_cast<unsigned>(std::max<long long>(1, secs) + 2);
  ::sem_init(&g_fault.wake, 0, 0);
  std::thread([this, &sh] { rescue(sh); }).detach();
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
  if (opt.request_timeout.count() > 0) {
    void* warm[4];
    (void)::backtrace(warm, 4);  // loads the unwinder now, outside any signal handler
    g_fault.timeout_sig = SIGRTMIN + 3;
    sa.sa_sigaction = on_timeout;
    ::sigaction(g_fault.timeout_sig, &sa, nullptr);
    std::thread([this] { watch_requests(); }).detach();
  }
  g_fault.armed = true;
}

// The request timeout's watchdog (a prefork worker with --request-timeout): every tick it looks at what
// each io thread runs; an app call seen running for longer than the timeout gets its thread signalled
// (on_timeout), which hands the request to the rescue thread as a fault does.
void Server::Impl::watch_requests() {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, nullptr);
  auto tick = std::clamp<std::chrono::milliseconds>(opt.request_timeout / 20, std::chrono::milliseconds(10),
                                                    std::chrono::milliseconds(250));
  struct Seen {
    std::uint64_t call = 0;
    Clock::time_point since{};
  };
  std::vector<Seen> seen(g_fault.nslots);
  while (g_fault.sig.load() == 0) {
    std::this_thread::sleep_for(tick);
    auto now = Clock::now();
    for (unsigned i = 0; i < g_fault.nslots; ++i) {
      FaultSlot& slot = g_fault.slots[i];
      std::uint64_t call = slot.calls.load(std::memory_order_relaxed);
      if (slot.conn.load(std::memory_order_relaxed) == nullptr) {
        seen[i] = {};
        continue;
      }
      if (seen[i].call != call) {
        seen[i] = {call, now};
        continue;
      }
      if (now - seen[i].since < opt.request_timeout) continue;
      g_fault.timeout_call.store(call);
      g_fault.timeout_slot.store(static_cast<int>(i));
      ::syscall(SYS_tgkill, ::getpid(), slot.tid.load(), g_fault.timeout_sig);
      seen[i].since = now;  // if the call ended just now, it is looked at again a timeout later
    }
  }
}

void Server::Impl::notify_master(WorkerBoard::Cause cause) noexcept {
  if (notify_fd < 0) return;
  Notice n{::getpid(), cause};
  ssize_t w = ::write(notify_fd, &n, sizeof n);
  (void)w;
  ::kill(master_pid, SIGCHLD);
}

// A worker past --max-requests or --max-worker-memory: the master forks its replacement now, and this
// worker stops accepting and finishes its requests (as on SIGTERM).
void Server::Impl::retire(Shared& sh, WorkerBoard::Cause cause, const std::string& why) {
  notify_master(cause);
  sh.errors.write("csgi: worker " + std::to_string(::getpid()) + " " + why +
                  ": it stops accepting, finishes its requests and exits (a new worker replaces it)");
  std::lock_guard lock(mu);
  for (auto& t : threads) t->stop();
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
  bool timeout = g_fault.timeout_sig != 0 && sig == g_fault.timeout_sig;
  pid_t me = ::getpid();
  // 1. The master starts a replacement now (a Notice through the pipe; SIGCHLD wakes it up).
  notify_master(timeout ? WorkerBoard::Cause::timeout : WorkerBoard::Cause::crash);
  // 2. Only the faulting (timed-out) request's client sees the failure: a 500 (504). On an io thread the
  // connection is answered from here; on an app pool thread its io thread, which runs on, answers it.
  bool pooled = static_cast<std::size_t>(slot) >= threads.size();
  Conn* c = g_fault.slots[slot].conn.load();
  int status = timeout ? 504 : 500;
  static std::atomic<bool> answered{false};
  std::string request = !c ? std::string() : pooled ? abandon_pooled(*c, status, answered) : abandon_faulted(*c, status);
  // 3. The error log: one line, and for a timeout the app thread's stack (without the handler's frame).
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", static_cast<double>(opt.request_timeout.count()) / 1000.0);
  std::string what = timeout ? "the app ran longer than --request-timeout (" + std::string(limit) + " s)"
                             : std::string(signal_name(sig)) + " in the app";
  std::string on = pooled ? "app thread " + std::to_string(static_cast<std::size_t>(slot) - threads.size())
                          : "io thread " + std::to_string(slot);
  std::string line = "csgi: worker " + std::to_string(me) + ": " + what + " on " + on +
                     " while serving \"" + request + "\"; that request " +
                     (timeout ? "was answered 504" : "failed") +
                     "; the worker stops accepting, finishes its other requests and exits (a new worker replaces it)";
  if (timeout && g_fault.nframes > 1)
    line += "\ncsgi: the app thread's stack:\n" + describe_frames(g_fault.frames + 1, g_fault.nframes - 1);
  sh.errors.write(line);
  // 4. Every io thread stops gracefully; a frozen io thread's io_context is run here. The abandoned
  // connection is never destroyed (the frozen stack holds it): it stays in the count.
  for (auto& th : threads) th->stop();
  auto deadline = Clock::now() + opt.graceful_timeout;
  while (pooled && (sh.connections.load() > (c ? 1u : 0u) || (c && !answered.load())) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  IoThread& t = *threads[pooled ? 0 : static_cast<std::size_t>(slot)];
  while (!pooled && sh.connections.load() > (c ? 1u : 0u) && Clock::now() < deadline) {
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

namespace {
// With certificates and no listener marked https://, every listener serves TLS (as gunicorn and uvicorn
// do when given a certificate); an https:// listener without certificates is an error.
void choose_tls_listeners(Shared& sh) {
  bool marked = false;
  for (const auto& s : sh.listeners) marked = marked || s.tls;
  if (marked && !sh.tls) throw std::runtime_error("--listen https://…: no certificate; give --tls-cert FILE --tls-key FILE");
  if (sh.tls && !marked)
    for (auto& s : sh.listeners) s.tls = true;
}

// SIGHUP: new connections get the certificates as the files now say; open ones keep theirs.
void reload_tls(Shared& sh) {
  if (!sh.tls) return;
  std::string err = sh.tls->reload();
  if (!err.empty()) sh.errors.write("csgi: TLS certificates not reloaded, the previous ones stay: " + err);
  else if (std::string notes = sh.tls->notes(); !notes.empty()) sh.errors.write("csgi: " + notes);
}
}  // namespace

int Server::Impl::run() {
  ::signal(SIGPIPE, SIG_IGN);
  Shared sh;
  sh.app = app;
  sh.opt = opt;
  sh.body_memory = std::make_unique<BodyMemory>(opt.body_memory_bytes);
  sh.body_limits.memory_bytes = opt.body_buffer_bytes;
  sh.body_limits.memory = sh.body_memory.get();
  if (!opt.body_temp_dir.empty()) sh.body_limits.temp_dir = opt.body_temp_dir;
  else if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) sh.body_limits.temp_dir = tmp;
  sh.ws_budget = std::make_shared<ByteBudget>(opt.ws_process_buffer_bytes);
  sh.proxy = ProxyTrust(opt.proxy_protocol, opt.trusted_proxies);
  sh.init_status_lines();
  sh.multithread = opt.threads > 1 || opt.app_threads > 0;
  sh.multiprocess = opt.workers > 0;
  sh.stats = &stats;
  stats.attach_adapter("standalone");
  stats.set_workers(opt.workers > 0 ? opt.workers : 1);
  upgrade_fd = take_upgrade_fd();
  try {
    sh.access_log.open(opt.access_log);
    sh.error_log.open(opt.error_log);
    if (!opt.tls_client_ca.empty() && opt.tls_certificates.empty())
      throw std::runtime_error("--tls-client-ca: give --tls-cert FILE --tls-key FILE too");
    if (!opt.tls_certificates.empty()) {
      sh.tls = make_tls_context(opt.tls_certificates, opt.tls_client_ca, opt.h2_max_streams > 0);
      if (std::string notes = sh.tls->notes(); !notes.empty()) sh.errors.write("csgi: " + notes);
    }
    sh.listeners = systemd_sockets();
    if (sh.listeners.empty()) {
      std::vector<std::string> specs = opt.listen;
      if (specs.empty()) specs.push_back("127.0.0.1:5000");
      for (const auto& spec : specs) sh.listeners.push_back(open_listen(parse_listen(spec), opt.reuseport));
    }
    choose_tls_listeners(sh);
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
  board = WorkerBoard::create();
  for (const auto& s : sh.listeners) board->add_listener(s.fd, s.display);
  stats.set_board(board.get());
  if (opt.workers == 0) {
    sh.slot = board->claim();
    WorkerBoard::set_pid(sh.slot, ::getpid());
  }
  int rc = opt.workers > 0 ? master(sh) : serve(sh, false);
  stats.set_board(nullptr);
  for (auto& s : sh.listeners) {
    ::close(s.fd);
    if (!s.tcp && !s.systemd && s.display.rfind("unix:", 0) == 0 && opt.workers == 0) ::unlink(s.display.c_str() + 5);
  }
  return rc;
}

// Serves in this process with opt.threads io threads until a stop.
int Server::Impl::serve(Shared& sh, bool in_worker) {
  // --reload: the app's library or module is loaded here, in each new worker; a failure ends the worker
  // before it is ready, and the master keeps the workers it has.
  if (in_worker && opt.reload.load) opt.reload.load();
  {
    std::lock_guard lock(mu);
    for (unsigned i = 0; i < opt.threads; ++i) threads.push_back(std::make_unique<IoThread>(sh, i));
  }
  for (auto& t : threads) sh.threads.push_back(t.get());
  // The app's pool: created here, in the process that serves (a prefork worker after its fork); joined
  // once the io threads are done and before they are destroyed (its jobs use their connections).
  std::optional<AppPool> pool;
  if (in_worker) make_fault_slots();
  if (opt.app_threads > 0) {
    std::function<void(unsigned)> on_start;
    if (in_worker)
      on_start = [io = threads.size()](unsigned i) {
        take_fault_slot(g_fault.slots[io + i]);
        pool_fault_slot = &g_fault.slots[io + i];
      };
    pool.emplace(opt.app_threads, sh.slot, std::move(on_start));
    sh.pool = &*pool;
  }
  std::optional<InlineWatch> inline_watch;
  if (sh.pool && opt.app_inline_first) {
    inline_watch.emplace(sh.errors, opt.app_threads);
    sh.inline_watch = &*inline_watch;
  }
  std::optional<Recycler> recycler;
  if (in_worker && (opt.max_requests > 0 || opt.max_worker_rss > 0)) {
    recycler.emplace(opt, [this, &sh](WorkerBoard::Cause cause, const std::string& why) { retire(sh, cause, why); });
    sh.recycler = &*recycler;
  }
  sh.accepting = static_cast<unsigned>(threads.size());
  if (in_worker) arm_fault_containment(sh);
  for (auto& t : threads) t->listen(sh.listeners, opt.reuseport);
  // The signal set belongs to thread 0's io_context and must go before it does (below).
  std::optional<asio::signal_set> signals(std::in_place, threads[0]->ioc);
  std::optional<Ticker> ticker;  // systemd's watchdog and STATUS (or a worker's count for its master's)
  install_ticker(ticker, in_worker);
  threads[0]->on_stop = [&signals, &ticker] {
    error_code ignore;
    if (signals) signals->cancel(ignore);
    if (ticker) ticker->cancel();
  };
  if (opt.handle_signals || in_worker) {
    signals->add(SIGTERM);
    signals->add(SIGINT);
    signals->add(SIGHUP);
    signals->add(SIGUSR1);
    if (!in_worker) signals->add(SIGUSR2);
  }
  // SIGHUP's TLS reload runs beside the io threads: fetching OCSP responses may take seconds. One at a
  // time; the last one is waited for when serving ends.
  std::future<void> tls_reload;
  std::function<void(const error_code&, int)> on_signal = [&](const error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGTERM || sig == SIGINT) {
      if (!in_worker) {
        sd.stopping("stopping: finishing the requests in flight");
        log_signal(sh, sig, "stopping gracefully: no new connections; requests in flight get up to " +
                                seconds_text(opt.graceful_timeout));
      }
      std::lock_guard lock(mu);
      stop_requested = true;
      for (auto& t : threads) t->stop();
      return;
    }
    if (sig == SIGUSR2) {
      sh.errors.write("csgi: SIGUSR2 (binary upgrade) needs --workers: a master process that starts the new "
                      "binary while its workers serve; ignored");
    } else {
      // SIGUSR1 (and SIGHUP in a single process): reopen every log file of the process, the app's too;
      // SIGHUP also re-reads the TLS certificates.
      if (sig == SIGHUP && !in_worker) sd.reloading("reopening the log files");
      reopen_logs(sh);
      if (!in_worker)
        log_signal(sh, sig, sig == SIGHUP && sh.tls ? "reopened the log files; re-reading the TLS certificates"
                                                    : "reopened the log files");
      if (sig == SIGHUP && sh.tls) {
        try {
          if (!tls_reload.valid() || tls_reload.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
            tls_reload = std::async(std::launch::async, [&sh] { reload_tls(sh); });
          else
            sh.errors.write("csgi: SIGHUP: the TLS certificates are being re-read already");
        } catch (const std::exception& e) {
          sh.errors.write(std::string("csgi: SIGHUP: cannot re-read the TLS certificates: ") + e.what());
        }
      }
      if (sig == SIGHUP && !in_worker) sd.ready(served_status());
    }
    signals->async_wait(on_signal);
  };
  if (opt.handle_signals || in_worker) signals->async_wait(on_signal);
  if (in_worker) {
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    if (reports) reports->ready();
  } else {
    announce(sh.listeners);
    sd.ready(served_status());
    tell_upgrade_ready(upgrade_fd);
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
    if (reports) reports->publish(stats.snapshot().requests_total);
  }
  ticker.reset();
  signals.reset();
  {
    std::lock_guard lock(mu);
    sh.threads.clear();
    threads.clear();
  }
  sh.pool = nullptr;
  sh.inline_watch = nullptr;
  sh.recycler = nullptr;
  return 0;
}

// "serving, N requests served" (the process's own count; a master's is its workers' sum).
std::string Server::Impl::served_status() const {
  std::uint64_t n = reports ? reports->served() : stats.snapshot().requests_total;
  return "serving, " + std::to_string(n) + " requests served";
}

// With systemd's NOTIFY_SOCKET set: a single process pings the watchdog and updates STATUS from its io
// thread 0 (so a stuck thread 0 stops the pings), a worker adds its count to its master's.
void Server::Impl::install_ticker(std::optional<Ticker>& ticker, bool in_worker) {
  if (!sd.enabled()) return;
  ticker.emplace(threads[0]->ioc, sd.tick_interval(), [this, in_worker] {
    std::uint64_t n = stats.snapshot().requests_total;
    if (in_worker) {
      if (reports) reports->publish(n);
    } else {
      sd.tick(Clock::now(), n, "serving, ");
    }
  });
}

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