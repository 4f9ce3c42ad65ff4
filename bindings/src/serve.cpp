// Serving Python apps on the csgi adapters from inside the extension:
//   - csgi.serve(app, listen=…, threads=…, workers=…): the standalone server in this process, the GIL
//     released while it runs (re-taken per request by the WSGI bridge), SIGINT/SIGTERM stop it gracefully
//     and Python's own signal handlers are put back afterwards;
//   - the capsule csgi._csgi._embed_api (embed_api.hpp) used by `csgi serve --wsgi` and `csgi-fcgi --wsgi`;
//   - fork safety: a prefork master forks from the thread that released the GIL for serving; around that
//     fork() the thread takes the GIL back and runs PyOS_BeforeFork / PyOS_AfterFork_Parent / _Child, as
//     os.fork() does, so the worker's interpreter (GIL, import lock, threading module) is consistent.
#include <pthread.h>
#include <pybind11/stl.h>
#include <signal.h>

#include <csignal>
#include <mutex>

#include "common.hpp"
#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/core/process.hpp"
#include "embed_api.hpp"
#include "gil.hpp"
#include "serving.hpp"

#ifdef CSGI_PY_STANDALONE
#include "csgi/adapters/standalone/server.hpp"
#endif
#ifdef CSGI_PY_RUNNER
#include "csgi/adapters/runner/runner.hpp"
#endif

namespace csgi::python {
namespace {

// ------------------------------------------------------------------------------------------ fork hooks

thread_local ReleaseGil* t_serving = nullptr;  // this thread's GIL release for serving, if any
thread_local bool t_forking = false;           // prepare() took the GIL for a fork

void before_fork() noexcept {
  if (!t_serving || this_thread_holds_gil() || !Py_IsInitialized()) return;
  PyEval_RestoreThread(t_serving->saved_state());
  PyOS_BeforeFork();
  t_forking = true;
}

void after_fork_parent() noexcept {
  if (!t_forking) return;
  t_forking = false;
  PyOS_AfterFork_Parent();
  t_serving->saved_state() = PyEval_SaveThread();
}

void after_fork_child() noexcept {
  if (!t_forking) return;
  t_forking = false;
  PyOS_AfterFork_Child();
  t_serving->saved_state() = PyEval_SaveThread();
}

void install_fork_hooks() {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(before_fork, after_fork_parent, after_fork_child); });
}

/// Releases the GIL on this thread while it serves; forks from this thread keep Python consistent.
class ServingRelease {
public:
  ServingRelease() : prev_(t_serving) {
    install_fork_hooks();
    t_serving = &release_;
  }
  ~ServingRelease() { t_serving = prev_; }

private:
  ReleaseGil* prev_;
  ReleaseGil release_;
};

// ------------------------------------------------------------------------------------ process end

/// Calls a Python callable once per process when the process ends: at exit() and before a prefork
/// worker's _exit() (the adapters flush every registered log file then; this "file" runs the callable
/// in its flush). Used for the ASGI lifespan shutdown. Skipped once Python is finalised.
class AtProcessEnd final : public log_files::File {
public:
  explicit AtProcessEnd(py::object f) : f_(std::make_shared<PyRef>(std::move(f))) { log_files::add(*this); }
  void reopen() override {}
  void flush() noexcept override {
    unsigned gen = fork_generation();
    if (ran_ == gen + 1 || !Py_IsInitialized() || _Py_IsFinalizing()) return;
    ran_ = gen + 1;
    AcquireGil gil(f_->interp());
    if (!gil) return;
    PyObject* r = PyObject_CallNoArgs(f_->get());
    if (!r) PyErr_WriteUnraisable(f_->get());
    Py_XDECREF(r);
  }

private:
  std::shared_ptr<PyRef> f_;  // never released: the process is ending when it is called
  unsigned ran_ = 0;
};

// ----------------------------------------------------------------------------------------- embed API

