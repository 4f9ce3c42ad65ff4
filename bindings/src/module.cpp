// The extension module csgi._csgi (the package csgi re-exports it; see bindings/python/csgi).
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>

#include "asgi_websocket.hpp"
#include "common.hpp"
#include "csgi/core/app_library.hpp"
#include "csgi/core/builder.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/test_client.hpp"
#include "gil.hpp"

namespace csgi::python {

PyRef::~PyRef() {
  AcquireGil gil(interp_);
  if (gil) Py_CLEAR(obj_);
}

namespace {

/// csgi.Layer: a C++ middleware (or a Python one adapted) that Builder.use() accepts.
struct LayerHandle {
  Layer layer;
  ~LayerHandle() {
    GilHeldByCaller held;  // deallocated by Python: a Python layer's last PyRef is dropped right here
    layer = nullptr;
  }
};

/// Deletes a Builder deallocated by Python, marking the GIL as held for the Python apps and layers it drops.
struct BuilderDeleter {
  void operator()(Builder* b) const noexcept {
    GilHeldByCaller held;
    delete b;
  }
};
using BuilderHolder = std::unique_ptr<Builder, BuilderDeleter>;

/// A Python middleware factory `f(wsgi_app) -> wsgi_app` as a Layer.
Layer python_layer(py::object factory) {
  auto f = std::make_shared<PyRef>(std::move(factory));
  return [f](App next) -> App {
    AcquireGil gil(f->interp());
    if (!gil) throw std::runtime_error("the Python interpreter is shutting down");
    py::object inner = py::cast(new AppHandle(std::move(next)), py::return_value_policy::take_ownership);
    PyObject* wrapped = PyObject_CallOneArg(f->get(), inner.ptr());
    if (!wrapped) throw_python_error();
    return to_app(py::reinterpret_steal<py::object>(wrapped));
  };
}

Layer to_layer(py::handle obj) {
  if (py::isinstance<LayerHandle>(obj)) return obj.cast<LayerHandle&>().layer;
  if (PyCallable_Check(obj.ptr())) return python_layer(py::reinterpret_borrow<py::object>(obj));
  throw py::type_error("Builder.use() takes a csgi.Layer or a callable wsgi_app -> wsgi_app");
}

}  // namespace

void set_python_error() noexcept {
  try {
    throw;
  } catch (PythonErrorSet&) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "csgi: Python error lost");
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::translate_exception(std::current_exception());
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "csgi: unknown C++ exception");
  }
}

py::object make_layer_object(Layer layer) {
  return py::cast(new LayerHandle{std::move(layer)}, py::return_value_policy::take_ownership);
}

namespace {

py::object app_object(App app) {
  return py::cast(new AppHandle(std::move(app)), py::return_value_policy::take_ownership);
}

py::list header_list(const Headers& h) {
  py::list out;
  for (const Header& x : h)
    out.append(py::make_tuple(py::reinterpret_steal<py::str>(latin1_str(x.name)),
                              py::reinterpret_steal<py::str>(latin1_str(x.value))));
  return out;
}

/// tp_call of csgi.App: app(environ, start_response) straight to AppHandle::call, without pybind11's
/// argument dispatch (the per-request path of every WSGI host).
PyObject* app_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if ((kwargs && PyDict_GET_SIZE(kwargs) != 0) || PyTuple_GET_SIZE(args) != 2) {
    PyErr_SetString(PyExc_TypeError, "csgi.App takes two positional arguments: (environ, start_response)");
    return nullptr;
  }
  return call_on_instance<AppHandle>(self, [args](AppHandle& h) {
    return h.call(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1)).release().ptr();
  });
}

/// csgi.App._asgi(scope, body): AppHandle::asgi_call as a METH_FASTCALL method (per request of csgi.asgi).
PyObject* app_asgi(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  if (n != 2) {
    PyErr_SetString(PyExc_TypeError, "csgi.App._asgi takes two arguments: (scope, body)");
    return nullptr;
  }
  return call_on_instance<AppHandle>(self, [args](AppHandle& h) { return h.asgi_call(args[0], args[1]).release().ptr(); });
}

PyMethodDef app_asgi_def = {"_asgi", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(app_asgi)), METH_FASTCALL,
                            "ASGI: (status, headers, body bytes or iterator) for an http scope and its request "
                            "body; with body None, None unless the scope says the request has no body."};

}  // namespace

