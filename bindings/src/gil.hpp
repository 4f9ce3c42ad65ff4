#pragma once
/// GIL handling that works in uWSGI sub-interpreters (RESEARCH §7).
///
/// PyGILState_* always binds a thread to the MAIN interpreter, so code called from a sub-interpreter that
/// re-enters Python through it runs in the wrong interpreter (or deadlocks). Instead:
///   - ReleaseGil: PyEval_SaveThread() and remember the saved thread state in a thread-local stack;
///   - AcquireGil(interp): on a thread that released the GIL for `interp`, PyEval_RestoreThread() with
///     that saved state; on any other thread, a thread state of our own for (thread, interp); a no-op
///     when this thread already holds the GIL (with a thread state of `interp`; another interpreter's is
///     swapped for ours for the scope).
///
/// Whether this thread holds the GIL is known from these guards themselves (and GilHeldByCaller), never
/// from PyThreadState::thread_id alone: a host may create thread states on one thread and run them on
/// another (uWSGI makes every worker thread's sub-interpreter thread state on the main thread), so
/// thread_id does not name the thread running a state. Only where no guard on this thread says anything
/// (Python called straight into C++ code without GilHeldByCaller) is thread_id consulted.
#include <Python.h>

namespace csgi::python {

enum class GilKnown : unsigned char { unknown, held, released };

class ReleaseGil {
public:
  ReleaseGil() noexcept;
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;
  /// The thread state saved by the release (serve.cpp swaps it back in around a fork()).
  PyThreadState*& saved_state() noexcept { return saved_; }

private:
  friend class AcquireGil;
  PyThreadState* saved_;
  ReleaseGil* prev_;
  GilKnown prev_known_;
};

class AcquireGil {
public:
  explicit AcquireGil(PyInterpreterState* interp) noexcept;
  ~AcquireGil();
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;
  /// False when the interpreter is gone (process exiting): do not touch Python then.
  explicit operator bool() const noexcept { return ok_; }

private:
  PyThreadState* ts_ = nullptr;       // the state this acquire restored (it saves it again at the end)
  PyThreadState* swapped_ = nullptr;  // the caller's state, swapped out for one of `interp`
  ReleaseGil* reentered_ = nullptr;   // the ReleaseGil region this acquire re-entered
  GilKnown prev_known_ = GilKnown::unknown;
  bool ok_ = false;
};

/// Marks a scope entered from Python with the GIL held (bound methods, deallocators), so that an
/// AcquireGil inside it is a no-op without guessing from thread ids. Must only be used where the calling
/// thread certainly holds the GIL.
class GilHeldByCaller {
public:
  GilHeldByCaller() noexcept;
  ~GilHeldByCaller();
  GilHeldByCaller(const GilHeldByCaller&) = delete;
  GilHeldByCaller& operator=(const GilHeldByCaller&) = delete;

private:
  GilKnown prev_known_;
};

/// True when the calling thread holds the GIL.
bool this_thread_holds_gil() noexcept;

}  // namespace csgi::python
