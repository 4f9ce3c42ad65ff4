#pragma once
// Crash containment and the request timeout in prefork workers (fault.cpp, docs/reliability.md §4):
// each io thread and app pool thread of a worker has a slot that says which connection's app code it is
// running, read by the SIGSEGV/SIGBUS/SIGFPE/SIGILL handler on that thread and by the request timeout's
// watchdog.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "csgi/core/worker_board.hpp"

namespace csgi::standalone::detail {

class Transport;
class IoThread;
struct Shared;

/// One thread's slot. Lock-free atomics only: the handler may read them at any instant.
struct FaultSlot {
  std::atomic<long> tid{0};            // the io thread's kernel thread id
  std::atomic<Transport*> conn{nullptr};  // the connection whose app code runs now, or null
  std::atomic<std::uint64_t> calls{0};  // app calls begun on this thread (the request timeout's watchdog)
};

/// The calling thread (an io thread or an app pool thread of a prefork worker) takes its fault slot and
/// an alternate signal stack for the fault handler, which it holds until it ends.
void take_fault_slot(FaultSlot& slot);

/// Sets the slot around a call into the app (nests); nothing when the thread has no slot.
class AppScope {
public:
  AppScope(FaultSlot* slot, Transport* c) noexcept : slot_(slot) {
    if (!slot_) return;
    prev_ = slot_->conn.load(std::memory_order_relaxed);
    if (!prev_) slot_->calls.store(slot_->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    slot_->conn.store(c, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~AppScope() {
    if (!slot_) return;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    slot_->conn.store(prev_, std::memory_order_relaxed);
  }
  AppScope(const AppScope&) = delete;
  AppScope& operator=(const AppScope&) = delete;

private:
  FaultSlot* slot_;
  Transport* prev_ = nullptr;
};

/// The fault slot of this thread when it is an app pool thread of a prefork worker (set as it starts).
inline thread_local FaultSlot* pool_fault_slot = nullptr;

/// After a fault or a request timeout in `c`'s app call on a pool thread (frozen for good): has the
/// connection's io thread answer `status` as the app's response, then set `answered`. Returns "METHOD
/// URI" for the log.
std::string abandon_pooled(Transport& c, int status, std::atomic<bool>& answered) noexcept;

/// After a fault in `c`'s app code, with the faulting io thread frozen (never to run again): answers
/// `status` (500 for a fault, 504 for a request timeout) when nothing of the response went out yet,
/// half-closes the socket, and detaches the connection from its thread so that nothing touches it
/// again. Returns "METHOD URI" of its request for the log.
std::string abandon_faulted(Transport& c, int status = 500) noexcept;

/// In a worker, before its app pool starts: one slot per io thread (given to each), then one per app
/// thread. The slots live as long as the process.
void make_fault_slots(const std::vector<std::unique_ptr<IoThread>>& threads, unsigned app_threads);

/// The slot of app pool thread `i` (after make_fault_slots), which takes it as it starts.
FaultSlot& app_thread_fault_slot(unsigned io_threads, unsigned i) noexcept;

/// In a worker, before its io threads start: the rescue thread, the fault handlers, and with
/// --request-timeout the watchdog. `notify_master` tells the master the worker is leaving (the rescue
/// thread calls it first).
void arm_fault_containment(Shared& sh, const std::vector<std::unique_ptr<IoThread>>& threads,
                           std::function<void(WorkerBoard::Cause)> notify_master);

/// Done serving: a fault from here on (teardown) is not contained.
void disarm_fault_containment() noexcept;

}  // namespace csgi::standalone::detail
