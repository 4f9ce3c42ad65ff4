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
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <system_error>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "common.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"
#include "asgi_env.hpp"
#include "gil.hpp"
#include "wsgi_environ.hpp"

namespace csgi::python {
namespace {

constexpr std::size_t kWriterHighWater = 1 << 20;  // bytes a delayed writer may queue before it waits

/// A Python error raised while C++ code ran (e.g. in wsgi.input.read), kept to be re-raised.
struct PendingError {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* tb = nullptr;
  bool set() const noexcept { return type != nullptr; }
  void clear() noexcept {
    Py_CLEAR(type);
    Py_CLEAR(value);
    Py_CLEAR(tb);
  }
};

class PythonError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Exchange;

/// csgi.input over the host's wsgi.input. Ends at CONTENT_LENGTH (or at the host's EOF when the host
/// sets wsgi.input_terminated), so a host whose input is the raw socket never blocks past the body.
class HostInput final : public Input {
public:
  explicit HostInput(Exchange& ex) : ex_(ex) {}
  std::size_t read(char* buf, std::size_t n) override;
  void reset(PyObject* obj, std::int64_t remaining, bool unbounded) noexcept {
    obj_ = obj;
    remaining_ = remaining;
    unbounded_ = unbounded;
  }
  void release() noexcept {
    obj_ = nullptr;
    Py_CLEAR(read_);
  }

private:
  Exchange& ex_;
  PyObject* obj_ = nullptr;   // borrowed: the environ dict holds it
  PyObject* read_ = nullptr;  // owned bound method
  std::int64_t remaining_ = 0;
  bool unbounded_ = false;
};

/// csgi.errors over the host's wsgi.errors: one write() call per message (atomic under the GIL).
class HostErrors final : public ErrorStream {
public:
  explicit HostErrors(Exchange& ex) : ex_(ex) {}
  void write(std::string_view message) override;
  void reset(PyObject* obj) noexcept { obj_ = obj; }
  void release() noexcept { obj_ = nullptr; }

private:
  Exchange& ex_;
  PyObject* obj_ = nullptr;  // borrowed
};

/// Everything one request needs while the C++ app runs and its body is sent. Reused between requests on
/// a thread (its Env keeps its memory), handed to the body iterator when the body outlives the call.
struct Exchange final : HostStreams {
  Env env;
  HostInput input{*this};
  HostErrors errors{*this};
  WsgiEnviron environ_env{*this};  // WSGI: the env's source
  PyInterpreterState* interp = nullptr;
  PyObject* environ = nullptr;       // owned: keeps every str the env points into alive (ASGI: the input)
  PyObject* errors_obj = nullptr;    // owned (ASGI: sys.stderr)
  StringInput memory_input;          // ASGI: a request body that came whole
  PendingError pending;
  std::string request_uri;

  /// Drops the request; needs the GIL.
  void reset() noexcept {
    env.clear();
    environ_env.reset();
    input.release();
    errors.release();
    pending.clear();
    Py_CLEAR(environ);
    Py_CLEAR(errors_obj);
    memory_input.assign(std::string());
    request_uri.clear();
  }
  Input* open_input(PyObject* obj, std::int64_t length, bool unbounded) noexcept override;
  ErrorStream* open_errors(PyObject* obj) noexcept override;
  /// Takes the Python error being raised into `pending`; needs the GIL.
  std::string stash_error() {
    pending.clear();
    PyErr_Fetch(&pending.type, &pending.value, &pending.tb);
    PyErr_NormalizeException(&pending.type, &pending.value, &pending.tb);
    std::string text = "Python exception";
    if (pending.value) {
      if (PyObject* s = PyObject_Str(pending.value)) {
        if (const char* c = PyUnicode_AsUTF8(s)) text = std::string(Py_TYPE(pending.value)->tp_name) + ": " + c;
        Py_DECREF(s);
      }
      PyErr_Clear();
    }
    return text;
  }
};

thread_local std::unique_ptr<Exchange> t_spare;

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

// ---------------------------------------------------------------------------------------------- environ

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

Input* Exchange::open_input(PyObject* obj, std::int64_t length, bool unbounded) noexcept {
  input.reset(obj, length, unbounded);
  return &input;
}

ErrorStream* Exchange::open_errors(PyObject* obj) noexcept {
  errors.reset(obj);
  return &errors;
}

// ------------------------------------------------------------------------------------ delayed responses

/// Where a delayed response's Responder and Writer deliver to, read by the Python thread.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false;
  bool abandoned = false;  // every Responder copy went away unanswered
  std::optional<Response> response;
  int status = 0;
  Headers headers;
  std::deque<std::string> chunks;
  std::size_t queued = 0;
  bool writer_closed = false;
  bool consumer_gone = false;
  Headers trailers;  // set_trailers() (RES-15)
  std::thread::id consumer = std::this_thread::get_id();
};

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

// --------------------------------------------------------------------------------------- body iterator

/// The iterable a C++ response's body is returned as when it is not complete bytes: a stream, a file
/// read in blocks, or a delayed response's writer. close() closes the C++ stream (always, also when the
/// host stops early); next() waits without the GIL.
///
/// With a `limit` (the Content-Length handed to the host, ADP-13) it never yields past it: the chunk that
/// runs past is cut there and the iteration ends (a writer's write() returns false from then on), logged;
/// a body that ends short of it raises, logged, so that the host drops the connection rather than take
/// the response for a complete one.
class BodyIter {
public:
  BodyIter(std::unique_ptr<Exchange> ex, StreamPtr stream, std::shared_ptr<Channel> chan,
           std::optional<std::uint64_t> limit = std::nullopt)
      : ex_(std::move(ex)), stream_(std::move(stream)), chan_(std::move(chan)), limit_(limit) {}
  ~BodyIter() { close(); }
  BodyIter(const BodyIter&) = delete;
  BodyIter& operator=(const BodyIter&) = delete;

