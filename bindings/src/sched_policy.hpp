#pragma once
/// SCHED_BATCH for the threads of the ASGI host, which hand every request to one another: the io thread
/// queues it for the event loop's thread, the loop answers it through the io thread's mailbox, and a `def`
/// endpoint goes to one of anyio's worker threads and back. Under SCHED_OTHER a woken thread preempts the
/// one that woke it (the loop, in the middle of posting a pass's responses, while it holds the io
/// context's lock), which then blocks it in turn: several context switches per hand-off where threads
/// share a core. A SCHED_BATCH thread that is woken waits for the running one to block or for the tick
/// instead (sched(7)); its share of the CPU and its nice value stay as they were. A thread under another
/// policy (a real-time or idle one the user chose) is left as it is. Threads inherit the policy of the
/// thread that starts them, and forked processes that of the thread that forks.
#include <sched.h>

namespace csgi::python {

/// Puts the calling thread under SCHED_BATCH when it runs under SCHED_OTHER; true when it did.
inline bool batch_this_thread() noexcept {
  if (::sched_getscheduler(0) != SCHED_OTHER) return false;
  sched_param p{};
  return ::sched_setscheduler(0, SCHED_BATCH, &p) == 0;
}

/// SCHED_BATCH for the calling thread, and for the threads and processes it starts, while in scope; the
/// thread's SCHED_OTHER back at the end.
class BatchScheduling {
public:
  BatchScheduling() noexcept : changed_(batch_this_thread()) {}
  ~BatchScheduling() {
    if (!changed_) return;
    sched_param p{};
    ::sched_setscheduler(0, SCHED_OTHER, &p);
  }
  BatchScheduling(const BatchScheduling&) = delete;
  BatchScheduling& operator=(const BatchScheduling&) = delete;

private:
  bool changed_;
};

}  // namespace csgi::python
