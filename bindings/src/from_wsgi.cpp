// Python → C++: a WSGI application as a csgi::App, callable from any adapter thread.
//
// Per call the GIL is taken (with the thread state saved by an enclosing csgi call on this thread, or a
// thread state of our own), an environ dict is built from the Env (text as latin-1 str, booleans and
// integers as such; csgi.* keys mapped to wsgi.*), the app is called with a start_response, and the
// result becomes: complete bytes for a list/tuple, or when a generator finishes within its announced
// Content-Length; a FileBody for wsgi.file_wrapper over a real file; otherwise a Stream that takes the GIL
// per chunk. close() of the result is always called. A Python exception before the headers are out is a
// 500 with the traceback in csgi.errors.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common.hpp"
#include "csgi/core/http_error.hpp"
#include "gil.hpp"
#include "py_streams.hpp"

namespace csgi::python {
namespace {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// Per-request state shared by start_response and the response being built.
struct CallState {
  bool started = false;       // start_response was called
  bool headers_out = false;   // status and headers were handed to the adapter
  int status = 0;
  Headers headers;
  std::string written;        // what the legacy write() callable received
};

/// start_response(status, headers, exc_info=None) → write
class StartResponse {
public:
  explicit StartResponse(std::shared_ptr<CallState> st) : st_(std::move(st)) {}

  py::object call(py::handle self, py::handle status, py::handle headers, py::handle exc_info) {
    CallState& st = *st_;
    if (!exc_info.is_none()) {
      if (st.headers_out) {
        if (!PyTuple_Check(exc_info.ptr()) || PyTuple_GET_SIZE(exc_info.ptr()) != 3)
          throw py::type_error("exc_info must be a (type, value, traceback) tuple");
        PyObject* t = PyTuple_GET_ITEM(exc_info.ptr(), 0);
        PyObject* v = PyTuple_GET_ITEM(exc_info.ptr(), 1);
        PyObject* tb = PyTuple_GET_ITEM(exc_info.ptr(), 2);
        Py_INCREF(t);
        Py_INCREF(v);
        Py_INCREF(tb);
        PyErr_Restore(t, v, tb == Py_None ? (Py_DECREF(tb), nullptr) : tb);
        throw_python_error();
      }
    } else if (st.started) {
      throw py::value_error("start_response called a second time without exc_info (PEP 3333)");
    }
    if (!PyUnicode_Check(status.ptr())) throw py::type_error("status must be a str");
    std::string_view s = latin1_or_throw(status.ptr(), "status");
    int code = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + std::min<std::size_t>(s.size(), 3), code);
    if (s.size() < 4 || ec != std::errc() || p != s.data() + 3 || s[3] != ' ' || code < 100 || code > 599)
      throw py::value_error("status must look like \"200 OK\", got " + std::string(py::repr(status)));
    if (!PyList_Check(headers.ptr())) throw py::type_error("response headers must be a list");
    Headers out;
    Py_ssize_t n = PyList_GET_SIZE(headers.ptr());
    out.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* t = PyList_GET_ITEM(headers.ptr(), i);
      if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ||
          !PyUnicode_Check(PyTuple_GET_ITEM(t, 1)))
        throw py::type_error("each response header must be a (str, str) tuple");
      std::string_view name = latin1_or_throw(PyTuple_GET_ITEM(t, 0), "header name");
      std::string_view value = latin1_or_throw(PyTuple_GET_ITEM(t, 1), "header value");
      for (char c : value)
        if (c == '\r' || c == '\n' || c == '\0') throw py::value_error("control character in response header value");
      out.add(std::string(name), std::string(value));
    }
    st.status = code;
    st.headers = std::move(out);
    st.started = true;
    return self.attr("write");
  }

  void write(py::bytes data) {
    if (!st_->started) throw py::value_error("write() before start_response()");
    char* p = nullptr;
    Py_ssize_t n = 0;
    PyBytes_AsStringAndSize(data.ptr(), &p, &n);
    st_->written.append(p, static_cast<std::size_t>(n));
  }

private:
  std::shared_ptr<CallState> st_;
};

class PyApp;

