#pragma once
// A queue from the server's threads to an asyncio event loop: the loop watches fd() (an eventfd, readable
// while something waits; written only when the loop is not already due to drain) and take()s in batches.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

namespace csgi::python {

template <class T>
class LoopQueue {
 public:
  LoopQueue() { reset(); }
  ~LoopQueue() {
    if (fd_ >= 0) ::close(fd_);
  }
  LoopQueue(const LoopQueue&) = delete;
  LoopQueue& operator=(const LoopQueue&) = delete;
  /// A new eventfd (in a forked child: the parent's is shared with it). Needs no lock: called before
  /// the process serves.
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    std::lock_guard lock(mu_);
    queue_.clear();
    signalled_ = false;
  }
  int fd() const noexcept { return fd_; }
  void push(std::shared_ptr<T> item) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(item));
    if (!signalled_) {
      signalled_ = true;
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
    }
  }
  std::vector<std::shared_ptr<T>> take() {
    std::uint64_t v = 0;
    [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
    std::lock_guard lock(mu_);
    signalled_ = false;
    std::vector<std::shared_ptr<T>> out(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::deque<std::shared_ptr<T>> queue_;
  bool signalled_ = false;
  int fd_ = -1;
};

}  // namespace csgi::python
