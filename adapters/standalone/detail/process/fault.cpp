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
#include "csgi/adapters/standalone/detail/process/fault.hpp"

#include <cxxabi.h>
#include <execinfo.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <thread>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/core/log_files.hpp"

namespace csgi::standalone::detail {

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

// The request timeout's watchdog (a prefork worker with --request-timeout): every tick it looks at what
// each io thread runs; an app call seen running for longer than the timeout gets its thread signalled
// (on_timeout), which hands the request to the rescue thread as a fault does.
void watch_requests(std::chrono::milliseconds request_timeout) {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, nullptr);
  auto tick = std::clamp<std::chrono::milliseconds>(request_timeout / 20, std::chrono::milliseconds(10),
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
      if (now - seen[i].since < request_timeout) continue;
      g_fault.timeout_call.store(call);
      g_fault.timeout_slot.store(static_cast<int>(i));
      ::syscall(SYS_tgkill, ::getpid(), slot.tid.load(), g_fault.timeout_sig);
      seen[i].since = now;  // if the call ended just now, it is looked at again a timeout later
    }
  }
}

// The rescue thread: waits for a contained fault (or a request timeout), then ends the worker as the
// comment at the top of this file says.
[[noreturn]] void rescue(Shared& sh, const std::vector<std::unique_ptr<IoThread>>& threads,
                         const std::function<void(WorkerBoard::Cause)>& notify_master) {
  const ServerOptions& opt = sh.opt;
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
  Transport* c = g_fault.slots[slot].conn.load();
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
}  // namespace

void make_fault_slots(const std::vector<std::unique_ptr<IoThread>>& threads, unsigned app_threads) {
  g_fault.nslots = static_cast<unsigned>(threads.size()) + app_threads;
  g_fault.slots = new FaultSlot[g_fault.nslots];  // lives as long as the process
  for (std::size_t i = 0; i < threads.size(); ++i) threads[i]->fault_slot = &g_fault.slots[i];
}

FaultSlot& app_thread_fault_slot(unsigned io_threads, unsigned i) noexcept { return g_fault.slots[io_threads + i]; }

void arm_fault_containment(Shared& sh, const std::vector<std::unique_ptr<IoThread>>& threads,
                           std::function<void(WorkerBoard::Cause)> notify_master) {
  const ServerOptions& opt = sh.opt;
  auto secs = std::chrono::ceil<std::chrono::seconds>(opt.graceful_timeout).count();
  g_fault.alarm_s = static_cast<unsigned>(std::max<long long>(1, secs) + 2);
  ::sem_init(&g_fault.wake, 0, 0);
  std::thread([&sh, &threads, notify = std::move(notify_master)] { rescue(sh, threads, notify); }).detach();
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
    std::thread([timeout = opt.request_timeout] { watch_requests(timeout); }).detach();
  }
  g_fault.armed = true;
}

void disarm_fault_containment() noexcept { g_fault.armed = false; }

}  // namespace csgi::standalone::detail