  py::bytes next() {
    if (closed_ || ended_) throw py::stop_iteration();
    GilHeldByCaller held;
    bool more = false;
    const char* failure = nullptr;
    std::string what;
    {
      ReleaseGil nogil;
      try {
        more = stream_ ? stream_->next(chunk_) : next_from_channel();
      } catch (const std::exception& e) {
        failure = "exception";
        what = e.what();
      } catch (...) {
        failure = "exception";
        what = "unknown exception";
      }
    }
    if (failure) {
      if (ex_ && ex_->pending.set()) {
        PendingError& p = ex_->pending;
        PyErr_Restore(p.type, p.value, p.tb);
        p.type = p.value = p.tb = nullptr;
        throw_python_error();
      }
      throw std::runtime_error("csgi app body stream failed: " + what);
    }
    if (ex_ && !ex_->environ_env.bad_key().empty()) throw py::value_error(ex_->environ_env.bad_key_message());
    if (!more) {
      at_end_ = true;
      if (limit_ && sent_ < *limit_) {
        log_length_error(sent_, false);
        throw std::runtime_error("csgi: the response body fell short of its Content-Length (ADP-13)");
      }
      throw py::stop_iteration();
    }
    if (limit_ && chunk_.size() > *limit_ - sent_) {
      log_length_error(sent_ + chunk_.size(), true);
      chunk_.resize(static_cast<std::size_t>(*limit_ - sent_));
      ended_ = true;
      if (chan_) {
        std::lock_guard lock(chan_->mu);
        chan_->consumer_gone = true;
        chan_->cv.notify_all();
      }
      if (chunk_.empty()) throw py::stop_iteration();
    }
    sent_ += chunk_.size();
    return py::bytes(chunk_.data(), chunk_.size());
  }

  /// The trailer fields of a body iterated to its end (RES-15), once; none when it stopped early or was
  /// cut at its Content-Length. A stream's trailers() that throws is logged: the body ends without them.
  Headers trailers() {
    if (closed_ || ended_ || !at_end_ || std::exchange(trailers_taken_, true)) return {};
    GilHeldByCaller held;
    std::string error;
    Headers out;
    {
      ReleaseGil nogil;
      if (chan_) {
        std::lock_guard lock(chan_->mu);
        out = std::move(chan_->trailers);
      } else if (stream_) {
        try {
          out = stream_->trailers();
        } catch (const std::exception& e) {
          error = e.what();
        } catch (...) {
          error = "a non-standard exception";
        }
      }
    }
    if (!error.empty() && ex_)
      ex_->env.errors().write("csgi: the response stream's trailers() threw; the body ends without them: " + error);
    return out;
  }

