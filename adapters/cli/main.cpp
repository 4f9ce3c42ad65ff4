// The csgi programs: `csgi`, and its aliases csgi-fcgi (`csgi serve --fastcgi`) and csgi-cgi (`csgi serve
// --cgi`), one source built three times (CSGI_CLI_ADAPTER). Parses the command line (options.cpp), builds
// the app from the chosen modes (modes.cpp) and serves it with csgi::runner.
#include <cstdio>
#include <memory>
#include <string_view>

#include "csgi/adapters/cli/options.hpp"
#include "csgi/adapters/cli/reload.hpp"
#include "csgi/adapters/runner/runner.hpp"
#ifdef CSGI_EMBED_PYTHON  // set by bindings/CMakeLists.txt when libpython can be embedded
#include "csgi/bindings/python_host.hpp"
#endif

namespace {

#if defined(CSGI_CLI_ADAPTER_FASTCGI)
const csgi::cli::Program program{"csgi-fcgi", csgi::runner::Adapter::fastcgi};
#elif defined(CSGI_CLI_ADAPTER_CGI)
const csgi::cli::Program program{"csgi-cgi", csgi::runner::Adapter::cgi};
#else
const csgi::cli::Program program{"csgi", std::nullopt};
#endif

// Under CGI the front server shows stdout to the client: a failure before serving answers 500.
int fail(bool cgi, int status, const char* why) {
  if (cgi) std::printf("Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n%s\n", why);
  return status;
}

// The source mode's app (--app, --demo, --wsgi); empty when only layers were given.
csgi::App build_source(const csgi::cli::CommandLine& cl) {
  using namespace csgi::cli;
  csgi::App app;
  ModeArgs args{{}, cl.app_args, &cl.options, cl.mode_options};
  for (const auto& c : cl.modes)
    if (c.mode->kind == Mode::Kind::source) {
      args.value = c.value;
      app = c.mode->make(args, {});
    }
  return app;
}

// The layers wrapped around `app` in reverse order, so that the first given is outermost.
csgi::App wrap_layers(const csgi::cli::CommandLine& cl, csgi::App app) {
  using namespace csgi::cli;
  ModeArgs args{{}, cl.app_args, &cl.options, cl.mode_options};
  for (auto it = cl.modes.rbegin(); it != cl.modes.rend(); ++it)
    if (it->mode->kind == Mode::Kind::layer) {
      args.value = it->value;
      app = it->mode->make(args, std::move(app));
    }
  return app;
}

csgi::App build_app(const csgi::cli::CommandLine& cl) { return wrap_layers(cl, build_source(cl)); }

// --reload: the layers are made here, in the master (the metrics layer's shared counters among them),
// around a source that each worker loads after its fork, so that a new worker loads the changed file.
csgi::App build_reloading_app(csgi::cli::CommandLine& cl) {
  auto source = std::make_shared<csgi::App>();
  auto line = std::make_shared<const csgi::cli::CommandLine>(cl);
  csgi::cli::watch_for_reload(cl, cl.options.server.reload);
  cl.options.server.reload.load = [line, source] { *source = build_source(*line); };
  return wrap_layers(cl, [source](csgi::Env& env) { return (*source)(env); });
}

#ifdef CSGI_EMBED_PYTHON
// `csgi serve --wsgi` or `--asgi` alone (no layer, HTTP, no --reload): what `python3 -m csgi serve` runs the
// same way.
bool python_program_serves(const csgi::cli::CommandLine& cl) {
  if (program.adapter || cl.command != "serve" || cl.options.adapter != csgi::runner::Adapter::http ||
      cl.options.reload || cl.modes.size() != 1)
    return false;
  std::string_view mode = cl.modes.front().mode->option;
  return mode == "asgi" || mode == "wsgi";
}
#endif

}  // namespace

int main(int argc, char** argv) {
  using namespace csgi::cli;
  using csgi::runner::print;
  bool cgi = program.adapter == csgi::runner::Adapter::cgi;
  CommandLine cl;
  try {
    cl = parse_command_line(argc, argv, program);
  } catch (const UsageError& e) {
    print(stderr, std::string(program.name) + ": " + e.what() + " (try " + program.name + " --help)\n");
    return fail(cgi, 2, "bad command line");
  }
#ifdef CSGI_EMBED_PYTHON
  // Served by /usr/bin/python3 where it can be (it prints the warnings); returns when it cannot.
  if (!cl.help && cl.command != "version" && python_program_serves(cl)) csgi::python_host::exec_python_server(argc, argv);
#endif
  for (const std::string& w : cl.warnings) print(stderr, std::string(program.name) + ": " + w + "\n");
  if (cl.help) {
    print(stdout, help_text());
    return 0;
  }
  if (cl.command == "version") {
    print(stdout, csgi::runner::version_line());
    return 0;
  }
  cgi = cl.options.adapter == csgi::runner::Adapter::cgi;
  csgi::App app;
  try {
    app = cl.options.reload ? build_reloading_app(cl) : build_app(cl);
  } catch (const UsageError& e) {
    print(stderr, std::string(program.name) + ": " + e.what() + " (try " + program.name + " --help)\n");
    return fail(cgi, 2, "bad command line");
  } catch (const std::exception& e) {
    print(stderr, std::string(program.name) + ": " + e.what() + "\n");
    return fail(cgi, 1, "app failed to load");
  }
  try {
    return csgi::runner::serve(std::move(app), cl.options);
  } catch (const std::exception& e) {
    print(stderr, std::string(program.name) + ": " + e.what() + "\n");
    return 1;
  }
}
