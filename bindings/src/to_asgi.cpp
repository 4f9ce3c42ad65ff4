// C++ → Python: a csgi app as the http part of an ASGI 3 application (csgi.asgi(), python/csgi/_asgi.py).
// The scope becomes the env (asgi_env.hpp); the app runs inline (AppHandle::asgi_call) or on worker
// threads that never take the GIL (AsgiWorkers), and its answer goes back as (status, headers, body bytes
// or an iterator of chunks). The host is handed one Content-Length, the one the body keeps to (ADP-13).
#include "to_python.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <system_error>

#include "asgi_env.hpp"
#include "csgi/core/on_response.hpp"

namespace csgi::python {
namespace {

/// The env of an ASGI http scope (asgi_env.hpp) with its csgi.input and csgi.errors: `body` is the whole
/// request body (bytes; None: empty) or an object whose read() gives it; errors go to sys.stderr.
void fill_env_from_scope(Exchange& ex, PyObject* scope, PyObject* body) {
  Env& env = ex.env;
  ex.scope_env.start(env, scope);
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

void bind_to_asgi(py::module_& m) {
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
