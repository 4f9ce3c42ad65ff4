// `python3 -m csgi serve --wsgi|--asgi MODULE:APP [OPTIONS]`: the csgi server run by the Python program
// itself, with the command line of `csgi serve` (csgi::runner's option table and parser, plus the app
// options below). The app is imported into this interpreter and served by csgi::runner with the GIL
// released, as csgi.serve() does.
#include <sys/prctl.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include <pybind11/stl.h>

#include "csgi/adapters/runner/runner.hpp"
#include "gil.hpp"
#include "sched_policy.hpp"
#include "serving.hpp"

namespace csgi::python {
namespace {

using runner::UsageError;

const std::vector<runner::ExtraOption>& app_options() {
  static const std::vector<runner::ExtraOption> options = {
      {"wsgi", "MODULE:APP", false,
       "serve the WSGI callable APP of MODULE (default: application, then app; APP may be a.b or make_app())"},
      {"asgi", "MODULE:APP", false, "serve the ASGI 3 app APP of MODULE (FastAPI, Starlette) on an asyncio loop"},
      {"app-arg", "ARG", true, "sys.argv[1:] of the app, in order; repeatable"},
  };
  return options;
}

std::string help_text(const std::string& program) {
  std::ostringstream o;
  o << "Usage: " << program << " serve (--wsgi MODULE:APP | --asgi MODULE:APP) [--app-arg ARG]... [OPTIONS]\n"
    << "       " << program << " help | version\n\n"
    << "Serves a Python WSGI or ASGI app with the csgi server inside this Python process: the options are\n"
       "those of csgi serve (docs/standalone.md). MODULE is imported from the current directory first.\n\n"
    << runner::describe("App options", app_options()) << "\n"
    << runner::describe()
    << "\n" << runner::describe_signals()
    << "\nExit status: 0 after a graceful stop, 1 when the app or the server cannot start, 2 for a usage error.\n";
  return o.str();
}

// The modes of `csgi serve` that this program has not (it serves one Python app, with no layers): named
// here so that they are refused as such rather than as unknown options. tests/bindings checks the list
// against the MODES of `csgi --help`.
const std::vector<runner::ExtraOption>& csgi_only_options() {
  static const std::vector<runner::ExtraOption> options = {
      {"app", "LIB.so", true, ""},  {"demo", nullptr, true, ""},  {"static", "DIR", true, ""},
      {"bundle", "DIR", true, ""}, {"health", nullptr, true, ""}, {"metrics", nullptr, true, ""},
      {"psgi", "APP.psgi", true, ""}, {"rack", "CONFIG.ru", true, ""},
  };
  return options;
}

struct Command {
  std::string command;  // "serve", "help", "version"
  runner::Parsed parsed;
  std::string spec;
  bool asgi = false;
};

Command parse_command(std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  int argc = static_cast<int>(argv.size()), first = 1;
  Command c;
  if (argc > 1 && argv[1][0] != '-') {
    c.command = argv[1];
    first = 2;
  }
  if (!c.command.empty() && c.command != "serve" && c.command != "help" && c.command != "version")
    throw UsageError("unknown command '" + c.command + "' (commands: serve, help, version)");
  std::vector<runner::ExtraOption> known = app_options();
  known.insert(known.end(), csgi_only_options().begin(), csgi_only_options().end());
  c.parsed = runner::parse(argc, argv.data(), first, known);
  for (const runner::ExtraOption& o : csgi_only_options())
    if (c.parsed.has(o.name))
      throw UsageError("--" + std::string(o.name) + " is not available here: python3 -m csgi serve serves one --wsgi or "
                       "--asgi app; the csgi program has it (csgi serve --" + o.name + " ... --wsgi MODULE:APP)");
  if (c.parsed.version) c.command = "version";
  if (c.parsed.help || (!c.command.empty() && c.command != "serve")) return c;
  if (c.command.empty()) throw UsageError("give a command: serve, help or version");
  bool wsgi = c.parsed.has("wsgi");
  c.asgi = c.parsed.has("asgi");
  if (wsgi == c.asgi) throw UsageError("give one of --wsgi MODULE:APP and --asgi MODULE:APP");
  c.spec = c.parsed.values(c.asgi ? "asgi" : "wsgi").front();
  if (c.spec.empty()) throw UsageError(std::string(c.asgi ? "--asgi" : "--wsgi") + " needs a value");
  runner::Options& o = c.parsed.options;
  // As csgi serve: a WSGI app may block on I/O, so it moves to a pool once it does unless --app-threads says.
  if (!c.asgi && !c.parsed.has("app-threads")) runner::use_wsgi_app_threads(o);
  if (o.reload && o.adapter != runner::Adapter::http) throw UsageError("--reload applies to HTTP only");
  return c;
}

void set_sys_argv(const std::vector<std::string>& app_args) {
  py::list argv;
  argv.append("csgi");
  for (const std::string& a : app_args) argv.append(a);
  py::module_::import("sys").attr("argv") = argv;
}

// Prints the Python error being handled (its traceback) and returns the one-line reason, in the words of
// csgi serve's embedded Python.
std::string print_python_error(const std::string& spec, bool asgi) {
  std::string what = asgi ? "--asgi: cannot load the ASGI app " + spec : "--wsgi: cannot load the WSGI app " + spec;
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (PythonErrorSet&) {
  } catch (const std::exception& e) {
    return what + ": " + e.what();
  }
  PyErr_Print();
  return what + " (the Python traceback is above)";
}

// --reload: every new worker imports the app after its fork (the master never does), so it sees the
// changed files. The master watches the .py files under the current directory, as csgi serve does.
App reloading_app(const Command& c, runner::Options& o) {
  auto source = std::make_shared<App>();
  std::error_code ec;
  o.server.reload.trees.push_back(std::filesystem::current_path(ec).string());
  o.server.reload.tree_suffix = ".py";
  PyInterpreterState* interp = PyInterpreterState_Get();
  o.server.reload.load = [source, interp, spec = c.spec, asgi = c.asgi] {
    AcquireGil gil(interp);
    if (!gil) throw std::runtime_error("Python is finalising");
    try {
      *source = load_spec(spec.c_str(), asgi ? 0 : -1);
    } catch (...) {
      throw std::runtime_error(print_python_error(spec, asgi));
    }
  };
  return [source](Env& env) { return (*source)(env); };
}

int run_command(std::vector<std::string> words, const std::string& process_name) {
  if (!process_name.empty()) ::prctl(PR_SET_NAME, process_name.c_str(), 0, 0, 0);  // ps -C, top; threads inherit it
  GilHeldByCaller held;
  std::string program = words.empty() ? "csgi" : words.front();
  Command c;
  try {
    c = parse_command(words);
  } catch (const UsageError& e) {
    runner::print(stderr, program + ": " + e.what() + " (try " + program + " --help)\n");
    return 2;
  }
  for (const std::string& w : c.parsed.warnings) runner::print(stderr, program + ": " + w + "\n");
  if (c.parsed.help || c.command == "help") {
    runner::print(stdout, help_text(program));
    return 0;
  }
  if (c.command == "version") {
    runner::print(stdout, runner::version_line());
    return 0;
  }
  runner::Options& o = c.parsed.options;
  set_sys_argv(c.parsed.values("app-arg"));
  App app;
  try {
    app = o.reload ? reloading_app(c, o) : load_spec(c.spec.c_str(), c.asgi ? static_cast<int>(o.server.workers) : -1);
  } catch (...) {
    std::string reason = print_python_error(c.spec, c.asgi);
    runner::print(stderr, program + ": " + reason + "\n");
    return 1;
  }
  std::string failure;
  std::optional<BatchScheduling> batch;  // the io threads (and the workers) inherit it from this thread
  if (c.asgi) batch.emplace();
  int rc = serve_released([&] { return runner::serve(std::move(app), o); }, failure);
  if (!failure.empty()) runner::print(stderr, program + ": " + failure + "\n");
  return rc;
}

}  // namespace

runner::Options server_options(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  try {
    runner::Parsed p = runner::parse(static_cast<int>(argv.size()), argv.data(), 1, {});
    if (p.help) throw UsageError("--help is a command-line option");
    if (p.options.reload) throw UsageError("--reload: run python3 -m csgi serve --reload");
    if (p.options.adapter != runner::Adapter::http)
      throw UsageError("csgi.serve() serves HTTP; run python3 -m csgi serve --fastcgi or --cgi");
    return std::move(p.options);
  } catch (const UsageError& e) {
    throw py::value_error(std::string("options: ") + e.what());
  }
}

void bind_command(py::module_& m) {
  m.def("_main", &run_command, py::arg("argv"), py::arg("process_name") = "",
        "The `python3 -m csgi` command: argv[0] is the program name shown in messages; process_name, when "
        "given, the process's name (comm). Returns the exit "
        "status (0 after a graceful stop, 1 when the app or the server cannot start, 2 for a usage error).");
}

}  // namespace csgi::python
