// The io thread's own part: its acceptors, the balancing of accepted connections, its run loop and env
// pool. Its connection list, sweeper and graceful stop are with the connections (io_thread_conns.cpp, transport/transport.cpp).
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <exception>
#include <string>
#include <system_error>

#include <boost/asio/post.hpp>

#include "csgi/adapters/standalone/detail/process/fault.hpp"

namespace csgi::standalone::detail {

using boost::system::error_code;

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
  if (fault_slot) take_fault_slot(*fault_slot);
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

}  // namespace csgi::standalone::detail
