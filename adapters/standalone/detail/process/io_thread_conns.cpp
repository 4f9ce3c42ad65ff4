// An io thread's connections: starting one, the sweep of their deadlines, and the graceful stop that
// closes them (see io_thread.hpp).
#include <malloc.h>

#include "csgi/adapters/standalone/detail/transport/transport.hpp"

namespace csgi::standalone::detail {

void IoThread::add(Transport& c) {
  conns_.push_back(c.node());
  if (stopping && !sweeping_) {
    // A connection accepted late in a stop (an accept that had completed, one posted by another thread):
    // served like the others, so the timers that maybe_finish_stop cancelled run again.
    arm_sweep();
    arm_stop_timer();
  }
}

void IoThread::arm_sweep() {
  sweeping_ = true;
  sweeper_.expires_after(std::chrono::milliseconds(stopping ? 100 : 500));
  sweeper_.async_wait([this](error_code ec) {
    if (!ec) sweep();
  });
}

void IoThread::arm_stop_timer() {
  stop_timer_.expires_at(stop_deadline_);
  stop_timer_.async_wait([this](error_code ec) {
    if (!ec) ioc.stop();  // graceful timeout: what is still open is closed with the io thread
  });
}

void IoThread::sweep() {
  now = Clock::now();
  if (index == 0) {
    // After a burst of connections (thousands at once) most of the heap they used is free but still
    // resident; hand it back to the kernel once the burst is over.
    std::size_t open_now = shared.connections.load(std::memory_order_relaxed);
    peak_ = std::max(peak_, open_now);
    if (peak_ > open_now + 500 && open_now < peak_ / 2) {
      ::malloc_trim(0);
      peak_ = open_now;
    }
  }
  std::vector<std::shared_ptr<Transport>> expired;
  for (ConnNode& n : conns_)
    if (n.conn->expired(now)) expired.push_back(n.conn->shared_from_this());
  for (auto& c : expired) c->on_timeout();
  sweeping_ = false;
  if (stopping) {
    maybe_finish_stop();
    if (conns_.empty()) return;
  }
  arm_sweep();
}

void IoThread::begin_stop() {
  if (stopping) {
    // A second stop request: idle connections are closed now instead of at their timeout.
    std::vector<std::shared_ptr<Transport>> all;
    for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
    for (auto& c : all) c->on_shutdown(true);
    maybe_finish_stop();
    return;
  }
  stopping = true;
  stop_deadline_ = Clock::now() + shared.opt.graceful_timeout;
  if (on_stop) on_stop();
  for (auto& l : listeners_) {
    if (l->pause) l->pause->cancel();
    if (l->own) drain_accept_queue(*l);
    error_code ec;
    l->acceptor->close(ec);
  }
  // Once no thread accepts any more, no thread can be handed a connection: the threads may finish.
  if (shared.accepting.fetch_sub(1, std::memory_order_acq_rel) == 1)
    for (IoThread* t : shared.threads)
      asio::post(t->ioc, [t] {
        t->hold_.reset();
        t->mailbox->finishing();
      });
  std::vector<std::shared_ptr<Transport>> all;
  for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
  for (auto& c : all) c->on_shutdown(false);
  arm_stop_timer();
  maybe_finish_stop();
}

void IoThread::drain_accept_queue(Listener& l) {
  // An SO_REUSEPORT socket of this process's own: closing it resets the connections in its accept queue
  // (the other sockets of the group do not inherit them unless net.ipv4.tcp_migrate_req=1). Accept
  // what is queued and serve it first; a handshake completing between this and the close below is
  // still reset (docs/reliability.md §4).
  for (int n = 0; n < 4096; ++n) {
    error_code ec;
    Socket s(ioc);
    l.acceptor->accept(s, ec);
    if (ec) break;
    open.fetch_add(1, std::memory_order_relaxed);
    try {
      start_connection(*this, std::move(s), *l.info);
    } catch (const std::exception& e) {
      shared.errors.write(std::string("csgi: connection setup failed: ") + e.what());
    }
    open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void IoThread::close_all_connections() noexcept {
  std::vector<std::shared_ptr<Transport>> left;
  for (ConnNode& n : conns_) left.push_back(n.conn->shared_from_this());
  for (auto& c : left) {
    try {
      c->force_close();
    } catch (...) {
    }
  }
}

void IoThread::maybe_finish_stop() {
  if (!stopping || !conns_.empty()) return;
  stop_timer_.cancel();
  sweeper_.cancel();
}

void IoThread::stop() {
  shared.stopping = true;
  if (shared.stats) shared.stats->begin_drain();
  asio::post(ioc, [this] { begin_stop(); });
}

}  // namespace csgi::standalone::detail