ServingRelease* g_embedded_release = nullptr;  // the embedding program's main thread, while it serves

bool api_load_kind(const char* spec, App* out, int asgi_workers) {
  try {
    *out = load_spec(spec, asgi_workers);
    return true;
  } catch (PythonErrorSet&) {
    return false;
  } catch (py::error_already_set& e) {
    e.restore();
    return false;
  } catch (const std::exception& e) {
    // pybind11 exceptions (type_error, …) and C++ ones: as a Python RuntimeError for the embedder to print
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return false;
  }
}

bool api_load(const char* spec, App* out) { return api_load_kind(spec, out, -1); }

bool api_load_asgi(const char* spec, unsigned workers, App* out) {
  return api_load_kind(spec, out, static_cast<int>(workers));
}

void api_release_for_serving() {
  if (!g_embedded_release) g_embedded_release = new ServingRelease();
}

void api_reacquire() {
  delete std::exchange(g_embedded_release, nullptr);
}

const csgi_python_embed_api g_api{CSGI_PY_EMBED_API_VERSION, detail::core_layout_tag(), sizeof(App),
                                  &api_load, &api_release_for_serving, &api_reacquire,
                                  &api_load_asgi};

// -------------------------------------------------------------------------------------- csgi.serve()

#ifdef CSGI_PY_STANDALONE
/// Saves the dispositions of the signals the server takes over and puts them back.
class SavedSignals {
public:
  SavedSignals() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], nullptr, &saved_[i]);
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
  }
  ~SavedSignals() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
    ::pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
  }

private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGCHLD, SIGPIPE};
  struct sigaction saved_[std::size(kSignals)] {};
  sigset_t mask_{};
};

std::vector<std::string> listen_list(py::handle listen) {
  if (listen.is_none()) return {};
  if (PyUnicode_Check(listen.ptr())) return {listen.cast<std::string>()};
  return listen.cast<std::vector<std::string>>();
}

int serve(py::handle app_obj, py::handle listen, unsigned threads, unsigned workers, std::string script_name,
          std::string access_log, std::string error_log, py::object on_listening, std::vector<std::string> options) {
  GilHeldByCaller held;  // called from Python; the app and callback may be dropped with the GIL held
  if (threads < 1) throw py::value_error("threads must be at least 1");
  if (!script_name.empty() && (script_name.front() != '/' || script_name.back() == '/'))
    throw py::value_error("script_name must be empty or like /prefix");
#ifdef CSGI_PY_RUNNER
  // The keywords as csgi serve's options, then `options`: one parser, checked together.
  std::vector<std::string> words = {"csgi.serve", "--threads", std::to_string(threads), "--workers",
                                    std::to_string(workers)};
  for (std::string& l : listen_list(listen)) words.insert(words.end(), {"--listen", std::move(l)});
  if (!script_name.empty()) words.insert(words.end(), {"--script-name", script_name});
  if (!access_log.empty()) words.insert(words.end(), {"--access-log", access_log});
  if (!error_log.empty()) words.insert(words.end(), {"--error-log", error_log});
  words.insert(words.end(), options.begin(), options.end());
  runner::Options server = server_options(std::move(words));
  standalone::ServerOptions& opt = server.server;
#else
  if (!options.empty()) throw py::value_error("options: this build has no csgi::runner to read them");
  standalone::ServerOptions opt;
  opt.listen = listen_list(listen);
  opt.threads = threads;
  opt.workers = workers;
  opt.script_name = std::move(script_name);
  opt.error_log = std::move(error_log);
#endif
  App app = to_app(app_obj);
#ifndef CSGI_PY_RUNNER
  if (!access_log.empty()) {
    mw::AccessLogOptions a;
    a.path = access_log == "-" ? "/dev/stdout" : access_log;
    app = wrap<mw::AccessLog>(std::move(app), a);
  }
#endif
  std::shared_ptr<PyRef> callback;
  if (!on_listening.is_none()) {
    if (!PyCallable_Check(on_listening.ptr())) throw py::type_error("on_listening must be callable");
    callback = std::make_shared<PyRef>(std::move(on_listening));
    opt.on_listening = [callback](const std::string& url) {
      AcquireGil gil(callback->interp());
      if (!gil) return;
      PyObject* s = PyUnicode_FromStringAndSize(url.data(), static_cast<Py_ssize_t>(url.size()));
      PyObject* r = s ? PyObject_CallOneArg(callback->get(), s) : nullptr;
      Py_XDECREF(s);
      if (!r) PyErr_WriteUnraisable(callback->get());
      Py_XDECREF(r);
    };
  }
  std::string failure;
  int rc = serve_released(
      [&] {
        // the server owns the app: it (and its Python references) is dropped while the GIL is free
#ifdef CSGI_PY_RUNNER
        return runner::serve(std::move(app), server);
#else
        standalone::Server server(std::move(app), std::move(opt));
        return server.run();
#endif
      },
      failure);
  callback.reset();
  if (!failure.empty()) throw std::runtime_error("csgi.serve: " + failure);
  return rc;
}
#endif

}  // namespace

