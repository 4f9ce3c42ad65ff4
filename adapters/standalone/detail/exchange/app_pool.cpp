// The app executor of the standalone server (see app_pool.hpp).
#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"

#include <chrono>
#include <memory>

#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"

namespace csgi::standalone::detail {

namespace {
constexpr std::chrono::milliseconds exit_check{100};  // how often a waiting caller looks whether the io thread has gone
}  // namespace

bool call_on_io(Mailbox& mailbox, const std::atomic<bool>& exited, const std::function<bool()>& f) {
  auto c = std::make_shared<PoolCall>();
  bool result = false;
  auto call = [c, &f, &result] {
    std::lock_guard lock(c->mu);
    if (c->abandoned) return;
    try {
      result = f();
    } catch (...) {
    }
    c->done = true;
    c->cv.notify_all();
  };
  if (!mailbox.post(call)) return false;
  std::unique_lock lock(c->mu);
  while (!c->cv.wait_for(lock, exit_check, [&] { return c->done; })) {
    if (exited.load(std::memory_order_acquire)) {
      c->abandoned = true;
      return false;
    }
  }
  return result;
}

AppPool::AppPool(unsigned threads, WorkerBoard::Slot* board, std::function<void(unsigned)> on_start)
    : board_(board), on_start_(std::move(on_start)) {
  try {
    threads_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this, i] { work(i); });
  } catch (...) {
    shutdown();  // the threads made so far
    throw;
  }
}

bool AppPool::post(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(job));
    if (board_) board_->app_queued.fetch_add(1, std::memory_order_relaxed);
  }
  cv_.notify_one();
  return true;
}

void AppPool::shutdown() noexcept {
  std::deque<Job> left;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    left.swap(queue_);
    if (board_) board_->app_queued.fetch_sub(left.size(), std::memory_order_relaxed);
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  left.clear();
}

void AppPool::work(unsigned index) {
  if (on_start_) on_start_(index);
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      if (board_) {
        board_->app_queued.fetch_sub(1, std::memory_order_relaxed);
        board_->app_busy.fetch_add(1, std::memory_order_relaxed);
      }
    }
    try {
      job();
    } catch (...) {
      // A job catches what the app throws; this is the last line of defence (out of memory).
    }
    if (board_) board_->app_busy.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace csgi::standalone::detail
