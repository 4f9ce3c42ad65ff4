#pragma once
// One io thread of a server process (IoThread) and a connection's link in its list (ConnNode).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/transport/socket.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/core/env.hpp"

namespace csgi::standalone::detail {

using Clock = std::chrono::steady_clock;

class Transport;
struct FaultSlot;

using ConnHook = boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;
/// A connection's link in its thread's list (for timeouts and graceful stop); unlinks itself.
struct ConnNode : ConnHook {
  Transport* conn = nullptr;
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
  void add(Transport& c);

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
  friend class Transport;
};

/// Starts serving an accepted socket.
void start_connection(IoThread& t, Socket socket, const ListenSocket& listener);

}  // namespace csgi::standalone::detail
