#pragma once
// Internal pieces of the standalone server shared by server.cpp and connection.cpp. Not installed API.
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include "csgi/adapters/standalone/detail/exchange/inline_watch.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"
#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"
#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/log_files.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/worker_board.hpp"

namespace csgi::standalone::detail {

namespace asio = boost::asio;
using Protocol = asio::generic::stream_protocol;
using Socket = Protocol::socket;
using Acceptor = asio::basic_socket_acceptor<Protocol>;
using Clock = std::chrono::steady_clock;

/// A log file that can be reopened (SIGUSR1) while other threads write to it; one write(2) per line.
/// Registered in csgi::log_files while open, so log_files::reopen_all() reopens it with the app's logs.
class LogFile final : public log_files::File {
public:
  LogFile() = default;
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  /// "" → disabled; "-" → stdout; "stderr" → fd 2; else a file opened for appending.
  void open(const std::string& path);
  void reopen() override;
  bool enabled() const noexcept { return fd_.load(std::memory_order_relaxed) >= 0; }
  void write(std::string_view line) const noexcept;

private:
  std::string path_;
  std::atomic<int> fd_{-1};
  mutable std::atomic<bool> failing_{false};  // a write failed; reported once until one succeeds again
  std::mutex mu_;
  std::vector<int> retired_;  // fds replaced by reopen(); closed at the end (a writer may still hold one)
  bool registered_ = false;