/// The body of a Python response that streams: each next() takes the GIL for one chunk.
class PyStream final : public Stream {
public:
  PyStream(std::shared_ptr<PyApp> app, PyObject* result, PyObject* iter, std::string first,
           py::object input, py::object errors, ErrorStream& err_out)
      : app_(std::move(app)), result_(result), iter_(iter), first_(std::move(first)), input_(std::move(input)),
        errors_(std::move(errors)), err_out_(err_out) {}
  ~PyStream() override;
  bool next(std::string& chunk) override;
  void close() override;

private:
  void close_locked();
  std::shared_ptr<PyApp> app_;
  PyObject* result_;  // owned
  PyObject* iter_;    // owned
  std::string first_;
  bool have_first_ = true;
  bool closed_ = false;
  py::object input_, errors_;
  ErrorStream& err_out_;
};

class PyApp : public std::enable_shared_from_this<PyApp> {
public:
  PyApp(py::object app) : app_(app.release().ptr()), interp_(PyThreadState_Get()->interp) {
    version_ = Py_BuildValue("(ii)", 1, 0);
  }
  ~PyApp() {
    AcquireGil gil(interp_);
    if (!gil) return;  // the interpreter is gone: leave the references
    Py_CLEAR(app_);
    Py_CLEAR(version_);
    Py_CLEAR(file_wrapper_);
    for (auto& [k, v] : keys_) Py_DECREF(v);
  }
  PyInterpreterState* interp() const noexcept { return interp_; }
  PyObject* app() const noexcept { return app_; }

  Response call(Env& env);

private:
  /// The interned str for an environ key (borrowed; keys_ owns it). A direct-mapped front cache indexed
  /// by a few bytes of the key answers the usual keys without hashing them whole.
  PyObject* key(std::string_view k) {
    std::size_t n = k.size();
    std::uint32_t h = static_cast<std::uint32_t>(n) * 0x9E3779B1u;
    if (n) {
      auto at = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(k[i])); };
      h ^= at(n - 1) * 0x85EBCA77u ^ at(n / 2) * 0xC2B2AE3Du ^ at(n > 5 ? 5 : 0) * 0x27D4EB2Fu;
    }
    KeySlot& slot = key_slots_[(h ^ (h >> 15)) % key_slots_.size()];
    if (slot.str && slot.key.size() == n && std::memcmp(slot.key.data(), k.data(), n) == 0) return slot.str;
    PyObject* s;
    auto it = keys_.find(k);
    if (it != keys_.end()) {
      s = it->second;
    } else {
      s = latin1_str(k);
      PyUnicode_InternInPlace(&s);
      keys_.emplace(std::string(k), s);
    }
    slot.key.assign(k);
    slot.str = s;
    return s;
  }
  PyObject* build_environ(Env& env, py::object& input, py::object& errors);
  Response finish(Env& env, CallState& st, PyObject* result, py::object& input, py::object& errors);

  PyObject* app_;
  PyInterpreterState* interp_;
  PyObject* version_;
  PyObject* file_wrapper_ = nullptr;  // csgi._csgi.FileWrapper, looked up once
  std::unordered_map<std::string, PyObject*, StringHash, std::equal_to<>> keys_;  // under the GIL
  struct KeySlot {
    std::string key;
    PyObject* str = nullptr;  // borrowed from keys_
  };
  std::array<KeySlot, 128> key_slots_{};
};

Response python_failure(Env& env, PyObject* result, py::object& input, py::object& errors);

void set_item(PyObject* d, PyObject* k, PyObject* v) {
  if (!v) throw_python_error();
  int rc = PyDict_SetItem(d, k, v);
  Py_DECREF(v);
  if (rc < 0) throw_python_error();
}

