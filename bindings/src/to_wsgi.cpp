// C++ → Python: a csgi app as a PEP 3333 WSGI callable ("csgi embedded in a Python host").
//
// Per call: the env reads the environ dict when the app first uses an entry (wsgi_environ.hpp); text
// values become env entries that point straight into the str objects (CPython keeps a str of code points
// ≤ U+00FF as its latin-1 bytes), so building the env copies nothing. wsgi.input / wsgi.errors become
// csgi::Input / csgi::ErrorStream that re-enter Python with the thread state saved when the GIL was
// released. The app runs without the GIL.
// Complete bodies go back as a one-element list; files through wsgi.file_wrapper when the host offers it;
// streams and delayed responses as an iterator whose next() waits without the GIL. The host is handed one
// Content-Length, the one the body keeps to (ADP-13).
#include "to_python.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <system_error>

#include "csgi/core/on_response.hpp"

namespace csgi::python {
namespace {

/// A separate open file description for a FileBody (so seeking it moves no one else's offset).
int open_body_file(const FileBody& f) {
  if (f.file) {
    std::string proc = "/proc/self/fd/" + std::to_string(f.file->fd());
    int fd = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : ::fcntl(f.file->fd(), F_DUPFD_CLOEXEC, 0);
  }
  return ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
}

/// The host's header list: the app's fields, its Content-Length ones replaced by `length` when given.
PyObject* make_headers(AppHandle& app, const Headers& headers, std::optional<std::uint64_t> length) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(headers.size()) + (length ? 1 : 0));
  if (!list) throw_python_error();
  Py_ssize_t i = 0;
  for (const Header& h : headers) {
    if (iequals(h.name, "Content-Length")) continue;
    PyObject* t = app.header_tuple(h.name, h.value);
    if (!t) {
      Py_DECREF(list);
      throw_python_error();
    }
    PyList_SET_ITEM(list, i++, t);
  }
  if (length) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, *length);
    PyObject* t = app.header_tuple("Content-Length", std::string_view(buf, static_cast<std::size_t>(p - buf)));
    if (!t) {
      Py_DECREF(list);
      throw_python_error();
    }
    PyList_SET_ITEM(list, i++, t);
  }
  Py_SET_SIZE(list, i);  // less the Content-Length fields left out (their slots are still NULL)
  return list;
}

void call_start_response(PyObject* start_response, PyObject* status, PyObject* headers, PendingError* exc) {
  // args[0] is left free (PY_VECTORCALL_ARGUMENTS_OFFSET): a bound method (gunicorn's) puts its self
  // there instead of copying the arguments.
  PyObject* r;
  if (exc && exc->set()) {
    PyObject* info = PyTuple_Pack(3, exc->type, exc->value ? exc->value : Py_None, exc->tb ? exc->tb : Py_None);
    PyObject* args[4] = {nullptr, status, headers, info};
    r = info ? PyObject_Vectorcall(start_response, args + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr) : nullptr;
    Py_XDECREF(info);
  } else {
    PyObject* args[3] = {nullptr, status, headers};
    r = PyObject_Vectorcall(start_response, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  }
  Py_DECREF(headers);
  if (!r) throw_python_error();
  Py_DECREF(r);
}

/// A one-item tuple holding `bytes` (the complete body).
py::object body_tuple(std::string_view bytes) {
  PyObject* b = PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
  if (!b) throw_python_error();
  PyObject* t = PyTuple_New(1);
  if (!t) {
    Py_DECREF(b);
    throw_python_error();
  }
  PyTuple_SET_ITEM(t, 0, b);
  return py::reinterpret_steal<py::object>(t);
}

}  // namespace

PyObject* AppHandle::header_tuple(std::string_view name, std::string_view value) {
  for (CachedHeader& h : headers_) {
    if (h.tuple && h.name.size() == name.size() && h.value.size() == value.size() &&
        std::memcmp(h.name.data(), name.data(), name.size()) == 0 &&
        std::memcmp(h.value.data(), value.data(), value.size()) == 0) {
      Py_INCREF(h.tuple);
      return h.tuple;
    }
  }
  PyObject* t = PyTuple_New(2);
  if (!t) return nullptr;
  PyTuple_SET_ITEM(t, 0, latin1_str(name));
  PyTuple_SET_ITEM(t, 1, latin1_str(value));
  if (name.size() + value.size() <= 256) {  // keep small ones; a long value (a cookie, a token) rarely repeats
    CachedHeader& slot = headers_[headers_next_++ % kHeaderCache];
    Py_XDECREF(slot.tuple);
    slot.name.assign(name);
    slot.value.assign(value);
    Py_INCREF(t);
    slot.tuple = t;
  }
  return t;
}

PyObject* AppHandle::status_line(int status) {
  if (status < 100 || status > 599) throw std::runtime_error("csgi app returned status " + std::to_string(status));
  PyObject*& s = status_lines_[static_cast<std::size_t>(status)];
  if (!s) {
    std::string line = std::to_string(status) + " " + std::string(reason_phrase(status));
    s = latin1_str(line);
  }
  return s;
}

