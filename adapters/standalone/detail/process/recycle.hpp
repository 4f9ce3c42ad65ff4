#pragma once
// Worker recycling in a prefork worker (internal, not installed): counts the requests the worker has
// answered and watches its resident memory after each; past --max-requests (plus this worker's share of
// --max-requests-jitter) or --max-worker-memory it calls `retire` once, which tells the master (a
// replacement starts at once) and stops the worker gracefully.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/worker_board.hpp"

namespace csgi::standalone::detail {

class Recycler {
public:
  using Retire = std::function<void(WorkerBoard::Cause cause, const std::string& why)>;
  /// Draws this worker's request limit: max_requests + a random 0…max_requests_jitter (gunicorn's rule).
  Recycler(const ServerOptions& opt, Retire retire);
  ~Recycler();
  Recycler(const Recycler&) = delete;
  Recycler& operator=(const Recycler&) = delete;

  /// True when a limit is set (else the server need not call after_request()).
  bool active() const noexcept { return limit_ > 0 || rss_limit_ > 0; }
  /// After each answered request, on any io thread.
  void after_request() noexcept;
  std::uint64_t request_limit() const noexcept { return limit_; }
  /// This process's resident set size in bytes (0 when unknown).
  std::uint64_t resident_bytes() const noexcept;

private:
  void fire(WorkerBoard::Cause cause, const std::string& why) noexcept;

  std::uint64_t limit_ = 0;
  std::uint64_t rss_limit_ = 0;
  int statm_fd_ = -1;
  long page_size_ = 4096;
  std::atomic<std::uint64_t> served_{0};
  std::atomic<bool> fired_{false};
  Retire retire_;
};

}  // namespace csgi::standalone::detail
