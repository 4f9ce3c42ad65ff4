#pragma once
// The app executor of the standalone server (internal, not installed): with --app-threads N the app runs
// on N threads that take requests from one shared queue, so a request waits only while all N are busy
// (work-conserving). The io threads post jobs and keep reading, writing, timing out and accepting.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "csgi/core/worker_board.hpp"

namespace csgi::standalone::detail {

/// A call from the app's pool thread (--app-threads) to the connection's io thread: an interim response
/// or csgix.io. The app's thread waits on `cv` until `done`; the io thread does the call with `mu` held,
/// unless the app's thread gave up waiting (`abandoned`: its io thread stopped), in which case the
/// pointers into the app's stack are not touched.
struct PoolCall {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
};

class Mailbox;

/// From another thread (the app's): runs `f` on the io thread behind `mailbox` and waits for its result
/// (a PoolCall); false when that thread is gone (`exited`: it has stopped running its handlers) or `f`
/// threw.
bool call_on_io(Mailbox& mailbox, const std::atomic<bool>& exited, const std::function<bool()>& f);

class AppPool {
public:
  using Job = std::function<void()>;
  /// With `board`, the queue's length and the busy threads are kept in that slot's gauges. `on_start`
  /// runs first on each thread, with its index (0…threads-1).
  explicit AppPool(unsigned threads, WorkerBoard::Slot* board = nullptr, std::function<void(unsigned)> on_start = {});
  ~AppPool() { shutdown(); }
  AppPool(const AppPool&) = delete;
  AppPool& operator=(const AppPool&) = delete;
  /// Queues `job` (any thread). A job must catch its own exceptions. False once shut down.
  bool post(Job job);
  /// Waits for the jobs that are running, drops those not started (destroyed on this thread), and
  /// joins the threads. Called once the io threads have stopped.
  void shutdown() noexcept;

private:
  void work(unsigned index);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  WorkerBoard::Slot* board_;
  std::function<void(unsigned)> on_start_;
};

}  // namespace csgi::standalone::detail