void bind_app(py::module_& m) {
  py::class_<AppHandle> cls(m, "App", py::module_local(), R"doc(
A csgi app seen from Python, callable as a PEP 3333 WSGI application.

App(wsgi_app) wraps a Python WSGI callable as a csgi app (so it can sit behind C++ middleware, be mounted
beside C++ apps, or be served by the csgi adapters). Apps from load_app(), Builder.build() and the
built-ins are App objects already. Calling an App releases the GIL while C++ code runs.
)doc");
  cls.def(py::init([](py::object wsgi_app) {
             if (py::isinstance<AppHandle>(wsgi_app)) return new AppHandle(wsgi_app.cast<AppHandle&>().app());
             return new AppHandle(from_wsgi(std::move(wsgi_app)));
           }),
           py::arg("wsgi_app"))
      .def("__call__", &AppHandle::call, py::arg("environ"), py::arg("start_response"),
           "WSGI: app(environ, start_response) -> iterable of bytes");
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_call = &app_tp_call;
  PyObject* asgi = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &app_asgi_def);
  if (!asgi) throw_python_error();
  cls.attr("_asgi") = py::reinterpret_steal<py::object>(asgi);
}

namespace {

/// pybind11's one-time setup (detail::get_internals) takes the GIL with PyGILState_Ensure(), which
/// binds a thread to its MAIN-interpreter state: imported first in a sub-interpreter (a uWSGI mount whose
/// main interpreter never imported csgi), that waits forever for the GIL this thread already holds with
/// the sub-interpreter's state. So the setup runs with the thread's main-interpreter state swapped in (the
/// GIL stays held), exactly as when csgi is imported first in the main interpreter. pybind11's state is
/// per process either way: the extension module is loaded once and shared by every interpreter.
void ensure_pybind11_internals() {
  auto** internals = py::detail::get_internals_pp();
  PyThreadState* cur = PyThreadState_Get();
  if ((internals && *internals) || cur->interp == PyInterpreterState_Main()) {
    py::detail::get_internals();
    return;
  }
  PyThreadState* main_state = PyGILState_GetThisThreadState();
  if (!main_state || main_state->interp != PyInterpreterState_Main())
    main_state = PyThreadState_New(PyInterpreterState_Main());  // becomes this thread's PyGILState state
  PyThreadState_Swap(main_state);
  py::detail::get_internals();
  PyThreadState_Swap(cur);
}

void init_module(py::module_& m);

py::module_::module_def g_module_def;

}  // namespace

// The extension's copy of the log file registry, linked to the server's by `csgi serve --wsgi` (embed.cpp).
extern "C" __attribute__((visibility("default"))) const csgi::log_files::Peer* csgi_log_files_v1() {
  return csgi::log_files::self();
}

// What PYBIND11_MODULE(_csgi, m) expands to, with ensure_pybind11_internals() for its setup.
extern "C" PYBIND11_EXPORT PyObject* PyInit__csgi() {
  PYBIND11_CHECK_PYTHON_VERSION
  ensure_pybind11_internals();
  auto m = py::module_::create_extension_module("_csgi", nullptr, &g_module_def);
  try {
    init_module(m);
    return m.ptr();
  }
  PYBIND11_CATCH_INIT_EXCEPTIONS
}

namespace {

void init_module(py::module_& m) {
  m.doc() = "csgi — the C++ Server Gateway Interface: C++ apps as WSGI apps, WSGI apps on csgi servers.";
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PythonErrorSet&) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "csgi: Python error lost");
    }
  });
  m.attr("spec_version") = std::string(keys::spec_version);

  bind_app(m);
  bind_streams(m);
  bind_body_iterator(m);
  bind_to_asgi(m);
  bind_from_wsgi(m);
  bind_from_asgi(m);
  bind_asgi_websocket(m);
  bind_servers(m);

  // The bound methods below may run Python layers (build) or drop Python apps and layers: each marks the
  // GIL as held by its caller, so the AcquireGil inside is a no-op on any thread (gil.hpp).
  py::class_<LayerHandle>(m, "Layer", py::module_local(),
                          "A middleware layer for Builder.use(): wraps the next app.")
      .def(py::init([](py::object factory) { return LayerHandle{to_layer(factory)}; }), py::arg("factory"),
           "Layer(f): a Python middleware factory f(wsgi_app) -> wsgi_app as a layer")
      .def("__call__",
           [](LayerHandle& l, py::handle app) {
             GilHeldByCaller held;
             return app_object(l.layer(to_app(app)));
           },
           py::arg("app"), "Wraps an app in this layer.");

  py::class_<Builder, BuilderHolder>(m, "Builder", py::module_local(), R"doc(
Composes middleware around an app (Plack::Builder). The first use() is the outermost layer.
Apps may be csgi.App objects or any Python WSGI callable; layers may be csgi.Layer objects (C++
middleware, e.g. from csgi.mw) or Python factories f(wsgi_app) -> wsgi_app.
)doc")
      .def(py::init<>())
      .def("use",
           [](Builder& b, py::handle layer) -> Builder& {
             GilHeldByCaller held;
             return b.use(to_layer(layer));
           },
           py::arg("layer"), py::return_value_policy::reference_internal)
      .def("mount",
           [](Builder& b, std::string location, py::handle app) -> Builder& {
             GilHeldByCaller held;
             return b.mount(std::move(location), to_app(app));
           },
           py::arg("location"), py::arg("app"), py::return_value_policy::reference_internal)
      .def("run",
           [](Builder& b, py::handle app) -> Builder& {
             GilHeldByCaller held;
             return b.run(to_app(app));
           },
           py::arg("app"), py::return_value_policy::reference_internal)
      .def("build",
           [](const Builder& b) {
             GilHeldByCaller held;
             return app_object(b.build());
           },
           "The composed app (csgi.App).")
      .def("to_app",
           [](Builder& b, py::handle app) {
             GilHeldByCaller held;
             Builder copy = b;
             copy.run(to_app(app));
             return app_object(copy.build());
           },
           py::arg("app"), "The layers around `app` (a csgi.App or WSGI callable), as a csgi.App.")
      .def("wrap",
           [](const Builder& b, py::handle app) {
             GilHeldByCaller held;
             return app_object(b.wrap(to_app(app)));
           },
           py::arg("app"), "The layers around `app`, ignoring run()/mount().");

