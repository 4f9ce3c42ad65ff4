#pragma once
// A csgi app called from Python: what the WSGI direction (to_wsgi.cpp) and the ASGI one (to_asgi.cpp)
// share. The Exchange a request lives in (its env, csgi.input and csgi.errors over the host's objects),
// the app's call without the GIL (a delayed response waited for), the iterator a body that is not
// complete bytes is returned as, and the Content-Length rules (ADP-13).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "asgi_env.hpp"
#include "common.hpp"
#include "gil.hpp"
#include "wsgi_environ.hpp"

namespace csgi::python {

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
  AsgiScope scope_env;             // ASGI: the env's source
  PyInterpreterState* interp = nullptr;
  PyObject* environ = nullptr;       // owned: keeps every str the env points into alive (ASGI: the input)
  PyObject* errors_obj = nullptr;    // owned (ASGI: sys.stderr)
  StringInput memory_input;          // ASGI: a request body that came whole
  PendingError pending;

  /// Drops the request; needs the GIL.
  void reset() noexcept {
    env.clear();
    environ_env.reset();
    scope_env.reset();
    input.release();
    errors.release();
    pending.clear();
    Py_CLEAR(environ);
    Py_CLEAR(errors_obj);
    memory_input.assign(std::string());
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

/// An exchange for a new request: this thread's spare one, else a new one.
std::unique_ptr<Exchange> take_exchange();
/// Drops the request and keeps the exchange as this thread's spare (its Env keeps its memory); needs the GIL.
void give_back(std::unique_ptr<Exchange> ex);

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

/// What the app answered: its response, the Channel of a delayed response that streams, and what went
/// wrong (the response is then a 500, the message written to csgi.errors).
struct Outcome {
  Response res;
  std::shared_ptr<Channel> chan;
  std::string failure;
};

/// Runs the app on the exchange's env, on a thread that does not hold the GIL (a delayed response is
/// waited for).
Outcome run_app_nogil(const App& app, Exchange& ex);
/// run_app_nogil() from a thread that holds the GIL: released while the app runs.
Outcome run_app(const App& app, Exchange& ex);

/// The Content-Length the app declared, when it is one well-formed number.
std::optional<std::uint64_t> declared_length(const Headers& headers);
/// The length a stream is held to (ADP-13): the one the app declared, none for HEAD (the host sends no
/// body). REQUEST_METHOD is read only when there is a length.
std::optional<std::uint64_t> stream_limit(std::optional<std::uint64_t> declared, const Env& env);
/// The Content-Length a complete or file body goes out with (ADP-13): its real length (a differing
/// `declared`, the app's, is logged), except that an empty answer to HEAD keeps the app's.
std::optional<std::uint64_t> complete_length(std::optional<std::uint64_t> declared, std::uint64_t real, Env& env);

}  // namespace csgi::python
