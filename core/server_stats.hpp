#pragma once
/// One server's counters for status pages (Apache mod_status, nginx stub_status, Monkey's Cheetah).
/// Each adapter instance owns one (shared by its threads; a prefork worker has its own copy), records
/// connections, requests and worker counts into it, and hands it to the app in every env as
/// `csgix.server_stats` (keys::x::server_stats, spec EXT-7); the server_status middleware reads a snapshot
/// from there. Every counter is a relaxed std::atomic: recording costs one uncontended atomic add, no
/// lock, no allocation.
///
///   csgi::ServerStats s;                      // a member of the adapter's server object
///   s.attach_adapter("standalone");           // once, at start: the adapter feeds the counters
///   s.set_workers(4);
///   s.connection_opened();  ...  s.connection_closed();
///   s.request_started();    ...  s.request_finished(status, bytes_sent);
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace csgi {

class WorkerBoard;

class ServerStats {
public:
  /// Exact statuses counted one by one (the status classes are counted as well).
  static constexpr std::array<int, 12> tracked_statuses{200, 204, 206, 301, 302, 304,
                                                        400, 401, 403, 404, 500, 503};

  struct Snapshot {
    std::chrono::system_clock::time_point start_time;
    double uptime_seconds = 0;
    std::uint64_t workers = 0;
    std::uint64_t workers_busy = 0;        // requests in progress
    std::uint64_t connections_open = 0;
    std::uint64_t connections_total = 0;   // accepted since start
    std::uint64_t requests_total = 0;      // finished since start
    std::uint64_t bytes_sent = 0;
    std::array<std::uint64_t, 5> status_class{};  // [0] = 1xx … [4] = 5xx
    std::array<std::uint64_t, tracked_statuses.size()> status{};  // by tracked_statuses index
    std::uint64_t status_other = 0;       // statuses outside 100–599
    bool draining = false;                // a graceful stop has begun
    bool adapter_attached = false;
    std::string_view adapter;             // name given to attach_adapter, "" if none
  };

  ServerStats() noexcept;
  ServerStats(const ServerStats&) = delete;
  ServerStats& operator=(const ServerStats&) = delete;

  /// Called by an adapter once when it starts serving: it will feed the counters itself, so
  /// middleware fallbacks stop recording. `name` must be a string literal (it is kept as a view).
  void attach_adapter(std::string_view name) noexcept;
  bool adapter_attached() const noexcept { return adapter_.load(std::memory_order_relaxed) != nullptr; }

  void set_workers(std::uint64_t n) noexcept { workers_.store(n, std::memory_order_relaxed); }
  void connection_opened() noexcept {
    connections_open_.fetch_add(1, std::memory_order_relaxed);
    connections_total_.fetch_add(1, std::memory_order_relaxed);
  }
  void connection_closed() noexcept { connections_open_.fetch_sub(1, std::memory_order_relaxed); }
  void request_started() noexcept { busy_.fetch_add(1, std::memory_order_relaxed); }
  /// Ends a request begun with request_started().
  void request_finished(int status, std::uint64_t bytes_sent = 0) noexcept {
    busy_.fetch_sub(1, std::memory_order_relaxed);
    record_response(status, bytes_sent);
  }
  /// Called by the adapter when a graceful stop begins: it finishes what is in flight and accepts no
  /// more. Readiness checks (mw::Health) answer 503 from then on, so a load balancer stops sending here
  /// before the connections close.
  void begin_drain() noexcept { draining_.store(true, std::memory_order_relaxed); }
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }
  /// Counts one response without touching the in-progress count.
  void record_response(int status, std::uint64_t bytes_sent = 0) noexcept;

  /// The counters of every worker of the server (core/worker_board.hpp), when the adapter keeps them.
  void set_board(const WorkerBoard* b) noexcept { board_.store(b, std::memory_order_relaxed); }
  const WorkerBoard* board() const noexcept { return board_.load(std::memory_order_relaxed); }

  Snapshot snapshot() const noexcept;
  /// Zeroes the cumulative counters and restarts the clock; gauges (open, busy, workers) are kept (tests; an admin "reset" action).
  void reset() noexcept;

private:
  alignas(64) std::atomic<std::uint64_t> connections_open_{0};
  std::atomic<std::uint64_t> connections_total_{0};
  alignas(64) std::atomic<std::uint64_t> busy_{0};
  std::atomic<std::uint64_t> requests_total_{0};
  std::atomic<std::uint64_t> bytes_sent_{0};
  std::array<std::atomic<std::uint64_t>, 5> class_{};
  std::array<std::atomic<std::uint64_t>, tracked_statuses.size()> status_{};
  std::atomic<std::uint64_t> other_{0};
  alignas(64) std::atomic<std::uint64_t> workers_{0};
  std::atomic<std::int64_t> start_ns_{0};
  std::atomic<bool> draining_{false};
  std::atomic<const char*> adapter_{nullptr};
  std::atomic<std::size_t> adapter_len_{0};
  std::atomic<const WorkerBoard*> board_{nullptr};
};

}  // namespace csgi