  /// Called by Python (close(), deallocation): the GIL is held.
  void close() {
    if (closed_) return;
    GilHeldByCaller held;
    closed_ = true;
    if (stream_) {
      ReleaseGil nogil;
      try {
        stream_->close();
      } catch (...) {
      }
    }
    if (chan_) {
      // The env and the input stay the app's until its writer is closed or dropped (APP-4); write()
      // returns false from now on, so a well-behaved app closes at once.
      ReleaseGil nogil;
      std::unique_lock lock(chan_->mu);
      chan_->consumer_gone = true;
      chan_->cv.notify_all();
      chan_->cv.wait(lock, [&] { return chan_->writer_closed; });
    }
    stream_.reset();
    chan_.reset();
    if (ex_) give_back(std::move(ex_));
  }

private:
  void log_length_error(std::uint64_t produced, bool over) {
    if (!ex_) return;
    std::string what = over ? "csgi: the response body ran past its Content-Length: declared "
                            : "csgi: the response body fell short of its Content-Length: declared ";
    what += std::to_string(*limit_);
    what += over ? ", produced at least " : ", produced ";
    what += std::to_string(produced);
    what += over ? "; the excess was dropped (ADP-13) (" : "; the response is ended as failed (ADP-13) (";
    what += ex_->env.get(keys::REQUEST_METHOD);
    what += ' ';
    what += ex_->env.get(keys::REQUEST_URI);
    what += ')';
    ex_->env.errors().write(what);
  }

  bool next_from_channel() {
    std::unique_lock lock(chan_->mu);
    chan_->cv.wait(lock, [&] { return !chan_->chunks.empty() || chan_->writer_closed; });
    if (chan_->chunks.empty()) return false;
    chunk_ = std::move(chan_->chunks.front());
    chan_->chunks.pop_front();
    chan_->queued -= chunk_.size();
    chan_->cv.notify_all();
    return true;
  }

  std::unique_ptr<Exchange> ex_;
  StreamPtr stream_;
  std::shared_ptr<Channel> chan_;
  std::string chunk_;
  bool closed_ = false;
  std::optional<std::uint64_t> limit_;
  std::uint64_t sent_ = 0;
  bool ended_ = false;  // cut at limit_: the iteration is over
  bool at_end_ = false;  // next() found the end of the body
  bool trailers_taken_ = false;
};

/// A separate open file description for a FileBody (so seeking it moves no one else's offset).
int open_body_file(const FileBody& f) {
  if (f.file) {
    std::string proc = "/proc/self/fd/" + std::to_string(f.file->fd());
    int fd = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : ::fcntl(f.file->fd(), F_DUPFD_CLOEXEC, 0);
  }
  return ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
}

/// The Content-Length the app declared, when it is one well-formed number.
std::optional<std::uint64_t> declared_length(const Headers& headers) {
  auto cl = headers.get("Content-Length");
  if (!cl) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), v);
  if (ec != std::errc() || p != cl->data() + cl->size()) return std::nullopt;
  return v;
}

/// The Content-Length a complete or file body goes out with (ADP-13): its real length (a differing
/// `declared`, the app's, is logged), except that an empty answer to HEAD keeps the app's.
bool is_head(const Env& env) { return env.get(keys::REQUEST_METHOD) == "HEAD"; }

/// The length a stream is held to (ADP-13): the one the app declared, none for HEAD (the host sends no
/// body). REQUEST_METHOD is read only when there is a length.
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

/// What the app answered: its response, the Channel of a delayed response that streams, and what went
/// wrong (the response is then a 500, the message written to csgi.errors).
struct Outcome {
  Response res;
  std::shared_ptr<Channel> chan;
  std::string failure;
};

/// Runs the app on the exchange's env, on a thread that does not hold the GIL (a delayed response is
/// waited for).
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

/// run_app_nogil() from a thread that holds the GIL: released while the app runs.
Outcome run_app(const App& app, Exchange& ex) {
  ReleaseGil nogil;
  return run_app_nogil(app, ex);
}

/// The env of an ASGI http scope (asgi_env.hpp) with its csgi.input and csgi.errors: `body` is the whole
/// request body (bytes; None: empty) or an object whose read() gives it; errors go to sys.stderr.
void fill_env_from_scope(Exchange& ex, PyObject* scope, PyObject* body) {
  Env& env = ex.env;
  scope_to_env(env, ex.request_uri, scope);
  std::string_view whole;
  if (body == Py_None || bytes_of(body, whole)) {
    ex.memory_input.assign(std::string(whole));
    env.set_object<Input>(keys::input, &ex.memory_input);
  } else {
    Py_INCREF(body);
    ex.environ = body;
    std::int64_t length = 0;
    std::string_view cl = env.get(keys::CONTENT_LENGTH);
    auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
    bool has_length = !cl.empty() && ec == std::errc() && p == cl.data() + cl.size() && length >= 0;
    ex.input.reset(body, has_length ? length : 0, !has_length);
    env.set_object<Input>(keys::input, &ex.input);
  }
  if (PyObject* err = PySys_GetObject("stderr"); err && err != Py_None) {
    Py_INCREF(err);
    ex.errors_obj = err;
    ex.errors.reset(err);
    env.set_object<ErrorStream>(keys::errors, &ex.errors);
  }
}


}  // namespace

