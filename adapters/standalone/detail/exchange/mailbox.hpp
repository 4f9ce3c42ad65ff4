#pragma once
// Where the app's threads post to an io thread (Mailbox).
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "csgi/core/io.hpp"

namespace csgi::standalone::detail {

/// Where the app's threads post to an io thread (a delayed response's Responder and Writer hold it, so it
/// outlives the io thread). Closed when the io thread goes: from then on a post is dropped and says so.
/// It also keeps the env's csgi.errors, which the app may use until it has answered.
///
/// What is posted waits in the mailbox's own queue, and the io thread is woken through an eventfd written
/// after the queue's lock is released; the io thread runs the queue in order. (asio::post wakes a thread
/// blocked in epoll while it holds the scheduler's lock, which the woken thread then waits for: on a
/// shared core, two more context switches for every response an app thread hands over.) Posts made before
/// the io thread has taken the queue cost no wake-up. Once the io thread may finish (finishing()), the
/// eventfd's wait, which would keep its io_context running, is cancelled and posts go through asio::post.
class Mailbox {
public:
 Mailbox(boost::asio::io_context& ioc, std::shared_ptr<ErrorStream> errors);
 ~Mailbox();
 Mailbox(const Mailbox&) = delete;
 Mailbox& operator=(const Mailbox&) = delete;

 /// Posts `f` (moved from only then) and returns true, or returns false once closed.
 template <class F>
 bool post(F& f) {
   std::unique_lock lock(mu_);
   if (!ioc_) return false;
   if (!waiting_) {
     boost::asio::post(*ioc_, std::move(f));
     return true;
   }
   queue_.push_back(std::make_unique<TaskOf<F>>(std::move(f)));
   if (signaled_) return true;
   signaled_ = true;
   lock.unlock();
   wake();
   return true;
  }
  bool on_io_thread();
  /// On the io thread, once nothing keeps it running but its connections: what waits is posted to the
  /// io_context, and so is everything from now on.
  void finishing();
  /// After the io thread's run() has returned, before its io_context goes.
  void close() noexcept;

 private:
  struct Task {
    virtual ~Task() = default;
    virtual void run() = 0;
  };
  template <class F>
  struct TaskOf final : Task {
    explicit TaskOf(F&& f) : f(std::move(f)) {}
    void run() override { f(); }
    F f;
  };
  using Tasks = std::vector<std::unique_ptr<Task>>;

  void wake() noexcept;
  void arm();
  void drain();

  std::mutex mu_;
  boost::asio::io_context* ioc_;
  std::shared_ptr<ErrorStream> errors_;
  Tasks queue_;
  bool signaled_ = false;  // the eventfd was written since the io thread last took the queue
  bool waiting_ = false;   // the io thread waits on the eventfd (else: asio::post)
  int efd_ = -1;           // written by posters; closed only with the mailbox
  std::optional<boost::asio::posix::stream_descriptor> wait_;  // a dup of efd_: the io thread's wait
};

}  // namespace csgi::standalone::detail