App load_spec(const char* spec, int asgi_workers) {
  if (asgi_workers >= 0) {
    py::object mod = py::module_::import("csgi._asgi_host");
    return to_app(mod.attr("load_asgi_app")(spec, asgi_workers));
  }
  py::object mod = py::module_::import("csgi._wsgi");
  py::object obj = mod.attr("import_wsgi_app")(spec, py::none(), "wsgi");
  return to_app(obj);
}

#ifdef CSGI_PY_STANDALONE
int serve_released(const std::function<int()>& serve, std::string& failure) {
  SavedSignals saved;
  ServingRelease nogil;
  try {
    return serve();
  } catch (const std::exception& e) {
    failure = e.what();
    return 1;
  }
}
#endif

void bind_servers(py::module_& m) {
  m.attr("_embed_api") = py::capsule(static_cast<const void*>(&g_api), CSGI_PY_EMBED_CAPSULE);
  m.def(
      "_at_process_end", [](py::object f) { new AtProcessEnd(std::move(f)); }, py::arg("f"),
      "Calls f() once per process when it ends: at exit, and before a prefork worker of a csgi server "
      "leaves with _exit() (where atexit handlers do not run).");
#ifdef CSGI_PY_STANDALONE
  m.def("serve", &serve, py::arg("app"), py::kw_only(), py::arg("listen") = py::none(), py::arg("threads") = 1u,
        py::arg("workers") = 0u, py::arg("script_name") = std::string(), py::arg("access_log") = std::string(),
        py::arg("error_log") = std::string(), py::arg("on_listening") = py::none(),
        py::arg("options") = std::vector<std::string>(),
        R"doc(
Serves `app` (a csgi.App or any WSGI callable) with the csgi standalone HTTP/1.1 server until SIGINT
(Ctrl-C) or SIGTERM stops it gracefully; returns the exit status (0).

listen: "host:port", "[v6]:port", ":port", "unix:/path", or a list of them (default 127.0.0.1:5000).
threads: io threads (they share the GIL for Python apps). workers: N > 0 forks N worker processes under
a master that restarts any that dies — use processes for CPU-bound Python. script_name: a mount prefix.
access_log / error_log: files ("-" = stdout for the access log; csgi.errors goes to stderr by default).
on_listening(url): called once per address when listening (default: "csgi: listening on URL" printed).
options: more options of `csgi serve`, as its command line has them (["--max-body-bytes", "65536",
"--graceful-timeout", "5"]; `python3 -m csgi --help` lists them); a bad one raises ValueError.

The GIL is released while the server runs and re-taken per request. Python's signal handlers are put
back when it returns.
)doc");
#endif
#ifdef CSGI_PY_RUNNER
  bind_command(m);
#endif
}

}  // namespace csgi::python
