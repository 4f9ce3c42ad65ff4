#include "csgi/adapters/cli/options.hpp"

#include <cstdlib>
#include <sstream>

namespace csgi::cli {

namespace {

std::vector<runner::ExtraOption> mode_options() {
  std::vector<runner::ExtraOption> o;
  for (const Mode& m : modes()) o.push_back({m.option, m.value_name, true, m.summary});
  o.push_back({"app-arg", "ARG", true, "an argument for the app's factory; repeatable, in order"});
  o.push_back({"metrics-token-file", "FILE", false,
               "with --metrics: a scrape must send Authorization: Bearer <the token in FILE> (Prometheus: "
               "authorization: credentials_file), and then may come from any address, through a proxy too"});
  o.push_back({"bundle-esbuild", "PATH", false,
               "with --bundle: the esbuild program (a path, or a name looked up in PATH; default esbuild) that turns "
               ".ts, .tsx, .jsx, .mts and .cts modules into JavaScript"});
  return o;
}

// The mode an option of the mode_options() table (other than the modes themselves) belongs to.
constexpr std::pair<const char*, const char*> option_of_mode[] = {{"metrics-token-file", "metrics"},
                                                                  {"bundle-esbuild", "bundle"}};

// "--app LIB.so, --demo or --static DIR" for the rows of the mode table that `pick` selects, each once.
template <class Pick>
std::string mode_list(Pick pick, const char* separator, const char* last_separator) {
  std::vector<const Mode*> rows;
  for (const Mode& m : modes())
    if (pick(m)) rows.push_back(&m);
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i) out += i + 1 == rows.size() ? last_separator : separator;
    out += "--" + std::string(rows[i]->option);
    if (rows[i]->value_name) out += " " + std::string(rows[i]->value_name);
  }
  return out;
}

bool is_source(const Mode& m) { return m.kind == Mode::Kind::source; }

}  // namespace

CommandLine parse_command_line(int argc, char** argv, const Program& program) {
  CommandLine cl;
  int first = 1;
  if (program.adapter) {
    cl.command = "serve";
    if (argc > 1 && std::string_view(argv[1]) == "serve") first = 2;
  } else if (argc > 1 && argv[1][0] != '-') {
    cl.command = argv[1];
    first = 2;
  }
  if (cl.command.empty()) cl.command = "help";
  if (cl.command != "serve" && cl.command != "help" && cl.command != "version")
    throw UsageError("unknown command '" + cl.command + "' (commands: serve, help, version)");

  runner::Parsed parsed = runner::parse(argc, argv, first, mode_options(), program.adapter);
  if (parsed.version && !parsed.help) cl.command = "version";
  cl.help = parsed.help || cl.command == "help";
  if (cl.help || cl.command == "version") return cl;

  // Modes in command-line order (layers compose in this order).
  for (const auto& o : parsed.given) {
    const Mode* m = find_mode(o.name);
    if (!m) continue;
    if (m->value_name) {
      if (o.value.empty()) throw UsageError("--" + std::string(m->option) + " needs a value");
      cl.modes.push_back({m, o.value});
    } else {
      cl.modes.push_back({m, {}});
    }
  }
  if (const char* env_app = std::getenv("CSGI_APP"); cl.modes.empty() && env_app && *env_app)
    if (const Mode* app = find_mode("app")) cl.modes.push_back({app, env_app});
  int sources = 0;
  for (const auto& c : cl.modes) sources += c.mode->kind == Mode::Kind::source;
  if (sources > 1)
    throw UsageError("give only one of " + mode_list(is_source, ", ", " and "));
  if (cl.modes.empty())
    throw UsageError("nothing to serve: give " + mode_list([](const Mode&) { return true; }, ", ", " or "));
  cl.app_args = parsed.values("app-arg");
  for (const auto& [option, mode] : option_of_mode) {
    if (!parsed.has(option)) continue;
    bool given = false;
    for (const auto& c : cl.modes) given = given || std::string_view(c.mode->option) == mode;
    if (!given) throw UsageError("--" + std::string(option) + " applies with --" + mode);
    cl.mode_options.push_back({option, parsed.values(option).front()});
  }
  cl.options = std::move(parsed.options);
  // A WSGI app may block on I/O: it moves to a pool once it does, unless --app-threads says (docs/standalone.md).
  for (const auto& c : cl.modes)
    if (std::string_view(c.mode->option) == "wsgi" && !parsed.has("app-threads")) runner::use_wsgi_app_threads(cl.options);
  cl.warnings = std::move(parsed.warnings);
  return cl;
}

