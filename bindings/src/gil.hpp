#pragma once
/// GIL handling that works in uWSGI sub-interpreters (RESEARCH §7).
///
/// PyGILState_* always binds a thread to the MAIN interpreter, so code called from a sub-interpreter that
/// re-enters Python through it runs in the wrong interpreter. Instead:
///   - ReleaseGil: PyEval_SaveThread() and remember the saved thread state in a thread-local stack;
///   - AcquireGil(interp): on a thread that released the GIL for `interp`, PyEval_RestoreThread() with
///     that saved state; on any other thread, a thread state of our own for (thread, interp); a no-op
///     when this thread already holds the GIL.
#include <Python.h>

namespace csgi::python {

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
  PyThreadState* ts_ = nullptr;
  ReleaseGil* reentered_ = nullptr;  // the ReleaseGil region this acquire re-entered
  bool ok_ = false;
};

/// True when the calling thread holds the GIL.
bool this_thread_holds_gil() noexcept;

}  // namespace csgi::python
