#include "csgi/adapters/standalone/options.hpp"

#include <cstdlib>
#include <string_view>

#if CSGI_HAVE_GATEWAYS
#include "csgi/adapters/cgi/cgi.hpp"
#include "csgi/adapters/fastcgi/fastcgi.hpp"
#endif

#include <boost/program_options.hpp>
#include <iostream>
#include <stdexcept>

namespace csgi::standalone {

namespace po = boost::program_options;

po::options_description server_options(const ServerOptions& d) {
  po::options_description o("Server options");
  auto ms = [](std::chrono::milliseconds v) { return static_cast<double>(v.count()) / 1000.0; };
  // clang-format off
  o.add_options()
    ("listen,l", po::value<std::vector<std::string>>()->composing(),
     "where to listen, repeatable: HOST:PORT, [IPV6]:PORT, :PORT (all IPv4), PORT, or unix:/PATH. "
     "Default 127.0.0.1:5000, or the sockets systemd passes in LISTEN_FDS.")
    ("threads,t", po::value<unsigned>()->default_value(d.threads), "io threads per process")
    ("workers,w", po::value<unsigned>()->default_value(d.workers),
     "0: serve in this process; N: a master process forks N workers, restarts any that dies")
    ("app-threads", po::value<unsigned>()->default_value(d.app_threads),
     "0: the app runs on the io thread that owns the connection (the fast path for apps that never "
     "block; the default, but 8 with csgi serve --wsgi); N: on a pool of N threads with one shared queue, "
     "the io threads keep serving while the app blocks. Not used under FastCGI (its --threads run the app)")
    ("reuseport", po::bool_switch(), "one SO_REUSEPORT socket per io thread instead of one shared socket")
    ("script-name", po::value<std::string>()->default_value(d.script_name),
     "serve the app under this prefix (SCRIPT_NAME); other paths get 404")
    ("access-log", po::value<std::string>()->default_value(d.access_log),
     "append one combined-format line per request to FILE (- for stdout)")
    ("error-log", po::value<std::string>()->default_value(d.error_log), "csgi.errors goes to FILE (default stderr)")
    ("max-request-line", po::value<std::size_t>()->default_value(d.max_request_line), "bytes; longer: 414")
    ("max-header-bytes", po::value<std::size_t>()->default_value(d.max_header_bytes), "bytes of request head; more: 431")
    ("max-header-count", po::value<std::size_t>()->default_value(d.max_header_count), "header fields; more: 431")
    ("body-buffer-bytes", po::value<std::uint64_t>()->default_value(d.body_buffer_bytes),
     "bytes; a Content-Length body up to this size is read before the app runs (a slow client holds "
     "no thread); larger and chunked bodies are read while the app reads them")
    ("discard-body-bytes", po::value<std::uint64_t>()->default_value(d.discard_body_bytes),
     "bytes; a request body the app did not read is discarded up to this size and the connection kept; "
     "a longer one closes the connection after the response")
    ("max-body-bytes", po::value<std::uint64_t>()->default_value(d.max_body_bytes),
     "request body bytes, Content-Length or chunked; more: 413")
    ("max-connections", po::value<std::size_t>()->default_value(d.max_connections),
     "open connections per process; at the limit accepting pauses")
    ("header-timeout", po::value<double>()->default_value(ms(d.header_timeout)), "seconds to receive a request head; then 408")
    ("body-timeout", po::value<double>()->default_value(ms(d.body_timeout)), "seconds between two pieces of a body; then 408")
    ("idle-timeout", po::value<double>()->default_value(ms(d.idle_timeout)), "seconds a keep-alive connection may idle")
    ("send-timeout", po::value<double>()->default_value(ms(d.send_timeout)), "seconds a client may stop reading a response")
    ("graceful-timeout", po::value<double>()->default_value(ms(d.graceful_timeout)),
     "seconds in-flight requests get on SIGTERM/SIGINT before the process exits");
  // clang-format on
  return o;
}

void apply_server_options(const po::variables_map& vm, ServerOptions& opt) {
  auto secs = [&](const char* name, std::chrono::milliseconds& out) {
    if (!vm.count(name)) return;
    double v = vm[name].as<double>();
    if (!(v > 0) || v > 86400 * 365) throw std::invalid_argument(std::string("--") + name + " must be > 0 seconds");
    out = std::chrono::milliseconds(static_cast<long long>(v * 1000));
  };
  if (vm.count("listen")) opt.listen = vm["listen"].as<std::vector<std::string>>();
  if (vm.count("threads")) opt.threads = vm["threads"].as<unsigned>();
  if (vm.count("workers")) opt.workers = vm["workers"].as<unsigned>();
  if (vm.count("app-threads")) opt.app_threads = vm["app-threads"].as<unsigned>();
  if (vm.count("reuseport")) opt.reuseport = vm["reuseport"].as<bool>();
  if (vm.count("script-name")) opt.script_name = vm["script-name"].as<std::string>();
  if (vm.count("access-log")) opt.access_log = vm["access-log"].as<std::string>();
  if (vm.count("error-log")) opt.error_log = vm["error-log"].as<std::string>();
  if (vm.count("max-request-line")) opt.max_request_line = vm["max-request-line"].as<std::size_t>();
  if (vm.count("max-header-bytes")) opt.max_header_bytes = vm["max-header-bytes"].as<std::size_t>();
  if (vm.count("max-header-count")) opt.max_header_count = vm["max-header-count"].as<std::size_t>();
  if (vm.count("max-body-bytes")) opt.max_body_bytes = vm["max-body-bytes"].as<std::uint64_t>();
  if (vm.count("discard-body-bytes")) opt.discard_body_bytes = vm["discard-body-bytes"].as<std::uint64_t>();
  if (vm.count("body-buffer-bytes")) opt.body_buffer_bytes = vm["body-buffer-bytes"].as<std::uint64_t>();
  if (vm.count("max-connections")) opt.max_connections = vm["max-connections"].as<std::size_t>();
  secs("header-timeout", opt.header_timeout);
  secs("body-timeout", opt.body_timeout);
  secs("idle-timeout", opt.idle_timeout);
  secs("send-timeout", opt.send_timeout);
  secs("graceful-timeout", opt.graceful_timeout);
  if (opt.threads == 0 || opt.threads > 1024) throw std::invalid_argument("--threads must be 1…1024");
  if (opt.app_threads > 4096) throw std::invalid_argument("--app-threads must be 0…4096");
  if (opt.workers > 1024) throw std::invalid_argument("--workers must be 0…1024");
  if (opt.max_header_bytes < 256) throw std::invalid_argument("--max-header-bytes must be at least 256");
  if (opt.max_request_line < 64) throw std::invalid_argument("--max-request-line must be at least 64");
  if (opt.max_request_line > opt.max_header_bytes) opt.max_request_line = opt.max_header_bytes;
  if (opt.max_connections == 0) throw std::invalid_argument("--max-connections must be at least 1");
  if (!opt.script_name.empty() && (opt.script_name.front() != '/' || opt.script_name.back() == '/'))
    throw std::invalid_argument("--script-name must start with / and not end with /");
}

}  // namespace csgi::standalone

