#pragma once
/// Shared pieces of the Python bindings: latin-1 conversions (PEP 3333 "native strings" carry bytes as
/// code points U+0000…U+00FF) and the bound App type.
#include <pybind11/pybind11.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"

namespace csgi::python {
namespace py = pybind11;

/// How many env entries the environ and scope sources (WsgiEnviron, AsgiScope) have made in this
/// process: for tests, that an entry an app never reads is never made.
inline std::atomic<std::uint64_t> env_conversions{0};
inline void count_env_conversion() noexcept { env_conversions.fetch_add(1, std::memory_order_relaxed); }

/// Thrown when a Python error is set and should propagate as it is. Used instead of
/// py::error_already_set, whose destructor (pybind11 2.10) takes the GIL through PyGILState: that
/// deadlocks in a sub-interpreter (uWSGI mounts). A module-local translator leaves the error in place.
struct PythonErrorSet {};
[[noreturn]] inline void throw_python_error() { throw PythonErrorSet{}; }

/// The bytes of a str whose characters are all ≤ U+00FF, without copying (CPython stores such strings
/// one byte per character, which is exactly their latin-1 encoding). False for wider strings.
inline bool latin1_view(PyObject* s, std::string_view& out) noexcept {
  if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) return false;
  out = {reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(s)), static_cast<std::size_t>(PyUnicode_GET_LENGTH(s))};
  return true;
}

/// A new str holding `bytes` as latin-1 code points (never fails for valid memory).
inline PyObject* latin1_str(std::string_view bytes) noexcept {
  return PyUnicode_DecodeLatin1(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), nullptr);
}

/// The latin-1 bytes of a str, or a ValueError naming `what`.
std::string_view latin1_or_throw(PyObject* s, const char* what);

/// The traceback of the Python error being handled (fetched and cleared), as text.
std::string take_python_error_text();

/// Sets the current Python error from the C++ exception being handled, as pybind11's dispatcher would
/// (PythonErrorSet leaves the error in place; py::error_already_set is restored; others are translated).
void set_python_error() noexcept;

/// The tp_call slots written by hand (csgi.App and start_response: the per-request calls of every WSGI
/// host, without pybind11's argument dispatch) share this: the C++ object of the pybind11 instance `self`,
/// f(object) returning a new reference, and no C++ exception crossing into Python.
template <class T, class F>
PyObject* call_on_instance(PyObject* self, F&& f) noexcept {
  try {
    T* obj = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder().template value_ptr<T>();
    if (!obj) {
      PyErr_Format(PyExc_TypeError, "%s was not initialised", Py_TYPE(self)->tp_name);
      return nullptr;
    }
    return f(*obj);
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// csgi.App: a csgi app seen from Python. Calling it is a WSGI call (to_wsgi.cpp); asgi_call answers an
/// ASGI http scope (to_asgi.cpp).
class AppHandle {
public:
  explicit AppHandle(App app) : app_(std::move(app)) {}
  ~AppHandle();
  const App& app() const noexcept { return app_; }
  /// PEP 3333: app(environ, start_response) → iterable.
  py::object call(py::handle environ, py::handle start_response);
  /// ASGI: the app's answer to an http scope, (status, [(name, value) bytes pairs], body), the body bytes
  /// or an iterator of chunks; `body` is the request body (bytes, or an object with read()), or None:
  /// then the app runs only when the scope's framing says there is no body, else None is returned.
  py::object asgi_call(PyObject* scope, PyObject* body);
  /// "NNN Reason" for a status, created once per app handle.
  PyObject* status_line(int status);
  /// A new reference to the (name, value) tuple of a response header. The last kHeaderCache distinct
  /// headers are kept (responses repeat most of theirs); needs the GIL.
  PyObject* header_tuple(std::string_view name, std::string_view value);

private:
  static constexpr std::size_t kHeaderCache = 32;
  struct CachedHeader {
    std::string name, value;
    PyObject* tuple = nullptr;
  };
  App app_;
  std::array<PyObject*, 600> status_lines_{};
  std::array<CachedHeader, kHeaderCache> headers_{};
  std::size_t headers_next_ = 0;
};

/// A Python WSGI callable as a csgi::App (from_wsgi.cpp). Thread-safe; takes the GIL per call.
App from_wsgi(py::object wsgi_app);

/// The csgi::App behind a Python object: a csgi.App as is, any other callable through from_wsgi().
App to_app(py::handle obj);

void bind_streams(py::module_& m);
void bind_body_iterator(py::module_& m);
void bind_to_asgi(py::module_& m);
void bind_from_wsgi(py::module_& m);
void bind_from_asgi(py::module_& m);
void bind_servers(py::module_& m);
void bind_app(py::module_& m);
void bind_middleware(py::module_& m);

}  // namespace csgi::python

namespace csgi::python {

/// A reference to a Python object that C++ code may copy and drop on any thread: the last owner takes
/// the GIL (of the interpreter that made it) to release it.
class PyRef {
public:
  explicit PyRef(py::object o) : obj_(o.release().ptr()), interp_(PyThreadState_Get()->interp) {}
  ~PyRef();
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyObject* get() const noexcept { return obj_; }
  PyInterpreterState* interp() const noexcept { return interp_; }

private:
  PyObject* obj_;
  PyInterpreterState* interp_;
};

}  // namespace csgi::python
