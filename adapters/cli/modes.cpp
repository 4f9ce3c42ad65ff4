#include "csgi/adapters/cli/modes.hpp"

#include "csgi/adapters/cli/demo.hpp"
#include "csgi/adapters/cli/layer_modes.hpp"
#include "csgi/core/app_library.hpp"
#ifdef CSGI_EMBED_PYTHON  // set by bindings/CMakeLists.txt when libpython can be embedded
#include "csgi/bindings/python_host.hpp"
#endif
#ifdef CSGI_EMBED_PERL  // set by bindings/perl/CMakeLists.txt when libperl can be embedded
#include "csgi/bindings/perl/perl_host.hpp"
#endif
#ifdef CSGI_EMBED_RUBY  // set by bindings/ruby/CMakeLists.txt when libruby can be embedded
#include "csgi/bindings/ruby/rack_host.hpp"
#endif

namespace csgi::cli {

const std::vector<Mode>& modes() {
  static const std::vector<Mode> table = {
      {"app", "LIB.so", Mode::Kind::source, "serve the app in this shared library (CSGI_APP entry point)",
       "Loads LIB.so with dlopen, checks its csgi_app_v1 entry (ABI, spec and C++ library versions) and calls "
       "its factory with the --app-arg values. The same library runs unchanged under the FastCGI, CGI and "
       "Python adapters.",
       [](const ModeArgs& a, App) { return load_app(a.value, a.app_args); }},
      {"demo", nullptr, Mode::Kind::source, "serve the built-in demo (hello, /env, /stream, /websocket)",
       "A small app to try the server: a greeting at /, the request env at /env, a streamed response "
       "written by a delayed writer at /stream.",
       [](const ModeArgs& a, App) { return demo_app(a.app_args); }},
#ifdef CSGI_EMBED_PYTHON
      {"wsgi", "MODULE:APP", Mode::Kind::source, "serve a Python WSGI app (Flask, Django)",
       "Imports MODULE (from the current directory first) and serves its WSGI callable APP (default: "
       "application, then app; APP may be a.b or make_app()). With a layer mode, --reload or CSGI_PYTHON_EMBED=1 "
       "it runs in embedded Python, loaded only for this mode (the Python host module beside the csgi "
       "package); alone (HTTP) the server is run by the Python program itself, as python3 -m csgi serve "
       "runs it (same options and behaviour; its interpreter runs Python faster than the embedded "
       "libpython). The GIL is taken per "
       "request, so threads serialise on Python: use --workers N for CPU-bound apps. A Python exception "
       "answers 500 with its traceback in the error log. sys.argv is [\"csgi\", --app-arg values...]. "
       "See docs/python.md.",
       [](const ModeArgs& a, App) { return python_host::load_wsgi_app(a.value, a.app_args); }},
      {"asgi", "MODULE:APP", Mode::Kind::source, "serve a Python ASGI app (FastAPI, Starlette)",
       "Imports MODULE as --wsgi does and serves its ASGI 3 app APP (http and websocket scopes) on an asyncio "
       "event loop (uvloop when installed) that runs on a thread of each serving process. The lifespan "
       "startup runs before serving (in each worker with --workers N); a failing startup stops the server "
       "(a worker: exit status 3) with the app's traceback; shutdown runs when the process ends. Alone "
       "(no layer mode, HTTP, no --reload) the server is run by the Python program itself, as python3 -m "
       "csgi serve runs it (same options and behaviour; its interpreter runs Python faster than the "
       "embedded libpython; CSGI_PYTHON_EMBED=1 embeds instead). See docs/python.md.",
       [](const ModeArgs& a, App) {
         return python_host::load_asgi_app(a.value, a.options ? a.options->server.workers : 0, a.app_args);
       }},
#endif
#ifdef CSGI_EMBED_PERL
      {"psgi", "APP.psgi", Mode::Kind::source, "serve a Perl PSGI app (Plack, Catalyst, Dancer)",
       "Loads APP.psgi as plackup does (the value of its last statement) into an embedded perl, loaded only "
       "for this mode (libperl and the CSGI Perl module), and serves it with the full PSGI 1.1 protocol "
       "(streaming, filehandle bodies sent as files). The interpreter runs on a perl thread of each serving "
       "process, handed each request without blocking the io threads, so requests of a process run one "
       "at a time: use --workers N (the app is loaded before the fork). A die answers 500, logged with the "
       "request line. @ARGV is the --app-arg values. See docs/perl.md.",
       [](const ModeArgs& a, App) {
         return perl_host::load_psgi_app(a.value, a.options ? a.options->server.workers : 0, a.app_args);
       }},
#endif
#ifdef CSGI_EMBED_RUBY
      {"rack", "CONFIG.ru", Mode::Kind::source, "serve a Ruby Rack app (Sinatra, Rails)",
       "Builds the app of CONFIG.ru with Rack::Builder.parse_file (Rack 2.2) on a Ruby VM that runs on a "
       "thread of its own in each serving process (the Rack host module beside the program, loaded only "
       "for this mode); io threads hand requests to it and never wait for Ruby. One request runs in Ruby "
       "at a time per process: use --workers N for parallelism (each worker builds the app when it "
       "starts; one whose app does not load stops the server with status 3). --reload watches CONFIG.ru and "
       "the .rb files under its directory. Bodies are streamed as each "
       "yields them, a body with to_path is sent as the file (sendfile), close is called once; an "
       "exception answers 500 with the request line and the backtrace in the error log. ARGV is the "
       "--app-arg values. See docs/ruby.md.",
       [](const ModeArgs& a, App) {
         // --reload loads the source in each worker after its fork: the VM starts there, as without workers
         unsigned workers = a.options && !a.options->reload ? a.options->server.workers : 0;
         return rack_host::load_rack_app(a.value, workers, a.app_args);
       }},
#endif
      {"static", "DIR", Mode::Kind::layer, "serve the files under DIR (in front of the app, if any)",
       "Files under DIR are served as by the static middleware (sendfile, ETag/Last-Modified/304, Range, "
       "MIME types from /etc/mime.types; nothing outside DIR is ever served). With an app, a path that is "
       "no file under DIR goes to the app; alone, directories without index.html are listed. "
       "See docs/middleware/static.md.",
       make_static_layer},
      {"bundle", "DIR", Mode::Kind::layer, "serve JavaScript module bundles of DIR at /bundle",
       "CommonJS modules under DIR are delivered in dependency bundles at /bundle/<module>, with the client "
       "loader at /bundle/require.js; other paths go to the app (or --static). Edits are picked up through "
       "inotify. See docs/bundler.md.",
       make_bundle_layer},
      {"health", nullptr, Mode::Kind::layer, "answer health checks at /readyz and /livez",
       "GET /readyz answers 200 \"ready\" while the server takes new work and 503 \"draining\" from the "
       "moment a graceful stop begins (SIGTERM, or a worker replaced on SIGHUP), so a load balancer stops "
       "sending before connections close; GET /livez answers 200 while the process answers. Put it first "
       "to keep the checks in front of every other layer. See docs/middleware/health.md.",
       make_health_layer},
      {"metrics", nullptr, Mode::Kind::layer,
       "serve Prometheus metrics at /metrics (loopback clients, not through a proxy; or --metrics-token-file)",
       "GET /metrics answers the request counters by method and status class, requests in flight, body "
       "bytes in and out and a request duration histogram in the Prometheus text format, summed over all "
       "--workers (the counters are shared memory made before the workers fork), and the server's gauges "
       "over all workers: workers, restarts by cause, open and idle connections, the app executor's queue "
       "and busy threads, the accept queues. Only loopback clients may scrape (403 otherwise), and not "
       "through a proxy: a reverse proxy on the same host connects from loopback, so a request with a "
       "Forwarded, X-Forwarded-For or X-Real-IP header is refused too. With --metrics-token-file FILE a "
       "scrape must send Authorization: Bearer and the token in FILE (401 otherwise), from any address. Put "
       "it first, or "
       "right after --health, so that it counts what every other layer answers. See "
       "docs/middleware/metrics.md.",
       make_metrics_layer},
  };
  return table;
}

const Mode* find_mode(std::string_view option) {
  for (const Mode& m : modes())
    if (option == m.option) return &m;
  return nullptr;
}

}  // namespace csgi::cli
