#include "gil.hpp"

#include <utility>
#include <vector>

namespace csgi::python {
namespace {
thread_local ReleaseGil* t_released = nullptr;

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
  // In 3.11 the "current" thread state is the one holding the GIL, whatever interpreter it belongs to.
  PyThreadState* cur = _PyThreadState_UncheckedGet();
  return cur && cur->thread_id == PyThread_get_thread_ident();
}

ReleaseGil::ReleaseGil() noexcept : prev_(t_released) {
  saved_ = PyEval_SaveThread();
  t_released = this;
}

ReleaseGil::~ReleaseGil() {
  t_released = prev_;
  PyEval_RestoreThread(saved_);
}

AcquireGil::AcquireGil(PyInterpreterState* interp) noexcept {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  ok_ = true;
  if (this_thread_holds_gil()) return;
  if (t_released && PyThreadState_GetInterpreter(t_released->saved_) == interp) {
    reentered_ = t_released;
    t_released = t_released->prev_;
    ts_ = reentered_->saved_;
  } else {
    ts_ = own_state(interp);
  }
  PyEval_RestoreThread(ts_);
}

AcquireGil::~AcquireGil() {
  if (!ts_) return;
  PyEval_SaveThread();
  if (reentered_) t_released = reentered_;
}

}  // namespace csgi::python
