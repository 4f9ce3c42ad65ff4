#pragma once
/// An awaitable whose result is ready when it is made: what receive() and send() of the ASGI bridges
/// return on their fast paths instead of a coroutine. `await` on it takes one am_send call and never
/// suspends the awaiting task (no frame, no StopIteration object on CPython ≥ 3.10).
#include <Python.h>

namespace csgi::python {

/// Registers the type (once per module); false with a Python error set on failure.
bool init_ready_type(PyObject* module);
/// A new reference to an awaitable that returns `value` (borrowed; None when null).
PyObject* ready(PyObject* value);
/// A new reference to the shared awaitable that returns None.
PyObject* ready_none();

}  // namespace csgi::python