std::string help_text() {
  std::ostringstream o;
  o << "NAME\n"
       "    csgi - serve a C++ web app (csgi) or a Python WSGI/ASGI app over HTTP/1.1, HTTP/2, TLS and\n"
       "    WebSocket, or to a front server over FastCGI or CGI\n\n"
       "SYNOPSIS\n"
       "    csgi serve (" << mode_list(is_source, " | ", " | ") << ") [--app-arg ARG]...\n"
       "               [" << mode_list([](const Mode& m) { return !is_source(m); }, "] [", "] [") << "]\n"
       "               [--fastcgi | --cgi] [--listen ADDR]... [--threads N] [--workers N]\n"
       "               [SERVER OPTIONS]\n"
       "    csgi-fcgi [OPTIONS]     the same as csgi serve --fastcgi [OPTIONS]\n"
       "    csgi-cgi [OPTIONS]      the same as csgi serve --cgi [OPTIONS]\n"
       "    csgi help | csgi --help\n"
       "    csgi version | csgi --version\n\n"
       "DESCRIPTION\n"
       "    csgi serve runs one csgi app in the standalone server, as plackup does for Perl.\n"
       "    The server speaks HTTP/1.0 and 1.1 with keep-alive and pipelining, and HTTP/2 (h2 by ALPN\n"
       "    over TLS, h2c in the clear; --h2-max-streams 0 turns it off); serves TLS 1.2/1.3 with\n"
       "    --tls-cert/--tls-key (SNI, client certificates, reloaded on SIGHUP); upgrades to WebSocket\n"
       "    (HTTP/1.1, and RFC 8441 over HTTP/2) for apps that ask; reads chunked request bodies, sends\n"
       "    files with sendfile(2) (with single Range requests), streams delayed responses, and refuses\n"
       "    malformed or ambiguous framing with 400 and a closed connection.\n"
       "    Each io thread runs its own event loop; the app is called on the thread that owns the\n"
       "    connection. With --workers a master process forks N workers and restarts any that dies.\n"
       "    --fastcgi serves the app to a front server (nginx, Apache mod_fcgid, lighttpd) over FastCGI,\n"
       "    --cgi serves one CGI/1.1 request. Every adapter takes the options below; one that does not\n"
       "    apply to the chosen adapter (marked [HTTP] or [HTTP, FastCGI]) is a usage error.\n\n"
       "MODES\n";
  for (const Mode& m : modes()) {
    o << "    --" << m.option << (m.value_name ? std::string(" ") + m.value_name : "") << "\n        "
      << m.description << "\n";
  }
  o << "\n";
  std::ostringstream opts;
  opts << runner::describe("App options", mode_options()) << "\n" << runner::describe();
  o << "OPTIONS\n" << opts.str() << "\n";
  o << "SIGNALS\n" << runner::describe_signals() << "\n"
       "ENVIRONMENT\n"
       "    LISTEN_PID, LISTEN_FDS  sockets passed by systemd socket activation; used instead of --listen\n"
       "    CSGI_APP                the --app LIB.so when the command line gives no mode\n"
       "    CSGI_PYTHON_EMBED       set (non-empty): --wsgi/--asgi run in embedded Python, not in the Python program\n"
       "    CSGI_RACK_HOST          the path of the Rack host module (libcsgi_rack_host.so) --rack loads\n"
       "    NOTIFY_SOCKET           systemd Type=notify: READY, RELOADING, STOPPING, STATUS (and WATCHDOG\n"
       "                            pings with WATCHDOG_USEC) are sent there\n\n"
       "EXIT STATUS\n"
       "    0 after a graceful stop, 1 when the server cannot start (address in use, app fails to load),\n"
       "    2 for a command-line error.\n\n"
       "EXAMPLES\n"
       "    csgi serve --demo                          # http://127.0.0.1:5000/\n"
       "    csgi serve --app ./libhello.so --listen :8080 --threads 2\n"
       "    csgi serve --app ./libapp.so --workers 4 --listen unix:/run/app.sock --access-log /var/log/app.log\n"
       "    csgi serve --fastcgi --app ./libapp.so --listen unix:/run/app.sock   # behind nginx\n"
       "    spawn-fcgi -s /run/app.sock -- /usr/bin/csgi-fcgi --app ./libapp.so  # socket on fd 0\n";
  return o.str();
}

}  // namespace csgi::cli
