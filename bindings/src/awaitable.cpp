// The ready awaitable (awaitable.hpp): __await__ returns itself, and as an iterator it ends at once with
// its value (am_send on CPython ≥ 3.10, __next__/send()/throw() for callers that drive it by hand).
#include "awaitable.hpp"

namespace csgi::python {
namespace {

struct ReadyObject {
  PyObject_HEAD
  PyObject* value;
};

PyObject* g_none_ready = nullptr;

void ready_dealloc(PyObject* self) {
  Py_XDECREF(reinterpret_cast<ReadyObject*>(self)->value);
  Py_TYPE(self)->tp_free(self);
}

PyObject* ready_await(PyObject* self) {
  Py_INCREF(self);
  return self;
}

PySendResult ready_am_send(PyObject* self, PyObject*, PyObject** result) {
  PyObject* v = reinterpret_cast<ReadyObject*>(self)->value;
  *result = v ? v : Py_None;
  Py_INCREF(*result);
  return PYGEN_RETURN;
}

/// The end of the iteration: StopIteration carrying the value (none needed for None).
PyObject* ready_next(PyObject* self) {
  PyObject* v = reinterpret_cast<ReadyObject*>(self)->value;
  if (v && v != Py_None) {
    PyObject* stop = PyObject_CallOneArg(PyExc_StopIteration, v);
    if (stop) {
      PyErr_SetObject(PyExc_StopIteration, stop);
      Py_DECREF(stop);
    }
  }
  return nullptr;
}

PyObject* ready_send(PyObject* self, PyObject*) { return ready_next(self); }

PyObject* ready_throw(PyObject*, PyObject* args) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  if (!PyArg_UnpackTuple(args, "throw", 1, 3, &type, &value, &tb)) return nullptr;
  if (PyExceptionInstance_Check(type))
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(type)), type);
  else
    PyErr_SetObject(type, value ? value : Py_None);
  return nullptr;
}

PyObject* ready_close(PyObject*, PyObject*) { Py_RETURN_NONE; }

PyMethodDef ready_methods[] = {
    {"send", ready_send, METH_O, nullptr},
    {"throw", ready_throw, METH_VARARGS, nullptr},
    {"close", ready_close, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyAsyncMethods ready_async = {ready_await, nullptr, nullptr, ready_am_send};

PyTypeObject ready_type = [] {
  PyTypeObject t{};  // zeroed; PyType_Ready sets the rest
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "csgi._csgi.Ready";
  t.tp_basicsize = sizeof(ReadyObject);
  t.tp_dealloc = ready_dealloc;
  t.tp_as_async = &ready_async;
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "An awaitable whose result is ready: what csgi's ASGI receive()/send() return when they need not wait.";
  t.tp_iter = PyObject_SelfIter;
  t.tp_iternext = ready_next;
  t.tp_methods = ready_methods;
  return t;
}();

}  // namespace

bool init_ready_type(PyObject* module) {
  if (g_none_ready) return true;
  if (PyType_Ready(&ready_type) < 0) return false;
  g_none_ready = ready(Py_None);
  if (!g_none_ready) return false;
  Py_INCREF(&ready_type);
  return PyModule_AddObject(module, "Ready", reinterpret_cast<PyObject*>(&ready_type)) == 0;
}

PyObject* ready(PyObject* value) {
  auto* r = PyObject_New(ReadyObject, &ready_type);
  if (!r) return nullptr;
  r->value = value && value != Py_None ? Py_NewRef(value) : nullptr;
  return reinterpret_cast<PyObject*>(r);
}

PyObject* ready_none() { return Py_NewRef(g_none_ready); }

}  // namespace csgi::python
