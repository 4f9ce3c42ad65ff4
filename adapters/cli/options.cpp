#include "csgi/adapters/cli/options.hpp"

#include <boost/program_options.hpp>
#include <sstream>

#include "csgi/adapters/standalone/options.hpp"

namespace csgi::cli {

namespace po = boost::program_options;

namespace {

po::options_description mode_options() {
  po::options_description o("App options");
  for (const Mode& m : modes()) {
    if (m.value_name)
      o.add_options()(m.option, po::value<std::vector<std::string>>()->value_name(m.value_name), m.summary);
    else
      o.add_options()(m.option, po::bool_switch(), m.summary);
  }
  o.add_options()("app-arg", po::value<std::vector<std::string>>()->value_name("ARG")->composing(),
                  "an argument for the app's factory; repeatable, in order");
  return o;
}

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

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine cl;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    cl.command = argv[1];
    first = 2;
  }
  if (cl.command.empty()) cl.command = "help";
  if (cl.command != "serve" && cl.command != "help" && cl.command != "version")
    throw UsageError("unknown command '" + cl.command + "' (commands: serve, help, version)");

  po::options_description all;
  all.add(mode_options()).add(standalone::server_options());
  // Serve through the FastCGI or CGI adapter instead of HTTP (gateway_modes.hpp).
  all.add_options()("fastcgi", po::bool_switch(), "serve over FastCGI (socket on fd 0, or one --listen)")(
      "cgi", po::bool_switch(), "serve one CGI/1.1 request (environment, stdin, stdout)");
  all.add_options()("help,h", "show the manual");
  po::variables_map vm;
  po::parsed_options parsed(nullptr);
  try {
    parsed = po::command_line_parser(argc - first + 1, argv + first - 1).options(all).run();
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  cl.help = vm.count("help") > 0 || cl.command == "help";
  if (cl.help || cl.command == "version") return cl;

  // Modes in command-line order (layers compose in this order).
  for (const po::option& o : parsed.options) {
    const Mode* m = find_mode(o.string_key);
    if (!m) continue;
    if (m->value_name) {
      if (o.value.size() != 1 || o.value.front().empty()) throw UsageError("--" + std::string(m->option) + " needs a value");
      cl.modes.push_back({m, o.value.front()});
    } else {
      cl.modes.push_back({m, {}});
    }
  }
  int sources = 0;
  for (const auto& c : cl.modes) sources += c.mode->kind == Mode::Kind::source;
  if (sources > 1)
    throw UsageError("give only one of " + mode_list(is_source, ", ", " and "));
  if (cl.modes.empty())
    throw UsageError("nothing to serve: give " + mode_list([](const Mode&) { return true; }, ", ", " or "));
  if (vm["fastcgi"].as<bool>() && vm["cgi"].as<bool>()) throw UsageError("give only one of --fastcgi and --cgi");
  if (vm["fastcgi"].as<bool>()) cl.gateway = "fastcgi";
  if (vm["cgi"].as<bool>()) cl.gateway = "cgi";
  if (vm.count("app-arg")) cl.app_args = vm["app-arg"].as<std::vector<std::string>>();
  try {
    standalone::apply_server_options(vm, cl.server);
    // A WSGI app blocks on I/O as a rule: it runs on a pool unless --app-threads says (docs/standalone.md).
    for (const auto& c : cl.modes)
      if (std::string_view(c.mode->option) == "wsgi" && vm["app-threads"].defaulted()) cl.server.app_threads = 8;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return cl;
}

std::string help_text() {
  std::ostringstream o;
  o << "NAME\n"
       "    csgi - serve a C++ web app (csgi) over HTTP/1.1\n\n"
       "SYNOPSIS\n"
       "    csgi serve (" << mode_list(is_source, " | ", " | ") << ") [--app-arg ARG]...\n"
       "               [" << mode_list([](const Mode& m) { return !is_source(m); }, "] [", "] [") << "]\n"
       "               [--listen ADDR]... [--threads N] [--workers N] [--access-log FILE]\n"
       "               [--fastcgi | --cgi] [LIMITS AND TIMEOUTS]\n"
       "    csgi help | csgi --help\n"
       "    csgi version\n\n"
       "DESCRIPTION\n"
       "    csgi serve runs one csgi app in the standalone HTTP/1.1 server, as plackup does for Perl.\n"
       "    The server speaks HTTP/1.0 and 1.1 with keep-alive and pipelining, reads chunked request\n"
       "    bodies, sends files with sendfile(2) (with single Range requests), streams delayed\n"
       "    responses, and refuses malformed or ambiguous framing with 400 and a closed connection.\n"
       "    Each io thread runs its own event loop; the app is called on the thread that owns the\n"
       "    connection. With --workers a master process forks N workers and restarts any that dies.\n\n"
       "MODES\n";
  for (const Mode& m : modes()) {
    o << "    --" << m.option << (m.value_name ? std::string(" ") + m.value_name : "") << "\n        "
      << m.description << "\n";
  }
  o << "\n";
  std::ostringstream opts;
  opts << mode_options() << "\n" << standalone::server_options();
  o << "OPTIONS\n" << opts.str() << "\n";
  o << "SIGNALS\n"
       "    TERM, INT  stop accepting, finish in-flight requests (up to --graceful-timeout), exit 0\n"
       "    HUP        with --workers: start new workers, then stop the old ones gracefully;\n"
       "               without: reopen the log files\n"
       "    USR1       reopen the log files (after logrotate)\n\n"
       "ENVIRONMENT\n"
       "    LISTEN_PID, LISTEN_FDS  sockets passed by systemd socket activation; used instead of --listen\n\n"
       "EXIT STATUS\n"
       "    0 after a graceful stop, 1 when the server cannot start (address in use, app fails to load),\n"
       "    2 for a command-line error.\n\n"
       "EXAMPLES\n"
       "    csgi serve --demo                          # http://127.0.0.1:5000/\n"
       "    csgi serve --app ./libhello.so --listen :8080 --threads 2\n"
       "    csgi serve --app ./libapp.so --workers 4 --listen unix:/run/app.sock --access-log /var/log/app.log\n";
  return o.str();
}

}  // namespace csgi::cli