  void before_fork() noexcept override { mu_.lock(); }
  void after_fork_parent() noexcept override { mu_.unlock(); }
  void after_fork_child() noexcept override { mu_.unlock(); }
};

/// csgi.errors: one line per message into the error log (stderr by default). An app may keep it past
/// the server (a delayed response answered late): the io threads' mailboxes keep it, and once the server
/// is gone it writes to stderr.
class LogErrorStream final : public ErrorStream {
public:
  explicit LogErrorStream(const LogFile& f) : f_(&f) {}
  void write(std::string_view message) override;
  /// The log file is going: write to stderr from now on.
  void detach() noexcept {
    std::lock_guard lock(mu_);
    f_ = nullptr;
  }

private:
  std::mutex mu_;
  const LogFile* f_;
};

/// What every io thread of a process shares.
struct Shared {
  App app;
  ServerOptions opt;
  ProxyTrust proxy;  // --proxy-protocol, --trusted-proxy
  std::vector<ListenSocket> listeners;
  LogFile access_log;
  LogFile error_log;
  std::shared_ptr<LogErrorStream> errors_owner = std::make_shared<LogErrorStream>(error_log);
  LogErrorStream& errors = *errors_owner;
  std::atomic<std::size_t> connections{0};
  std::unique_ptr<BodyMemory> body_memory;  // request bodies in memory, process-wide (request_body.hpp)
  BodyLimits body_limits;
  // Incoming WebSocket message bytes of the whole process (ServerOptions::ws_process_buffer_bytes); set
  // with the options, shared with the sessions, which may end after the server.
  std::shared_ptr<class ByteBudget> ws_budget;
  ServerStats* stats = nullptr;  // the server's own (Server::stats()), in the env as csgix.server_stats
  std::atomic<bool> stopping{false};  // set as soon as a stop is asked: responses say Connection: close
  std::atomic<unsigned> accepting{0};  // io threads that have not closed their acceptors yet
  bool multithread = false;
  bool multiprocess = false;
  std::vector<class IoThread*> threads;  // every io thread of this process (for accept balancing)
  class AppPool* pool = nullptr;         // --app-threads > 0: where the app runs
  class InlineWatch* inline_watch = nullptr;  // app_inline_first: the app runs inline while it says so
  /// True when the app is called on the pool rather than on the io thread.
  bool app_on_pool() const noexcept { return pool && (!inline_watch || !inline_watch->inline_now()); }
  WorkerBoard::Slot* slot = nullptr;     // this process's gauges on the server's WorkerBoard
  class Recycler* recycler = nullptr;    // a prefork worker with --max-requests/--max-worker-memory
  std::unique_ptr<class TlsContext> tls;  // certificates given: the TLS listeners' (tls.hpp)
  std::array<std::string, 600> status_lines;  // "HTTP/1.1 200 OK\r\n"
  std::string_view status_line(int status) const noexcept {
    return status >= 100 && status < 600 ? std::string_view(status_lines[status]) : std::string_view(status_lines[500]);
  }
  void init_status_lines();
  Shared() = default;
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  ~Shared();
};

class Conn;

/// Crash containment and the request timeout in prefork workers (server.cpp, docs/reliability.md §4):
/// each io thread and app pool thread of a worker has a slot that says which connection's app code it is
/// running, read by the SIGSEGV/SIGBUS/SIGFPE/SIGILL handler on that thread and by the request timeout's
/// watchdog. Lock-free atomics only: the handler may read them at any instant.
struct FaultSlot {
  std::atomic<long> tid{0};            // the io thread's kernel thread id
  std::atomic<Conn*> conn{nullptr};  // the connection whose app code runs now, or null
  std::atomic<std::uint64_t> calls{0};  // app calls begun on this thread (the request timeout's watchdog)
};

/// The calling thread (an io thread or an app pool thread of a prefork worker) takes its fault slot and
/// an alternate signal stack for the fault handler, which it holds until it ends.
void take_fault_slot(FaultSlot& slot);

/// Sets the slot around a call into the app (nests); nothing when the thread has no slot.
class AppScope {
public:
  AppScope(FaultSlot* slot, Conn* c) noexcept : slot_(slot) {
    if (!slot_) return;
    prev_ = slot_->conn.load(std::memory_order_relaxed);
    if (!prev_) slot_->calls.store(slot_->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    slot_->conn.store(c, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~AppScope() {
    if (!slot_) return;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    slot_->conn.store(prev_, std::memory_order_relaxed);
  }
  AppScope(const AppScope&) = delete;
  AppScope& operator=(const AppScope&) = delete;

private:
  FaultSlot* slot_;
  Conn* prev_ = nullptr;
};

/// The fault slot of this thread when it is an app pool thread of a prefork worker (set as it starts).
inline thread_local FaultSlot* pool_fault_slot = nullptr;

/// After a fault or a request timeout in `c`'s app call on a pool thread (frozen for good): has the
/// connection's io thread answer `status` as the app's response, then set `answered`. Returns "METHOD
/// URI" for the log.
std::string abandon_pooled(Conn& c, int status, std::atomic<bool>& answered) noexcept;

/// After a fault in `c`'s app code, with the faulting io thread frozen (never to run again): answers
/// `status` (500 for a fault, 504 for a request timeout) when nothing of the response went out yet,
/// half-closes the socket, and detaches the connection from its thread so that nothing touches it
/// again. Returns "METHOD URI" of its request for the log.
std::string abandon_faulted(Conn& c, int status = 500) noexcept;

/// Where the app's threads post to an io thread (a delayed response's Responder and Writer hold it, so it
/// outlives the io thread). Closed when the io thread goes: from then on a post is dropped and says so.
/// It also keeps the env's csgi.errors, which the app may use until it has answered.
class Mailbox {
public:
  Mailbox(asio::io_context& ioc, std::shared_ptr<ErrorStream> errors) noexcept
      : ioc_(&ioc), errors_(std::move(errors)) {}
  /// Posts `f` (moved from only then) and returns true, or returns false once closed.
  template <class F>
  bool post(F& f) {
    std::lock_guard lock(mu_);
    if (!ioc_) return false;
    asio::post(*ioc_, std::move(f));
    return true;
  }
  bool on_io_thread() {
    std::lock_guard lock(mu_);
    return ioc_ && ioc_->get_executor().running_in_this_thread();
  }
  void close() noexcept {
    std::lock_guard lock(mu_);
    ioc_ = nullptr;
  }

private:
  std::mutex mu_;
  asio::io_context* ioc_;
  std::shared_ptr<ErrorStream> errors_;
};

class Conn;
using ConnHook = boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;
/// A connection's link in its thread's list (for timeouts and graceful stop); unlinks itself.
struct ConnNode : ConnHook {
  Conn* conn = nullptr;
};

/// One io thread: its own io_context, acceptors, connections, timeout sweeper and pool of envs.
class IoThread {
public:
  IoThread(Shared& shared, unsigned index);
  ~IoThread();
  /// Opens the acceptors (each a dup of the shared listening socket, or its own SO_REUSEPORT socket).
  void listen(const std::vector<ListenSocket>& sockets, bool own_reuseport_sockets);
  void run();
  /// Graceful stop, from any thread.
  void stop();

  Shared& shared;
  unsigned index;
  std::atomic<std::size_t> open{0};        // connections owned by this thread
  bool destroying = false;                 // set first in ~IoThread: handlers destroyed with ioc must not use the pool
  asio::io_context ioc{1};
  std::shared_ptr<Mailbox> mailbox = std::make_shared<Mailbox>(ioc, shared.errors_owner);  // closed first in ~IoThread
  Clock::time_point now = Clock::now();  // refreshed by the sweeper and on each readable event
  bool stopping = false;
  std::atomic<bool> exited{false};         // run() returned: nothing posted to ioc runs any more
  bool balance = true;                     // hand accepted connections to the least busy thread
  std::function<void()> on_stop;  // run on this thread when a graceful stop begins
  FaultSlot* fault_slot = nullptr;   // in a prefork worker: this thread's crash-containment slot

  std::unique_ptr<Env> acquire_env();
  void release_env(std::unique_ptr<Env> env);
  void add(Conn& c);

private:
  struct Listener {
    std::unique_ptr<Acceptor> acceptor;
    const ListenSocket* info;
    std::unique_ptr<asio::steady_timer> pause;
    bool own = false;  // an SO_REUSEPORT socket of this thread's own (its accept queue dies with it)
  };
  void accept(Listener& l);
  void sweep();
  void arm_sweep();
  void arm_stop_timer();
  void begin_stop();
  void drain_accept_queue(Listener& l);
  /// Closes every connection still open (at destruction: breaks the self-references of connections
  /// waiting on a delayed response, which would otherwise outlive the server).
  void close_all_connections() noexcept;
  void maybe_finish_stop();

  std::vector<std::unique_ptr<Listener>> listeners_;
  asio::steady_timer sweeper_{ioc};
  asio::steady_timer stop_timer_{ioc};
  Clock::time_point stop_deadline_{};  // graceful timeout of a stop in progress
  bool sweeping_ = false;              // the sweeper timer is armed
  // Keeps run() going, even with nothing to do, until every thread has stopped accepting: until then
  // another thread may still hand this one a connection.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> hold_{ioc.get_executor()};
  boost::intrusive::list<ConnNode, boost::intrusive::constant_time_size<false>> conns_;
  std::vector<std::unique_ptr<Env>> env_pool_;
  std::vector<int> owned_fds_;
  std::size_t peak_ = 0;  // most connections seen since the last malloc_trim (thread 0)
  friend class Conn;
};

/// Starts serving an accepted socket.
void start_connection(IoThread& t, Socket socket, const ListenSocket& listener);

}  // namespace csgi::standalone::detail