namespace csgi {

int run(App app, int argc, char** argv) {
  using namespace standalone;
#if CSGI_HAVE_GATEWAYS
  // Started by a front server — FastCGI when fd 0 is a listening socket (mod_fcgid, spawn-fcgi,
  // lighttpd, systemd StandardInput=socket), CGI when GATEWAY_INTERFACE is set — so an executable named
  // app.fcgi or app.cgi just works. Command-line arguments are ignored then (CGI passes query words).
  if (fastcgi::is_fastcgi_socket(0)) return fastcgi::serve(std::move(app));
  if (const char* gi = std::getenv("GATEWAY_INTERFACE"); gi && std::string_view(gi).starts_with("CGI/"))
    return cgi::serve(app);
#endif
  po::options_description all = server_options();
  all.add_options()("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "Usage: " << (argc > 0 ? argv[0] : "app") << " [OPTIONS]\n\nServes this program's csgi app over HTTP/1.1.\n\n"
                << all << "\nSignals: TERM/INT stop gracefully; HUP restarts workers; USR1 reopens log files.\n";
      return 0;
    }
    ServerOptions opt;
    apply_server_options(vm, opt);
    return Server(std::move(app), std::move(opt)).run();
  } catch (const po::error& e) {
    std::cerr << (argc > 0 ? argv[0] : "csgi") << ": " << e.what() << " (try --help)\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << (argc > 0 ? argv[0] : "csgi") << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << (argc > 0 ? argv[0] : "csgi") << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace csgi