AppHandle::~AppHandle() {
  GilHeldByCaller held;  // deallocated by Python: app_ may hold the last reference to a Python app
  app_ = nullptr;
  for (PyObject*& s : status_lines_) Py_CLEAR(s);
  for (CachedHeader& h : headers_) Py_CLEAR(h.tuple);
}

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

namespace {

/// The ASGI form of what the app answered: (status, header pairs, body bytes or a BodyIterator that
/// takes the exchange along).
py::object asgi_answer(std::unique_ptr<Exchange>& ex, Outcome& out) {
  Response& res = out.res;
  std::shared_ptr<Channel>& chan = out.chan;
  if (!out.failure.empty()) ex->pending.clear();
  bool no_body = status_has_no_body(res.status);
  std::optional<std::uint64_t> declared = no_body ? std::nullopt : declared_length(res.headers);
  std::optional<std::uint64_t> limit = stream_limit(declared, ex->env);
  auto answer = [&](PyObject* headers, PyObject* content) {
    PyObject* t = PyTuple_New(3);
    if (!t) {
      Py_DECREF(headers);
      Py_DECREF(content);
      throw_python_error();
    }
    PyTuple_SET_ITEM(t, 0, PyLong_FromLong(res.status));
    PyTuple_SET_ITEM(t, 1, headers);
    PyTuple_SET_ITEM(t, 2, content);
    return py::reinterpret_steal<py::object>(t);
  };
  auto iter = [](BodyIter* it) { return py::cast(it, py::return_value_policy::take_ownership).release().ptr(); };
  if (chan) return answer(asgi_headers(res.headers, declared), iter(new BodyIter(std::move(ex), nullptr, std::move(chan), limit)));
  if (no_body) res.body = std::string();
  bool framed_by_app = res.headers.has("Transfer-Encoding");
  if (auto* s = std::get_if<std::string>(&res.body)) {
    std::optional<std::uint64_t> cl;
    if (!no_body && !framed_by_app) cl = complete_length(declared, s->size(), ex->env);
    PyObject* headers = asgi_headers(res.headers, cl);
    return answer(headers, bytes_object(*s));
  }
  if (auto* b = std::get_if<SharedBytes>(&res.body)) {
    std::string_view bytes = *b ? std::string_view(**b) : std::string_view();
    std::optional<std::uint64_t> cl;
    if (!framed_by_app) cl = complete_length(declared, bytes.size(), ex->env);
    PyObject* headers = asgi_headers(res.headers, cl);
    return answer(headers, bytes_object(bytes));
  }
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    std::optional<std::uint64_t> cl = complete_length(declared, f->size(), ex->env);
    PyObject* headers = asgi_headers(res.headers, cl);
    StreamPtr st = file_stream(std::move(*f));
    std::optional<std::uint64_t> file_limit = stream_limit(cl, ex->env);
    return answer(headers, iter(new BodyIter(std::move(ex), std::move(st), nullptr, file_limit)));
  }
  StreamPtr st = std::get<StreamPtr>(std::move(res.body));
  PyObject* headers = asgi_headers(res.headers, declared);
  if (!st) return answer(headers, bytes_object(std::string_view()));
  return answer(headers, iter(new BodyIter(std::move(ex), std::move(st), nullptr, limit)));
}

/// Runs csgi.asgi requests on worker threads that never take the GIL: the loop builds the env (submit),
/// a worker runs the app, and the loop, woken through an eventfd for a batch of finished requests
/// (drain), turns each answer into the ASGI form and sets its future. Thread-safe between the loop and
/// the workers; submit() and drain() need the GIL.
class AsgiWorkers {
public:
  explicit AsgiWorkers(unsigned threads) : threads_(std::max(threads, 1u)) {
    fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~AsgiWorkers() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (!workers_.empty()) {
      ReleaseGil nogil;  // a worker may need the GIL (csgi.errors) to finish its request
      for (std::thread& t : workers_) t.join();
    }
    for (auto* q : {&queue_, &done_})
      for (Job& j : *q) j.drop();
    ::close(fd_);
  }
  int fd() const noexcept { return fd_; }

