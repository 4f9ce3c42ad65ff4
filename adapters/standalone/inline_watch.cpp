#include "csgi/adapters/standalone/inline_watch.hpp"

#include <sys/resource.h>
#include <time.h>

#include <string>

#include "csgi/core/io.hpp"

namespace csgi::standalone::detail {

namespace {
/// The calling thread's voluntary context switches (getrusage) and CPU time in µs (its CPU-time clock:
/// getrusage's times of a running thread are only brought up to date at a scheduler tick); false where
/// either fails.
bool thread_usage(long& switches, std::int64_t& cpu_us) noexcept {
  struct rusage u {};
  timespec ts{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0 || ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return false;
  switches = u.ru_nvcsw;
  cpu_us = static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  return true;
}
}  // namespace

InlineWatch::Call::Call(InlineWatch* w) noexcept : w_(w) {
  if (!w_) return;
  start_ = std::chrono::steady_clock::now();
  if (w_->sampling_.load(std::memory_order_relaxed)) sampled_ = thread_usage(switches_, cpu_us_);
}

InlineWatch::Call::~Call() {
  if (!w_) return;
  auto held = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_);
  if (held <= kLimit || !w_->inline_now()) return;
  if (!sampled_) {  // the first slow call (or the first since this thread sampled): measure from now on
    w_->sampling_.store(true, std::memory_order_relaxed);
    return;
  }
  long switches = 0;
  std::int64_t cpu_us = 0;
  if (!thread_usage(switches, cpu_us)) return;
  if (switches > switches_) w_->move(held, "it waited");
  else if (cpu_us - cpu_us_ > kLimit.count()) w_->move(held, "it computed");
}

void InlineWatch::move(std::chrono::microseconds held, const char* why) noexcept {
  if (!inline_.exchange(false)) return;
  try {
    log_.write("csgi: an app call held an io thread for " + std::to_string(held.count() / 1000) + "." +
               std::to_string(held.count() % 1000 / 100) + " ms (" + why + "): the app runs on the pool of " +
               std::to_string(pool_threads_) + " app threads from now on");
  } catch (...) {
  }
}

}  // namespace csgi::standalone::detail
