#include "csgi/adapters/standalone/detail/exchange/inline_watch.hpp"

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
  if (switches > switches_) w_->move(held, "waited");
  else if (cpu_us - cpu_us_ > kLimit.count()) w_->move(held, "computed");
}

void InlineWatch::move(std::chrono::microseconds held, const char* why) noexcept {
  if (!inline_.exchange(false)) return;
  try {
    std::string pool = std::to_string(pool_threads_);
    log_.write("csgi: info: an app call " + std::string(why) + " on an io thread for " +
               std::to_string(held.count() / 1000) + "." + std::to_string(held.count() % 1000 / 100) +
               " ms, so the app runs on the pool of " + pool + " app threads from now on, as suits an app that "
               "blocks or streams (--app-threads " + pool + " puts it there from the start, --app-threads 0 "
               "keeps it on the io threads)");
  } catch (...) {
  }
}

}  // namespace csgi::standalone::detail