  void submit(py::handle app, PyObject* scope, PyObject* body, py::handle future) {
    if (!PyDict_Check(scope)) throw py::type_error("an ASGI scope is a dict");
    AppHandle& handle = app.cast<AppHandle&>();
    Job job;
    job.ex = take_exchange();
    job.ex->interp = PyThreadState_Get()->interp;
    try {
      fill_env_from_scope(*job.ex, scope, body);
    } catch (...) {
      give_back(std::move(job.ex));
      throw;
    }
    job.app = handle.app();
    job.future = Py_NewRef(future.ptr());
    {
      std::lock_guard lock(mu_);
      if (workers_.empty())
        for (unsigned i = 0; i < threads_; ++i) workers_.emplace_back([this] { work(); });
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  /// On the loop: sets the futures of the finished requests (dropped when cancelled meanwhile).
  void drain() {
    std::uint64_t v = 0;
    [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
    std::deque<Job> done;
    {
      std::lock_guard lock(mu_);
      signalled_ = false;
      done.swap(done_);
    }
    for (Job& j : done) {
      PyObject* fut = j.future;
      j.future = nullptr;
      settle(fut, j);
      Py_DECREF(fut);
      if (j.ex) give_back(std::move(j.ex));
    }
  }

private:
  struct Job {
    std::unique_ptr<Exchange> ex;
    App app;
    Outcome out;
    PyObject* future = nullptr;  // owned; touched with the GIL only
    void drop() noexcept {
      Py_CLEAR(future);
      if (ex) give_back(std::move(ex));
    }
  };

  static void settle(PyObject* fut, Job& j) {
    try {
      py::object answer = asgi_answer(j.ex, j.out);
      PyObject* done = PyObject_CallMethod(fut, "done", nullptr);
      int is_done = done ? PyObject_IsTrue(done) : -1;
      Py_XDECREF(done);
      if (is_done == 0) {
        PyObject* name = PyUnicode_InternFromString("set_result");
        PyObject* r = name ? PyObject_CallMethodOneArg(fut, name, answer.ptr()) : nullptr;
        Py_XDECREF(name);
        Py_XDECREF(r);
      }
    } catch (...) {
      set_python_error();
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyErr_NormalizeException(&type, &value, &tb);
      PyObject* name = PyUnicode_InternFromString("set_exception");
      PyObject* r = value && name ? PyObject_CallMethodOneArg(fut, name, value) : nullptr;
      Py_XDECREF(name);
      Py_XDECREF(r);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
    }
    PyErr_Clear();  // a future of a loop closed meanwhile: nobody waits for it
  }

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job.out = run_app_nogil(job.app, *job.ex);
      job.app = nullptr;
      std::lock_guard lock(mu_);
      done_.push_back(std::move(job));
      if (!signalled_) {
        signalled_ = true;
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
      }
    }
  }

  unsigned threads_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_, done_;
  std::vector<std::thread> workers_;
  bool signalled_ = false;
  bool stop_ = false;
};

}  // namespace

py::object AppHandle::asgi_call(PyObject* scope, PyObject* body) {
  if (!PyDict_Check(scope)) throw py::type_error("an ASGI scope is a dict");
  if (body == Py_None && !scope_has_no_body(scope)) return py::none();
  std::unique_ptr<Exchange> ex = take_exchange();
  ex->interp = PyThreadState_Get()->interp;
  struct GiveBack {
    std::unique_ptr<Exchange>& ex;
    ~GiveBack() {
      if (ex) give_back(std::move(ex));
    }
  } give_back_guard{ex};
  fill_env_from_scope(*ex, scope, body);
  Outcome out = run_app(app_, *ex);
  return asgi_answer(ex, out);
}

void bind_to_wsgi(py::module_& m) {
  py::class_<BodyIter>(m, "BodyIterator", py::module_local(),
                       "The body of a csgi response streamed to a WSGI host; close() closes the C++ stream.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &BodyIter::next)
      .def("close", &BodyIter::close)
      .def(
          "trailers", [](BodyIter& it) { return py::reinterpret_steal<py::object>(asgi_trailers(it.trailers())); },
          "The ASGI trailer fields once the body was iterated to its end (RES-15): (name, value) pairs.");
  py::class_<AsgiWorkers>(m, "AsgiWorkers", py::module_local(),
                          "csgi.asgi's worker threads: C++ apps run there without the GIL; finished requests "
                          "are handed back in batches through an eventfd the event loop watches.")
      .def(py::init<unsigned>(), py::arg("threads"))
      .def("fileno", &AsgiWorkers::fd)
      .def(
          "submit",
          [](AsgiWorkers& w, py::handle app, py::handle scope, py::handle body, py::handle future) {
            w.submit(app, scope.ptr(), body.ptr(), future);
          },
          py::arg("app"), py::arg("scope"), py::arg("body"), py::arg("future"),
          "Builds the env of `scope` (body: bytes) and queues the app's call; `future` gets the answer.")
      .def("drain", &AsgiWorkers::drain, "On the event loop: sets the futures of the finished requests.");
}

}  // namespace csgi::python
