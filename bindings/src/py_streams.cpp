#include "py_streams.hpp"

#include <algorithm>

#include "csgi/core/http_error.hpp"
#include "gil.hpp"

namespace csgi::python {

Input& InputStream::input() {
  if (!in_) throw py::value_error("wsgi.input used after its request finished");
  return *in_;
}

bool InputStream::fill(std::size_t want) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  bool more = false;
  while (!eof_ && buf_.size() - pos_ < want) {
    std::size_t old = buf_.size();
    std::size_t chunk = std::max<std::size_t>(want - (old - pos_), 8192);
    buf_.resize(old + chunk);
    std::size_t got = 0;
    Input& in = input();
    {
      ReleaseGil nogil;
      try {
        got = in.read(buf_.data() + old, chunk);
      } catch (const HttpError& e) {  // malformed or oversized body: the request's answer is e.status()
        buf_.resize(old);
        http_error_ = e.status();
        http_error_reason_ = e.what();
        throw;
      }
    }
    buf_.resize(old + got);
    if (got == 0) eof_ = true;
    more = more || got > 0;
  }
  return more;
}

py::bytes InputStream::read(Py_ssize_t size) {
  input();
  if (size < 0) {
    while (fill(buf_.size() - pos_ + 65536)) {
    }
  } else {
    fill(static_cast<std::size_t>(size));
  }
  std::size_t n = buf_.size() - pos_;
  if (size >= 0) n = std::min(n, static_cast<std::size_t>(size));
  py::bytes out(buf_.data() + pos_, n);
  pos_ += n;
  return out;
}

py::bytes InputStream::readline(Py_ssize_t size) {
  input();
  std::size_t limit = size < 0 ? std::string::npos : static_cast<std::size_t>(size);
  std::size_t scanned = 0;
  for (;;) {
    std::string_view avail(buf_.data() + pos_, buf_.size() - pos_);
    std::size_t nl = avail.find('\n', scanned);
    std::size_t end = nl == std::string_view::npos ? std::string_view::npos : nl + 1;
    if (end != std::string_view::npos || avail.size() >= limit || eof_) {
      std::size_t n = std::min({end, avail.size(), limit});
      py::bytes out(avail.data(), n);
      pos_ += n;
      return out;
    }
    scanned = avail.size();
    fill(avail.size() + 1);
  }
}

py::list InputStream::readlines(Py_ssize_t hint) {
  py::list out;
  std::size_t total = 0;
  for (;;) {
    py::bytes line = readline(-1);
    std::size_t n = static_cast<std::size_t>(PyBytes_GET_SIZE(line.ptr()));
    if (n == 0) break;
    out.append(line);
    total += n;
    if (hint > 0 && total >= static_cast<std::size_t>(hint)) break;
  }
  return out;
}

py::bytes InputStream::next() {
  py::bytes line = readline(-1);
  if (PyBytes_GET_SIZE(line.ptr()) == 0) throw py::stop_iteration();
  return line;
}

void ErrorsStream::write(py::handle text) {
  if (!out_) throw py::value_error("wsgi.errors used after its request finished");
  std::string_view s;
  if (PyUnicode_Check(text.ptr())) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
    if (!p) throw_python_error();
    s = {p, static_cast<std::size_t>(n)};
  } else {
    throw py::type_error("wsgi.errors.write() takes str");
  }
  pending_.append(s);
  auto nl = pending_.rfind('\n');
  if (nl == std::string::npos) return;
  std::string whole = pending_.substr(0, nl + 1);
  pending_.erase(0, nl + 1);
  ErrorStream* out = out_;
  ReleaseGil nogil;
  out->write(whole);
}

// The Python-facing methods below use the C API where a Python call may fail: a py::error_already_set
// takes the GIL through PyGILState when it is destroyed, which deadlocks in a sub-interpreter (common.hpp).
void ErrorsStream::writelines(py::iterable lines) {
  py::object it = py::reinterpret_steal<py::object>(PyObject_GetIter(lines.ptr()));
  if (!it) throw_python_error();
  while (PyObject* line = PyIter_Next(it.ptr())) {
    py::object owned = py::reinterpret_steal<py::object>(line);
    write(owned);
  }
  if (PyErr_Occurred()) throw_python_error();
}

void ErrorsStream::flush() {
  if (!out_ || pending_.empty()) return;
  std::string whole = std::move(pending_);
  pending_.clear();
  ErrorStream* out = out_;
  ReleaseGil nogil;
  out->write(whole);
}

void ErrorsStream::detach() noexcept {
  if (out_ && !pending_.empty()) {
    try {
      out_->write(pending_);
    } catch (...) {
    }
  }
  pending_.clear();
  out_ = nullptr;
}

void bind_streams(py::module_& m) {
  py::class_<InputStream>(m, "InputStream", py::module_local(),
                          "wsgi.input of a request served by csgi: the request body, ending at its end.")
      .def("read", &InputStream::read, py::arg("size") = -1)
      .def("readline", &InputStream::readline, py::arg("size") = -1)
      .def("readlines", &InputStream::readlines, py::arg("hint") = -1)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &InputStream::next);
  py::class_<ErrorsStream>(m, "ErrorsStream", py::module_local(),
                           "wsgi.errors of a request served by csgi: writes whole lines to csgi.errors.")
      .def("write", &ErrorsStream::write)
      .def("writelines", &ErrorsStream::writelines)
      .def("flush", &ErrorsStream::flush);
  py::class_<FileWrapper>(m, "FileWrapper", py::module_local(),
                          "wsgi.file_wrapper: csgi sends a wrapped real file with sendfile(2).")
      .def(py::init([](py::object filelike, Py_ssize_t blksize) { return FileWrapper{std::move(filelike), blksize}; }),
           py::arg("filelike"), py::arg("blksize") = 8192)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](FileWrapper& w) {
             PyObject* data = PyObject_CallMethod(w.filelike.ptr(), "read", "n", w.blksize);
             if (!data) throw_python_error();
             py::object owned = py::reinterpret_steal<py::object>(data);
             Py_ssize_t n = PyObject_Length(data);
             if (n < 0) throw_python_error();
             if (n == 0) throw py::stop_iteration();
             return owned;
           })
      .def("close", [](FileWrapper& w) {
        PyObject* close = PyObject_GetAttrString(w.filelike.ptr(), "close");
        if (!close) {
          if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw_python_error();
          PyErr_Clear();
          return;
        }
        PyObject* r = PyObject_CallNoArgs(close);
        Py_DECREF(close);
        if (!r) throw_python_error();
        Py_DECREF(r);
      });
}

}  // namespace csgi::python
