#include "gil.hpp"

#include <utility>
#include <vector>

namespace csgi::python {
namespace {
thread_local ReleaseGil* t_released = nullptr;
// What the innermost guard on this thread says about the GIL (see gil.hpp).
thread_local GilKnown t_known = GilKnown::unknown;

// Thread states this library created for (this thread, interpreter). Kept for the thread's life: they are
// needed for every later call from the same thread, and deleting them at thread exit would need the GIL
// of an interpreter that may be finalising.
thread_local std::vector<std::pair<PyInterpreterState*, PyThreadState*>> t_own;

PyThreadState* own_state(PyInterpreterState* interp) {
  for (auto& [i, ts] : t_own)
    if (i == interp) return ts;
  PyThreadState* ts = PyThreadState_New(interp);
  t_own.emplace_back(interp, ts);
  return ts;
}
}  // namespace

bool this_thread_holds_gil() noexcept {
  if (t_known != GilKnown::unknown) return t_known == GilKnown::held;
  // No guard of ours on this thread: Python called straight in (GIL held), or a thread that never ran
  // Python. In 3.11 the "current" thread state is the one holding the GIL, whatever thread runs it; its
  // thread_id is the thread that created it, which is the running one unless a host moved it.
  PyThreadState* cur = _PyThreadState_UncheckedGet();
  return cur && cur->thread_id == PyThread_get_thread_ident();
}

ReleaseGil::ReleaseGil() noexcept : prev_(t_released), prev_known_(t_known) {
  saved_ = PyEval_SaveThread();
  t_released = this;
  t_known = GilKnown::released;
}

ReleaseGil::~ReleaseGil() {
  PyEval_RestoreThread(saved_);
  t_released = prev_;
  t_known = prev_known_;
}

AcquireGil::AcquireGil(PyInterpreterState* interp) noexcept {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  ok_ = true;
  prev_known_ = t_known;
  if (this_thread_holds_gil()) {
    // Already held (an enclosing AcquireGil, or Python called us): run in `interp` all the same.
    PyThreadState* cur = PyThreadState_Get();
    if (cur->interp != interp) swapped_ = PyThreadState_Swap(own_state(interp));
  } else {
    if (t_released && PyThreadState_GetInterpreter(t_released->saved_) == interp) {
      reentered_ = t_released;
      t_released = t_released->prev_;
      ts_ = reentered_->saved_;
    } else {
      ts_ = own_state(interp);
    }
    PyEval_RestoreThread(ts_);
  }
  t_known = GilKnown::held;
}

AcquireGil::~AcquireGil() {
  if (!ok_) return;
  if (swapped_) PyThreadState_Swap(swapped_);
  if (ts_) {
    PyEval_SaveThread();
    if (reentered_) t_released = reentered_;
  }
  t_known = prev_known_;
}

GilHeldByCaller::GilHeldByCaller() noexcept : prev_known_(t_known) { t_known = GilKnown::held; }

GilHeldByCaller::~GilHeldByCaller() { t_known = prev_known_; }

}  // namespace csgi::python