PyObject* PyApp::build_environ(Env& env, py::object& input, py::object& errors) {
  PyObject* d = PyDict_New();
  if (!d) throw_python_error();
  py::object guard = py::reinterpret_steal<py::object>(d);
  for (const Env::Entry& e : env) {
    std::string_view k = e.key;
    if (k.starts_with("csgi.")) {
      std::string_view c = k.substr(5);
      const char* wsgi = c == "url_scheme"     ? "wsgi.url_scheme"
                         : c == "multithread"  ? "wsgi.multithread"
                         : c == "multiprocess" ? "wsgi.multiprocess"
                         : c == "run_once"     ? "wsgi.run_once"
                                               : nullptr;
      if (wsgi) {
        PyObject* v = e.value.is_text() ? latin1_str(e.value.text()) : PyBool_FromLong(e.value.truthy());
        set_item(d, key(wsgi), v);
      }
      if (c == "input" || c == "errors") continue;
    }
    switch (e.value.type()) {
      case Value::Type::text: set_item(d, key(k), latin1_str(e.value.text())); break;
      case Value::Type::boolean: set_item(d, key(k), PyBool_FromLong(e.value.truthy())); break;
      case Value::Type::integer: set_item(d, key(k), PyLong_FromLongLong(e.value.integer())); break;
      case Value::Type::object: break;  // C++ objects have no Python face
    }
  }
  Py_INCREF(version_);
  set_item(d, key("wsgi.version"), version_);
  if (!PyDict_Contains(d, key("wsgi.url_scheme"))) set_item(d, key("wsgi.url_scheme"), latin1_str("http"));
  for (const char* b : {"wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"})
    if (!PyDict_Contains(d, key(b))) set_item(d, key(b), PyBool_FromLong(0));
  input = py::cast(new InputStream(&env.input()), py::return_value_policy::take_ownership);
  errors = py::cast(new ErrorsStream(&env.errors()), py::return_value_policy::take_ownership);
  set_item(d, key("wsgi.input"), input.inc_ref().ptr());
  set_item(d, key("wsgi.errors"), errors.inc_ref().ptr());
  set_item(d, key("wsgi.input_terminated"), PyBool_FromLong(1));
  if (!file_wrapper_) file_wrapper_ = py::object(py::module_::import("csgi._csgi").attr("FileWrapper")).release().ptr();
  Py_INCREF(file_wrapper_);
  set_item(d, key("wsgi.file_wrapper"), file_wrapper_);
  return guard.release().ptr();
}

void detach(py::object& input, py::object& errors) {
  if (input) input.cast<InputStream&>().detach();
  if (errors) errors.cast<ErrorsStream&>().detach();
}

/// Calls result.close() when it has one; a failure there is reported, not raised.
void close_result(PyObject* result, ErrorStream& err) {
  if (!result) return;
  PyObject* close = PyObject_GetAttrString(result, "close");
  if (!close) {
    PyErr_Clear();
    return;
  }
  PyObject* r = PyObject_CallNoArgs(close);
  Py_DECREF(close);
  if (r) {
    Py_DECREF(r);
    return;
  }
  err.write("csgi: the WSGI iterable's close() raised:\n" + take_python_error_text());
}

std::optional<std::uint64_t> content_length(const Headers& h) {
  auto v = h.get("Content-Length");
  if (!v) return std::nullopt;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return n;
}

Response PyApp::call(Env& env) {
  AcquireGil gil(interp_);
  if (!gil) return Response::error(503, "the Python interpreter is shutting down");
  auto st = std::make_shared<CallState>();
  py::object input, errors;
  PyObject* result = nullptr;
  try {
    py::object environ = py::reinterpret_steal<py::object>(build_environ(env, input, errors));
    py::object sr = py::cast(new StartResponse(st), py::return_value_policy::take_ownership);
    result = PyObject_CallFunctionObjArgs(app_, environ.ptr(), sr.ptr(), nullptr);
    if (!result) throw_python_error();
    return finish(env, *st, result, input, errors);
  } catch (PythonErrorSet&) {
    return python_failure(env, result, input, errors);
  } catch (py::error_already_set& e) {
    e.restore();
    return python_failure(env, result, input, errors);
  } catch (const std::exception& e) {
    close_result(result, env.errors());
    Py_XDECREF(result);
    detach(input, errors);
    env.errors().write(std::string("csgi: WSGI app failed: ") + e.what());
    return Response::error(500);
  }
}

Response python_failure(Env& env, PyObject* result, py::object& input, py::object& errors) {
  // A request body the adapter refused (bad chunk, over the limit, too slow) keeps its status: the app only
  // saw a Python RuntimeError from wsgi.input.read().
  int input_status = input ? input.cast<InputStream&>().http_error() : 0;
  std::string tb = take_python_error_text();
  close_result(result, env.errors());
  Py_XDECREF(result);
  if (input_status) {
    std::string reason = input.cast<InputStream&>().http_error_reason();
    detach(input, errors);
    env.errors().write("csgi: " + std::to_string(input_status) + " for the request body: " + reason);
    return Response::error(input_status, input_status < 500 ? std::string_view(reason) : std::string_view());
  }
  detach(input, errors);
  env.errors().write("csgi: the WSGI app raised:\n" + tb);
  return Response::error(500);
}

