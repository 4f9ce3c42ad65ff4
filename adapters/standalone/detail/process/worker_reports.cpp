#include "csgi/adapters/standalone/detail/process/worker_reports.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace csgi::standalone::detail {

WorkerReports::WorkerReports() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
  void* p = ::mmap(nullptr, sizeof(std::atomic<std::uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) served_ = new (p) std::atomic<std::uint64_t>(0);
}

WorkerReports::~WorkerReports() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
  if (served_) ::munmap(served_, sizeof(std::atomic<std::uint64_t>));
}

void WorkerReports::in_worker() noexcept {
  if (fds_[0] >= 0) ::close(fds_[0]);
  fds_[0] = -1;
}

void WorkerReports::ready() noexcept {
  if (fds_[1] < 0) return;
  pid_t me = ::getpid();
  ssize_t w = ::write(fds_[1], &me, sizeof me);  // a pid is less than PIPE_BUF: one atomic write
  (void)w;
}

void WorkerReports::publish(std::uint64_t served_total) noexcept {
  if (!served_ || served_total <= published_) return;
  served_->fetch_add(served_total - published_, std::memory_order_relaxed);
  published_ = served_total;
}

std::vector<pid_t> WorkerReports::take_ready() {
  std::vector<pid_t> out;
  for (pid_t p = 0; fds_[0] >= 0 && ::read(fds_[0], &p, sizeof p) == sizeof p;) out.push_back(p);
  return out;
}

std::uint64_t WorkerReports::served() const noexcept {
  return served_ ? served_->load(std::memory_order_relaxed) : 0;
}

Ticker::Ticker(boost::asio::io_context& ioc, std::chrono::milliseconds interval, std::function<void()> fn)
    : timer_(ioc), interval_(interval), fn_(std::move(fn)) {
  arm();
}

void Ticker::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || cancelled_) return;
    try {
      fn_();
    } catch (...) {
    }
    arm();
  });
}

void Ticker::cancel() {
  cancelled_ = true;
  timer_.cancel();
}

}  // namespace csgi::standalone::detail
