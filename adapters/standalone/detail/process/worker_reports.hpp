#pragma once
// What prefork workers report to their master besides a contained fault (master.cpp): that they listen
// with their app loaded (a pipe carrying the worker's pid; the master then tells systemd READY=1, an old
// master that this one is ready, or retires the workers a reload replaces), and how many requests they
// have served, summed in one counter in shared memory made before the fork (systemd's STATUS line).
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace csgi::standalone::detail {

class WorkerReports {
public:
  /// In the master, before the first fork.
  WorkerReports();
  ~WorkerReports();
  WorkerReports(const WorkerReports&) = delete;
  WorkerReports& operator=(const WorkerReports&) = delete;

  /// In a worker right after its fork: drops the master's end.
  void in_worker() noexcept;
  /// In a worker that listens: its pid to the master.
  void ready() noexcept;
  /// In a worker: adds what `served_total` (its own count so far) grew by since the last call.
  void publish(std::uint64_t served_total) noexcept;
  /// In the master: the pids of the workers that became ready since the last call.
  std::vector<pid_t> take_ready();
  /// The requests every worker has published.
  std::uint64_t served() const noexcept;

private:
  int fds_[2] = {-1, -1};
  std::atomic<std::uint64_t>* served_ = nullptr;  // MAP_SHARED
  std::uint64_t published_ = 0;                   // this worker's share so far
};

/// Runs `fn` on `ioc` every `interval` until cancel() or destruction (which must come before ioc's).
class Ticker {
public:
  Ticker(boost::asio::io_context& ioc, std::chrono::milliseconds interval, std::function<void()> fn);
  void cancel();

private:
  void arm();
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  std::function<void()> fn_;
  bool cancelled_ = false;
};

}  // namespace csgi::standalone::detail