#ifdef CSGI_PY_MIDDLEWARE
  bind_middleware(m);
#endif

  m.def(
      "reopen_logs",
      [] {
        ReleaseGil nogil;
        return log_files::reopen_all();
      },
      "Reopens every log file of csgi's in this process by name (after logrotate renamed them), the log "
      "writers of csgi.mw.access_log and of loaded app libraries included. Returns the errors, if any.");

  m.def("load_app",
        [](const std::string& path, std::vector<std::string> args) {
          App app;
          {
            ReleaseGil nogil;
            app = csgi::load_app(path, args);
          }
          return app_object(std::move(app));
        },
        py::arg("path"), py::arg("args") = std::vector<std::string>{},
        "Loads a csgi app library (a .so exporting CSGI_APP) with its arguments, as a csgi.App.");

  m.def(
      "_env_conversions", [] { return env_conversions.load(std::memory_order_relaxed); },
      "For tests: how many env entries of C++ apps called as WSGI or ASGI apps were made from their environ or "
      "scope in this process (an entry the app never reads is never made).");

  py::module_ testing = m.def_submodule("testing", "In-memory calls of csgi apps (csgi::testing::call).");
  py::class_<testing::TestResponse>(testing, "TestResponse", py::module_local())
      .def_readonly("status", &testing::TestResponse::status)
      .def_property_readonly("headers", [](const testing::TestResponse& r) { return header_list(r.headers); })
      .def_property_readonly("body", [](const testing::TestResponse& r) { return py::bytes(r.body); })
      .def_readonly("streamed", &testing::TestResponse::streamed)
      .def_readonly("closed", &testing::TestResponse::closed)
      .def_readonly("file", &testing::TestResponse::file)
      .def_readonly("errors", &testing::TestResponse::errors)
      .def("header", &testing::TestResponse::header, py::arg("name"))
      .def("__repr__", [](const testing::TestResponse& r) {
        return "<TestResponse " + std::to_string(r.status) + ", " + std::to_string(r.body.size()) + " bytes>";
      });
  testing.def(
      "call",
      [](py::handle app, const std::string& request, std::vector<std::pair<std::string, std::string>> headers,
         py::bytes body, std::string script_name, double timeout) {
        GilHeldByCaller held;  // `a` may hold the last reference to a Python app
        if (!(timeout > 0)) throw py::value_error("timeout must be a positive number of seconds");
        App a = to_app(app);
        std::string b = body;
        testing::Options opts;
        opts.script_name = std::move(script_name);
        opts.delayed_timeout = std::chrono::milliseconds(static_cast<long long>(std::min(timeout, 1e9) * 1000));
        ReleaseGil nogil;
        return testing::call(a, request, std::move(headers), std::move(b), opts);
      },
      py::arg("app"), py::arg("request"), py::arg("headers") = std::vector<std::pair<std::string, std::string>>{},
      py::arg("body") = py::bytes(), py::arg("script_name") = std::string(), py::arg("timeout") = 30.0,
      "Calls an app in memory as an adapter would: call(app, \"GET /x?y=1\", [(name, value)], b\"body\"). "
      "A delayed response answered later from another thread is waited for, at most `timeout` seconds "
      "(then RuntimeError).");
}

}  // namespace

}  // namespace csgi::python
