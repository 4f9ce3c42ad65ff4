#include "csgi/core/worker_board.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>
#include <type_traits>

namespace csgi {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "WorkerBoard needs lock-free atomics (shared between processes)");
static_assert(std::is_trivially_destructible_v<WorkerBoard::Slot>);

std::shared_ptr<WorkerBoard> WorkerBoard::create() {
  std::size_t size = sizeof(WorkerBoard);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "WorkerBoard: mmap");
  auto* b = new (p) WorkerBoard();
  return std::shared_ptr<WorkerBoard>(b, [size](WorkerBoard* q) {
    q->~WorkerBoard();
    ::munmap(q, size);
  });
}

WorkerBoard::Slot* WorkerBoard::claim() noexcept {
  for (Slot& s : slots_) {
    if (s.pid.load(std::memory_order_relaxed) != 0) continue;
    s.connections_open.store(0, std::memory_order_relaxed);
    s.connections_idle.store(0, std::memory_order_relaxed);
    s.app_queued.store(0, std::memory_order_relaxed);
    s.app_busy.store(0, std::memory_order_relaxed);
    s.pid.store(-1, std::memory_order_relaxed);
    return &s;
  }
  return nullptr;
}

void WorkerBoard::release(Slot* s) noexcept {
  if (s) s->pid.store(0, std::memory_order_relaxed);
}

WorkerBoard::Slot* WorkerBoard::find(int pid) noexcept {
  for (Slot& s : slots_)
    if (s.pid.load(std::memory_order_relaxed) == pid) return &s;
  return nullptr;
}

void WorkerBoard::add_listener(int fd, std::string_view display) noexcept {
  if (nlisteners_ == listeners_.size()) return;
  Listener& l = listeners_[nlisteners_++];
  l.fd = fd;
  std::size_t n = std::min(display.size(), sizeof l.display - 1);
  std::memcpy(l.display, display.data(), n);
  l.display[n] = '\0';
}

WorkerBoard::Totals WorkerBoard::totals() const noexcept {
  Totals t;
  for (const Slot& s : slots_) {
    if (s.pid.load(std::memory_order_relaxed) == 0) continue;
    ++t.workers;
    t.connections_open += s.connections_open.load(std::memory_order_relaxed);
    t.connections_idle += s.connections_idle.load(std::memory_order_relaxed);
    t.app_queued += s.app_queued.load(std::memory_order_relaxed);
    t.app_busy += s.app_busy.load(std::memory_order_relaxed);
  }
  for (std::size_t i = 0; i < restarts_.size(); ++i) t.restarts[i] = restarts_[i].load(std::memory_order_relaxed);
  return t;
}

std::vector<WorkerBoard::Backlog> WorkerBoard::backlogs() const {
  std::vector<Backlog> out;
  for (std::size_t i = 0; i < nlisteners_; ++i) {
    const Listener& l = listeners_[i];
    tcp_info info{};
    socklen_t len = sizeof info;
    if (::getsockopt(l.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_state != TCP_LISTEN) continue;
    out.push_back({l.display, info.tcpi_unacked, info.tcpi_sacked});
  }
  return out;
}

}  // namespace csgi
