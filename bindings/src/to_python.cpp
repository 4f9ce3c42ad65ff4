// A csgi app called from Python: the pieces to_python.hpp declares.
#include "to_python.hpp"

#include <charconv>
#include <cstring>

#include "asgi_env.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"

namespace csgi::python {
namespace {

thread_local std::unique_ptr<Exchange> t_spare;  // this thread's exchange between requests
constexpr std::size_t kWriterHighWater = 1 << 20;  // bytes a delayed writer may queue before it waits

/// An ASGI scope's SCRIPT_NAME and PATH_INFO arrive decoded but with whatever dot segments the request had:
/// make them canonical as every adapter does (ENV-5; a WSGI environ's: WsgiEnviron::canonicalize).
/// Throws csgi::BadRequest for a ".." that canonical paths refuse.
void canonicalize_paths(Env& env) {
  std::string_view script = env.get(keys::SCRIPT_NAME), path = without_dot_segments(env, env.get(keys::PATH_INFO));
  if (has_dot_segment(script)) {
    script = canonical_script_name(env, script);
    env.set_view(keys::SCRIPT_NAME, script);
    if (script.empty() && path.empty()) path = "/";  // "/app/.." mounted: the root (ENV-2)
  }
  env.set_view(keys::PATH_INFO, path);
}

class ChannelWriter final : public Writer {
public:
  explicit ChannelWriter(std::shared_ptr<Channel> c) : c_(std::move(c)) {}
  ~ChannelWriter() override { close(); }
  bool write(std::string_view chunk) override {
    std::unique_lock lock(c_->mu);
    if (c_->consumer_gone || c_->writer_closed) return false;
    if (std::this_thread::get_id() != c_->consumer)
      c_->cv.wait(lock, [&] { return c_->queued < kWriterHighWater || c_->consumer_gone; });
    if (c_->consumer_gone) return false;
    if (chunk.empty()) return true;
    c_->chunks.emplace_back(chunk);
    c_->queued += chunk.size();
    c_->cv.notify_all();
    return true;
  }
  void set_trailers(Headers trailers) override {
    std::lock_guard lock(c_->mu);
    c_->trailers = std::move(trailers);
  }
  void close() override {
    std::lock_guard lock(c_->mu);
    c_->writer_closed = true;
    c_->cv.notify_all();
  }

private:
  std::shared_ptr<Channel> c_;
};

class ChannelResponder final : public ResponderImpl {
public:
  explicit ChannelResponder(std::shared_ptr<Channel> c) : c_(std::move(c)) {}
  ~ChannelResponder() override {
    std::lock_guard lock(c_->mu);
    if (!c_->answered) c_->abandoned = true;
    c_->cv.notify_all();
  }
  void respond(Response r) override {
    if (r.is_delayed()) throw std::logic_error("Responder::respond: a delayed response cannot answer a delayed response");
    std::lock_guard lock(c_->mu);
    if (std::exchange(c_->answered, true)) throw std::logic_error("Responder used twice");
    c_->response = std::move(r);
    c_->cv.notify_all();
  }
  WriterPtr start(int status, Headers headers) override {
    std::lock_guard lock(c_->mu);
    if (std::exchange(c_->answered, true)) throw std::logic_error("Responder used twice");
    c_->status = status;
    c_->headers = std::move(headers);
    c_->cv.notify_all();
    return std::make_shared<ChannelWriter>(c_);
  }

private:
  std::shared_ptr<Channel> c_;
};

bool is_head(const Env& env) { return env.get(keys::REQUEST_METHOD) == "HEAD"; }

}  // namespace

std::unique_ptr<Exchange> take_exchange() {
  if (t_spare) return std::move(t_spare);
  return std::make_unique<Exchange>();
}

void give_back(std::unique_ptr<Exchange> ex) {
  ex->reset();
  if (!t_spare) t_spare = std::move(ex);
}

std::size_t HostInput::read(char* buf, std::size_t n) {
  if (n == 0 || !obj_ || (!unbounded_ && remaining_ <= 0)) return 0;
  std::size_t want = unbounded_ ? n : std::min<std::size_t>(n, static_cast<std::size_t>(remaining_));
  AcquireGil gil(ex_.interp);
  if (!gil) throw std::runtime_error("wsgi.input: the Python interpreter is gone");
  if (!read_ && !(read_ = PyObject_GetAttrString(obj_, "read"))) throw PythonError(ex_.stash_error());
  PyObject* data = PyObject_CallFunction(read_, "n", static_cast<Py_ssize_t>(want));
  if (!data) throw PythonError(ex_.stash_error());
  if (!PyBytes_Check(data)) {
    Py_DECREF(data);
    throw std::runtime_error("wsgi.input.read() returned something other than bytes");
  }
  std::size_t got = std::min<std::size_t>(static_cast<std::size_t>(PyBytes_GET_SIZE(data)), want);
  std::memcpy(buf, PyBytes_AS_STRING(data), got);
  Py_DECREF(data);
  if (got == 0) remaining_ = 0;  // the client sent less than it announced
  else if (!unbounded_) remaining_ -= static_cast<std::int64_t>(got);
  return got;
}

void HostErrors::write(std::string_view message) {
  AcquireGil gil(ex_.interp);
  if (!gil || !obj_) {
    stderr_stream().write(message);
    return;
  }
  std::string line(message);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  PyObject* text = PyUnicode_DecodeUTF8(line.data(), static_cast<Py_ssize_t>(line.size()), "replace");
  PyObject* r = text ? PyObject_CallMethod(obj_, "write", "O", text) : nullptr;
  Py_XDECREF(text);
  if (r) {
    Py_DECREF(r);
    r = PyObject_CallMethod(obj_, "flush", nullptr);
  }
  if (!r) {
    PyErr_Clear();
    stderr_stream().write(message);
    return;
  }
  Py_DECREF(r);
}

Input* Exchange::open_input(PyObject* obj, std::int64_t length, bool unbounded) noexcept {
  input.reset(obj, length, unbounded);
  return &input;
}

ErrorStream* Exchange::open_errors(PyObject* obj) noexcept {
  errors.reset(obj);
  return &errors;
}

std::optional<std::uint64_t> declared_length(const Headers& headers) {
  auto cl = headers.get("Content-Length");
  if (!cl) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), v);
  if (ec != std::errc() || p != cl->data() + cl->size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> stream_limit(std::optional<std::uint64_t> declared, const Env& env) {
  return declared && !is_head(env) ? declared : std::nullopt;
}

std::optional<std::uint64_t> complete_length(std::optional<std::uint64_t> declared, std::uint64_t real, Env& env) {
  if (!declared || *declared == real) return real;
  bool head = is_head(env);
  if (head && real == 0) return declared;
  if (!head)
    env.errors().write("csgi: the app's Content-Length (" + std::to_string(*declared) +
                       ") differs from its body's length (" + std::to_string(real) +
                       "); the body's length was sent (ADP-13)");
  return real;
}

Outcome run_app_nogil(const App& app, Exchange& ex) {
  Outcome out;
  Response& res = out.res;
  std::shared_ptr<Channel>& chan = out.chan;
  std::string& failure = out.failure;  // what went wrong in the app, for csgi.errors
  {
    try {
      if (ex.environ_env.started()) ex.environ_env.canonicalize(ex.env);  // WSGI
      else canonicalize_paths(ex.env);
      res = app(ex.env);
      if (res.is_delayed()) {
        ex.env.resolve();  // the env may be read from other threads from now on
        Delayed d = std::move(std::get<Delayed>(res.body));
        chan = std::make_shared<Channel>();
        d(Responder(std::make_shared<ChannelResponder>(chan)));
        d = nullptr;
        std::unique_lock lock(chan->mu);
        chan->cv.wait(lock, [&] { return chan->answered || chan->abandoned; });
        if (!chan->answered) throw std::logic_error("the delayed response's Responder was dropped unanswered");
        if (chan->response) {
          res = std::move(*chan->response);
          chan.reset();
        } else {
          res.status = chan->status;
          res.headers = std::move(chan->headers);
          res.body = std::string();
        }
      }
      if (res.is_delayed()) throw std::logic_error("a delayed response answered with a delayed response");
      if (res.status < 100 || res.status > 599) throw std::logic_error("status " + std::to_string(res.status));
    } catch (const HttpError& e) {
      chan.reset();
      res = Response::error(e.status(), e.status() < 500 ? std::string_view(e.what()) : std::string_view());
    } catch (const std::exception& e) {
      chan.reset();
      failure = e.what();
    } catch (...) {
      chan.reset();
      failure = "unknown exception";
    }
    if (!failure.empty()) {
      ex.env.errors().write("csgi: app raised: " + failure);
      res = Response::error(500);
    }
  }

  return out;
}

Outcome run_app(const App& app, Exchange& ex) {
  ReleaseGil nogil;
  return run_app_nogil(app, ex);
}

AppHandle::~AppHandle() {
  GilHeldByCaller held;  // deallocated by Python: app_ may hold the last reference to a Python app
  app_ = nullptr;
  for (PyObject*& s : status_lines_) Py_CLEAR(s);
  for (CachedHeader& h : headers_) Py_CLEAR(h.tuple);
}

void bind_body_iterator(py::module_& m) {
  py::class_<BodyIter>(m, "BodyIterator", py::module_local(),
                       "The body of a csgi response streamed to a WSGI or ASGI host; close() closes the C++ "
                       "stream.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &BodyIter::next)
      .def("close", &BodyIter::close)
      .def(
          "trailers", [](BodyIter& it) { return py::reinterpret_steal<py::object>(asgi_trailers(it.trailers())); },
          "The ASGI trailer fields once the body was iterated to its end (RES-15): (name, value) pairs.");
}

}  // namespace csgi::python
