#pragma once
/// The counters of a server's worker processes, in one anonymous MAP_SHARED mapping that the server makes
/// before it forks: each worker writes its own slot (relaxed atomics, no lock), the master counts worker
/// restarts by cause and clears a slot when its worker exits, and any process reads the sum over the
/// live slots (totals()). A worker that dies leaves nothing behind in the sums: its slot is cleared.
/// A server hands the board to the app through csgix.server_stats (ServerStats::board()); mw::Metrics
/// renders it.
///
///   auto board = csgi::WorkerBoard::create();        // before fork()
///   csgi::WorkerBoard::Slot* s = board->claim();     // in the master, for the worker about to fork
///   s->connections_open.fetch_add(1, std::memory_order_relaxed);   // in that worker
///   board->release(s);                               // in the master, once the worker is reaped
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace csgi {

class WorkerBoard {
public:
  /// Why a worker was replaced.
  enum class Cause : unsigned { crash, timeout, max_requests, memory };
  static constexpr std::array<std::string_view, 4> cause_names{"crash", "timeout", "max_requests", "memory"};
  static constexpr std::size_t max_slots = 512;
  static constexpr std::size_t max_listeners = 16;

  /// One worker's gauges.
  struct alignas(64) Slot {
    std::atomic<int> pid{0};                         // 0: free
    std::atomic<std::uint64_t> connections_open{0};
    std::atomic<std::uint64_t> connections_idle{0};  // keep-alive connections waiting for a request
    std::atomic<std::uint64_t> app_queued{0};        // requests waiting for an app thread (--app-threads)
    std::atomic<std::uint64_t> app_busy{0};          // app threads running the app
  };

  struct Totals {
    std::uint64_t workers = 0;  // slots in use
    std::uint64_t connections_open = 0;
    std::uint64_t connections_idle = 0;
    std::uint64_t app_queued = 0;
    std::uint64_t app_busy = 0;
    std::array<std::uint64_t, cause_names.size()> restarts{};
  };

  /// A listening socket's accept queue, from TCP_INFO (Linux fills tcpi_unacked and tcpi_sacked of a
  /// listening TCP socket with its accept queue's length and limit). Unix sockets are not listed.
  struct Backlog {
    std::string listener;
    std::uint64_t queued = 0;
    std::uint64_t limit = 0;
  };

  /// A new board in a shared anonymous mapping; throws std::system_error when it cannot be made.
  static std::shared_ptr<WorkerBoard> create();

  /// A free slot, marked taken (pid -1 until set_pid), its gauges zero; nullptr when every slot is taken.
  /// Only one process (the master) claims and releases.
  Slot* claim() noexcept;
  static void set_pid(Slot* s, int pid) noexcept {
    if (s) s->pid.store(pid, std::memory_order_relaxed);
  }
  void release(Slot* s) noexcept;
  /// The slot of `pid`, or nullptr.
  Slot* find(int pid) noexcept;

  void count_restart(Cause c) noexcept { restarts_[static_cast<unsigned>(c)].fetch_add(1, std::memory_order_relaxed); }
  /// Records a listening socket (before fork: the descriptor is the same number in every worker).
  void add_listener(int fd, std::string_view display) noexcept;

  Totals totals() const noexcept;
  std::vector<Backlog> backlogs() const;

private:
  WorkerBoard() = default;
  std::array<Slot, max_slots> slots_{};
  std::array<std::atomic<std::uint64_t>, cause_names.size()> restarts_{};
  struct Listener {
    int fd = -1;
    char display[112] = {};
  };
  std::array<Listener, max_listeners> listeners_{};
  std::size_t nlisteners_ = 0;
};

}  // namespace csgi
