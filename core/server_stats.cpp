#include "csgi/core/server_stats.hpp"

namespace csgi {

namespace {
std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ServerStats::ServerStats() noexcept { start_ns_.store(now_ns(), std::memory_order_relaxed); }

void ServerStats::attach_adapter(std::string_view name) noexcept {
  adapter_len_.store(name.size(), std::memory_order_relaxed);
  adapter_.store(name.data() ? name.data() : "", std::memory_order_release);
}

void ServerStats::record_response(int status, std::uint64_t bytes_sent) noexcept {
  requests_total_.fetch_add(1, std::memory_order_relaxed);
  if (bytes_sent) bytes_sent_.fetch_add(bytes_sent, std::memory_order_relaxed);
  if (status < 100 || status > 599) {
    other_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  class_[static_cast<std::size_t>(status / 100 - 1)].fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < tracked_statuses.size(); ++i) {
    if (tracked_statuses[i] == status) {
      status_[i].fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

ServerStats::Snapshot ServerStats::snapshot() const noexcept {
  Snapshot s;
  auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  std::int64_t start = start_ns_.load(std::memory_order_relaxed);
  s.start_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(start)));
  s.uptime_seconds = static_cast<double>(now_ns() - start) / 1e9;
  if (s.uptime_seconds < 0) s.uptime_seconds = 0;
  s.workers = ld(workers_);
  s.workers_busy = ld(busy_);
  s.connections_open = ld(connections_open_);
  s.connections_total = ld(connections_total_);
  s.requests_total = ld(requests_total_);
  s.bytes_sent = ld(bytes_sent_);
  for (std::size_t i = 0; i < class_.size(); ++i) s.status_class[i] = ld(class_[i]);
  for (std::size_t i = 0; i < status_.size(); ++i) s.status[i] = ld(status_[i]);
  s.status_other = ld(other_);
  const char* a = adapter_.load(std::memory_order_acquire);
  s.draining = draining();
  s.adapter_attached = a != nullptr;
  if (a) s.adapter = std::string_view(a, adapter_len_.load(std::memory_order_relaxed));
  return s;
}

void ServerStats::reset() noexcept {
  // Gauges (open connections, busy workers, workers) stay: in-flight work still decrements them.
  for (auto* a : {&connections_total_, &requests_total_, &bytes_sent_, &other_})
    a->store(0, std::memory_order_relaxed);
  for (auto& a : class_) a.store(0, std::memory_order_relaxed);
  for (auto& a : status_) a.store(0, std::memory_order_relaxed);
  start_ns_.store(now_ns(), std::memory_order_relaxed);
}

}  // namespace csgi
