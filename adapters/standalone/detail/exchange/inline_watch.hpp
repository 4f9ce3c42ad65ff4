#pragma once
// Where the app runs under ServerOptions::app_inline_first (internal, not installed): on the io thread, as
// with --app-threads 0, until one call holds that thread too long; from then on on the app pool, for good.
//
// Each inline call is timed (the monotonic clock: a few ns). Once a call has taken over the limit
// (2 ms), each later call also reads the thread's usage (its voluntary context switches from
// getrusage(RUSAGE_THREAD), its CPU time from its CPU-time clock: two system calls, under a microsecond
// together); a call over the limit during which the thread
// waited (a voluntary context switch: the app blocked) or computed for over the limit moves the app. A
// thread that the kernel preempted (a loaded machine) or a first call's set-up does not move it.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace csgi {
class ErrorStream;
}

namespace csgi::standalone::detail {

class InlineWatch {
public:
  static constexpr std::chrono::microseconds kLimit{2000};

  /// `log` gets one line when the app moves to the pool of `pool_threads` threads.
  InlineWatch(ErrorStream& log, unsigned pool_threads) noexcept : log_(log), pool_threads_(pool_threads) {}
  InlineWatch(const InlineWatch&) = delete;
  InlineWatch& operator=(const InlineWatch&) = delete;

  /// True while the app runs on the io threads.
  bool inline_now() const noexcept { return inline_.load(std::memory_order_relaxed); }

  /// Times one inline call of the app, from construction to destruction (on the calling io thread).
  class Call {
  public:
    explicit Call(InlineWatch* w) noexcept;
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

  private:
    InlineWatch* w_;
    std::chrono::steady_clock::time_point start_;
    bool sampled_ = false;
    long switches_ = 0;           // voluntary context switches of the thread at the start
    std::int64_t cpu_us_ = 0;     // its CPU time at the start
  };

private:
  void move(std::chrono::microseconds held, const char* why) noexcept;
  ErrorStream& log_;
  unsigned pool_threads_;
  std::atomic<bool> inline_{true};
  std::atomic<bool> sampling_{false};  // a call has taken over the limit: each call reads the usage
};

}  // namespace csgi::standalone::detail