Response PyApp::finish(Env& env, CallState& st, PyObject* result, py::object& input, py::object& errors) {
  auto complete = [&](std::string body) {
    if (!st.started) throw std::runtime_error("the WSGI app returned without calling start_response");
    close_result(result, env.errors());
    Py_DECREF(result);
    detach(input, errors);
    st.headers_out = true;
    Response r;
    r.status = st.status;
    r.headers = std::move(st.headers);
    r.body = std::move(body);
    return r;
  };
  // A list or tuple of bytes: complete.
  if (PyList_CheckExact(result) || PyTuple_CheckExact(result)) {
    PyObject** items = PySequence_Fast_ITEMS(result);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(result);
    std::string body = std::move(st.written);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!PyBytes_Check(items[i])) throw py::type_error("the WSGI iterable yielded a non-bytes item");
      body.append(PyBytes_AS_STRING(items[i]), static_cast<std::size_t>(PyBytes_GET_SIZE(items[i])));
    }
    return complete(std::move(body));
  }
  // wsgi.file_wrapper over a real file: sendfile from an independent descriptor at the file's position.
  if (file_wrapper_ && Py_TYPE(result) == reinterpret_cast<PyTypeObject*>(file_wrapper_) && st.started &&
      st.written.empty()) {
    FileWrapper& w = py::handle(result).cast<FileWrapper&>();
    int src = -1;
    off_t at = 0;
    if (PyObject* r = PyObject_CallMethod(w.filelike.ptr(), "fileno", nullptr)) {
      src = PyLong_Check(r) ? static_cast<int>(PyLong_AsLong(r)) : -1;
      Py_DECREF(r);
      // The logical position (a buffered reader may have read ahead of the descriptor's offset).
      PyObject* t = src >= 0 ? PyObject_CallMethod(w.filelike.ptr(), "tell", nullptr) : nullptr;
      if (t && PyLong_Check(t)) at = static_cast<off_t>(PyLong_AsLongLong(t));
      else src = -1;
      Py_XDECREF(t);
    }
    PyErr_Clear();
    {
      if (src >= 0) {
        std::string proc = "/proc/self/fd/" + std::to_string(src);
        int fd = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          FileBody f;
          f.file = std::make_shared<FileHandle>(fd);
          f.offset = static_cast<std::uint64_t>(at);
          if (auto cl = content_length(st.headers)) f.length = *cl;
          Response r;
          r.status = st.status;
          r.headers = std::move(st.headers);
          r.body = std::move(f);
          close_result(result, env.errors());
          Py_DECREF(result);
          detach(input, errors);
          st.headers_out = true;
          return r;
        }
      }
    }
  }
  // Any other iterable: pull until the first non-empty chunk (that is when generators call
  // start_response). Done within the announced Content-Length → complete; otherwise stream.
  PyObject* iter = PyObject_GetIter(result);
  if (!iter) throw_python_error();
  std::string body = std::move(st.written);
  std::optional<std::uint64_t> cl;
  bool first = true;
  for (;;) {
    PyObject* item = PyIter_Next(iter);
    if (!item) {
      Py_DECREF(iter);
      if (PyErr_Occurred()) throw_python_error();
      return complete(std::move(body));
    }
    if (!PyBytes_Check(item)) {
      Py_DECREF(item);
      Py_DECREF(iter);
      throw py::type_error("the WSGI iterable yielded a non-bytes item");
    }
    body.append(PyBytes_AS_STRING(item), static_cast<std::size_t>(PyBytes_GET_SIZE(item)));
    Py_DECREF(item);
    if (body.empty()) continue;
    if (first) {
      first = false;
      if (!st.started) {
        Py_DECREF(iter);
        throw std::runtime_error("the WSGI app yielded body bytes before calling start_response");
      }
      cl = content_length(st.headers);
    }
    // With a (modest) Content-Length announced, the end is near: keep pulling, so that a framework's
    // generator over a ready body (Flask, Django) still gives a complete response.
    if (cl && *cl <= (1u << 20) && body.size() <= *cl) continue;
    // A real stream: hand status, headers and what came so far to the adapter.
    st.headers_out = true;
    Response r;
    r.status = st.status;
    r.headers = std::move(st.headers);
    r.body = StreamPtr(std::make_shared<PyStream>(shared_from_this(), result, iter, std::move(body), input, errors,
                                                  env.errors()));
    return r;
  }
}