py::object AppHandle::call(py::handle environ, py::handle start_response) {
  if (!PyDict_Check(environ.ptr())) throw py::type_error("environ must be a dict");
  std::unique_ptr<Exchange> ex = take_exchange();
  ex->interp = PyThreadState_Get()->interp;
  struct GiveBack {  // the exchange goes back on every exit unless a body iterator took it
    std::unique_ptr<Exchange>& ex;
    ~GiveBack() {
      if (ex) give_back(std::move(ex));
    }
  } give_back_guard{ex};
  Py_INCREF(environ.ptr());
  ex->environ = environ.ptr();
  ex->environ_env.start(ex->env, environ.ptr(), ex->interp);

  auto [res, chan, failure] = run_app(app_, *ex);
  if (!ex->environ_env.bad_key().empty()) {  // the app read a value above U+00FF: the host gets ValueError
    std::string message = ex->environ_env.bad_key_message();
    if (chan) BodyIter(std::move(ex), nullptr, std::move(chan)).close();
    throw py::value_error(message);
  }

  PyObject* status = status_line(res.status);
  bool no_body = status_has_no_body(res.status);
  PendingError* exc = failure.empty() ? nullptr : &ex->pending;
  // A streamed body goes out with the length the app declared and is held to it (ADP-13); none for
  // 1xx/204/304 (ADP-8); for HEAD the host sends no body, so nothing is held.
  std::optional<std::uint64_t> declared = no_body ? std::nullopt : declared_length(res.headers);

  if (chan) {  // started through a Writer: stream what it writes
    std::optional<std::uint64_t> limit = stream_limit(declared, ex->env);
    call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, declared), nullptr);
    return py::cast(new BodyIter(std::move(ex), nullptr, std::move(chan), limit),
                    py::return_value_policy::take_ownership);
  }
  if (no_body) res.body = std::string();
  bool framed_by_app = res.headers.has("Transfer-Encoding");
  if (auto* s = std::get_if<std::string>(&res.body)) {
    std::optional<std::uint64_t> cl;
    if (!no_body && !framed_by_app) cl = complete_length(declared, s->size(), ex->env);
    call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, cl), exc);
    if (s->empty()) return py::reinterpret_steal<py::object>(PyList_New(0));
    return body_tuple(*s);
  }
  if (auto* b = std::get_if<SharedBytes>(&res.body)) {
    std::string_view bytes = *b ? std::string_view(**b) : std::string_view();
    std::optional<std::uint64_t> cl;
    if (!framed_by_app) cl = complete_length(declared, bytes.size(), ex->env);
    call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, cl), exc);
    return body_tuple(bytes);
  }
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    std::uint64_t size = f->size();
    std::optional<std::uint64_t> cl = complete_length(declared, size, ex->env);
    bool to_end = true;
    if (f->length != FileBody::npos) {
      struct stat st {};
      int fd = f->file ? f->file->fd() : -1;
      to_end = (fd >= 0 ? ::fstat(fd, &st) : ::stat(f->path.c_str(), &st)) == 0 &&
               f->offset + f->length >= static_cast<std::uint64_t>(st.st_size);
    }
    PyObject* file_wrapper = to_end ? ex->environ_env.host_object("wsgi.file_wrapper") : nullptr;
    if (file_wrapper && file_wrapper != Py_None) {
      int fd = open_body_file(*f);
      if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + f->path);
      if (::lseek(fd, static_cast<off_t>(f->offset), SEEK_SET) < 0) {
        ::close(fd);
        throw std::system_error(errno, std::generic_category(), "lseek");
      }
      PyObject* file = PyFile_FromFd(fd, nullptr, "rb", -1, nullptr, nullptr, nullptr, 1);
      if (!file) {
        ::close(fd);
        throw_python_error();
      }
      py::object fileobj = py::reinterpret_steal<py::object>(file);
      PyObject* w = PyObject_CallFunction(file_wrapper, "On", fileobj.ptr(), static_cast<Py_ssize_t>(65536));
      if (!w) throw_python_error();  // not py::error_already_set: see common.hpp
      py::object wrapped = py::reinterpret_steal<py::object>(w);
      call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, cl), nullptr);
      return wrapped;
    }
    call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, cl), nullptr);
    StreamPtr st = file_stream(std::move(*f));
    std::optional<std::uint64_t> limit = stream_limit(cl, ex->env);
    return py::cast(new BodyIter(std::move(ex), std::move(st), nullptr, limit), py::return_value_policy::take_ownership);
  }
  StreamPtr st = std::get<StreamPtr>(std::move(res.body));
  call_start_response(start_response.ptr(), status, make_headers(*this, res.headers, declared), nullptr);
  if (!st) return py::reinterpret_steal<py::object>(PyList_New(0));
  std::optional<std::uint64_t> limit = stream_limit(declared, ex->env);
  return py::cast(new BodyIter(std::move(ex), std::move(st), nullptr, limit), py::return_value_policy::take_ownership);
}

}  // namespace csgi::python
