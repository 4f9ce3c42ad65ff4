// Worker recycling (see recycle.hpp).
#include "csgi/adapters/standalone/detail/process/recycle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <random>

namespace csgi::standalone::detail {

Recycler::Recycler(const ServerOptions& opt, Retire retire) : rss_limit_(opt.max_worker_rss), retire_(std::move(retire)) {
  if (opt.max_requests > 0) {
    std::uint64_t extra = 0;
    if (opt.max_requests_jitter > 0) {
      std::random_device rd;
      std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid()));
      extra = std::uniform_int_distribution<std::uint64_t>(0, opt.max_requests_jitter)(gen);
    }
    limit_ = opt.max_requests + extra;
  }
  if (rss_limit_ > 0) {
    statm_fd_ = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    long ps = ::sysconf(_SC_PAGESIZE);
    if (ps > 0) page_size_ = ps;
  }
}

Recycler::~Recycler() {
  if (statm_fd_ >= 0) ::close(statm_fd_);
}

std::uint64_t Recycler::resident_bytes() const noexcept {
  if (statm_fd_ < 0) return 0;
  // "size resident shared text lib data dt", in pages.
  char buf[128];
  ssize_t n = ::pread(statm_fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  const char* p = buf;
  const char* end = buf + n;
  while (p < end && *p != ' ') ++p;
  if (p < end) ++p;
  std::uint64_t pages = 0;
  if (std::from_chars(p, end, pages).ec != std::errc()) return 0;
  return pages * static_cast<std::uint64_t>(page_size_);
}

void Recycler::after_request() noexcept {
  std::uint64_t n = served_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (fired_.load(std::memory_order_relaxed)) return;
  if (limit_ > 0 && n >= limit_) {
    fire(WorkerBoard::Cause::max_requests,
         "answered " + std::to_string(n) + " requests (--max-requests: its limit is " + std::to_string(limit_) + ")");
    return;
  }
  if (rss_limit_ > 0) {
    std::uint64_t rss = resident_bytes();
    if (rss > rss_limit_)
      fire(WorkerBoard::Cause::memory, "uses " + std::to_string(rss >> 20) + " MiB of resident memory (--max-worker-memory " +
                                           std::to_string(rss_limit_ >> 20) + " MiB)");
  }
}

void Recycler::fire(WorkerBoard::Cause cause, const std::string& why) noexcept {
  if (fired_.exchange(true)) return;
  try {
    retire_(cause, why);
  } catch (...) {
  }
}

}  // namespace csgi::standalone::detail