PyStream::~PyStream() {
  AcquireGil gil(app_->interp());
  if (!gil) return;
  close_locked();
  Py_CLEAR(iter_);
  Py_CLEAR(result_);
  input_ = py::object();
  errors_ = py::object();
}

bool PyStream::next(std::string& chunk) {
  if (have_first_) {
    have_first_ = false;
    chunk = std::move(first_);
    return true;
  }
  AcquireGil gil(app_->interp());
  if (!gil || closed_) return false;
  for (;;) {
    PyObject* item = PyIter_Next(iter_);
    if (!item) {
      if (!PyErr_Occurred()) return false;
      std::string tb = take_python_error_text();
      err_out_.write("csgi: the WSGI iterable raised while streaming:\n" + tb);
      throw std::runtime_error("the WSGI iterable raised while streaming");
    }
    if (!PyBytes_Check(item)) {
      Py_DECREF(item);
      throw std::runtime_error("the WSGI iterable yielded a non-bytes item");
    }
    chunk.assign(PyBytes_AS_STRING(item), static_cast<std::size_t>(PyBytes_GET_SIZE(item)));
    Py_DECREF(item);
    if (!chunk.empty()) return true;
  }
}

void PyStream::close_locked() {
  if (closed_) return;
  closed_ = true;
  close_result(result_, err_out_);
  if (input_) input_.cast<InputStream&>().detach();
  if (errors_) errors_.cast<ErrorsStream&>().detach();
}

void PyStream::close() {
  AcquireGil gil(app_->interp());
  if (!gil) return;
  close_locked();
}

}  // namespace

std::string_view latin1_or_throw(PyObject* s, const char* what) {
  std::string_view v;
  if (!latin1_view(s, v)) throw py::value_error(std::string(what) + " holds characters above U+00FF (PEP 3333: latin-1 only)");
  return v;
}

std::string take_python_error_text() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (!type) return "(no Python error)";
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text;
  PyObject* mod = PyImport_ImportModule("traceback");
  PyObject* lines = mod ? PyObject_CallMethod(mod, "format_exception", "OOO", type, value ? value : Py_None,
                                              tb ? tb : Py_None)
                        : nullptr;
  if (lines) {
    Py_ssize_t n = PyList_Size(lines);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (const char* c = PyUnicode_AsUTF8(PyList_GetItem(lines, i))) text += c;
  }
  if (text.empty()) text = Py_TYPE(value ? value : type)->tp_name;
  PyErr_Clear();
  Py_XDECREF(lines);
  Py_XDECREF(mod);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

App from_wsgi(py::object wsgi_app) {
  if (!PyCallable_Check(wsgi_app.ptr())) throw py::type_error("a WSGI app must be callable");
  auto app = std::make_shared<PyApp>(std::move(wsgi_app));
  return [app](Env& env) { return app->call(env); };
}

App to_app(py::handle obj) {
  if (py::isinstance<AppHandle>(obj)) return obj.cast<AppHandle&>().app();
  return from_wsgi(py::reinterpret_borrow<py::object>(obj));
}

namespace {

/// tp_call of StartResponse: start_response(status, headers, exc_info=None) without pybind11's dispatch.
PyObject* start_response_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* exc_info = n == 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
  if (kwargs && PyDict_GET_SIZE(kwargs) != 0) {
    PyObject* kw = PyDict_GetItemString(kwargs, "exc_info");  // borrowed
    if (!kw || PyDict_GET_SIZE(kwargs) != 1 || n != 2) {
      PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
      return nullptr;
    }
    exc_info = kw;
  } else if (n != 2 && n != 3) {
    PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
    return nullptr;
  }
  return call_on_instance<StartResponse>(self, [&](StartResponse& sr) {
    return sr.call(self, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), exc_info).release().ptr();
  });
}

}  // namespace

void bind_from_wsgi(py::module_& m) {
  py::class_<StartResponse> cls(m, "StartResponse", py::module_local(), "start_response of a request served by csgi.");
  cls.def("__call__",
           [](py::handle self, py::handle status, py::handle headers, py::handle exc_info) {
             return self.cast<StartResponse&>().call(self, status, headers, exc_info);
           },
           py::arg("status"), py::arg("headers"), py::arg("exc_info") = py::none())
      .def("write", &StartResponse::write);
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_call = &start_response_tp_call;
}

}  // namespace csgi::python
