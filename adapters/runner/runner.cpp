#include "csgi/adapters/runner/runner.hpp"

#include <cstdlib>
#include <sstream>
#include <string_view>

#include "csgi/adapters/cgi/cgi.hpp"
#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/middleware/access_log.hpp"
#if CSGI_HAVE_FASTCGI
#include "csgi/adapters/fastcgi/fastcgi.hpp"
#endif

namespace csgi::runner {

std::optional<Adapter> detect_gateway() {
#if CSGI_HAVE_FASTCGI
  if (fastcgi::is_fastcgi_socket(0)) return Adapter::fastcgi;
#endif
  if (const char* gi = std::getenv("GATEWAY_INTERFACE"); gi && std::string_view(gi).starts_with("CGI/"))
    return Adapter::cgi;
  return std::nullopt;
}

namespace {

/// The access log as the options ask for it: the access_log middleware around the app.
App with_access_log(App app, const Options& o) {
  if (o.access_log.empty()) return app;
  mw::AccessLogOptions a;
  a.format = o.access_log_format;
  a.path = o.access_log == "-" ? "/dev/stdout" : o.access_log;
  return wrap<mw::AccessLog>(std::move(app), a);
}

}  // namespace

int serve(App app, const Options& options) {
  Options o = options;
  app = with_access_log(std::move(app), o);
  if (o.adapter == Adapter::http) return standalone::Server(std::move(app), o.server).run();
  std::optional<std::string> script_name;
  if (o.script_name_given) script_name = o.server.script_name;
  if (o.adapter == Adapter::cgi) {
    cgi::Options c;
    c.script_name = script_name;
    c.max_body = o.server.max_body_bytes;
    return cgi::serve(app, c);
  }
#if CSGI_HAVE_FASTCGI
  fastcgi::Options f;
  if (!o.server.listen.empty()) f.listen = o.server.listen.front();
  f.threads = static_cast<int>(o.server.threads);
  f.workers = static_cast<int>(o.server.workers);
  f.backlog = o.backlog;
  f.script_name = script_name;
  f.max_body = o.server.max_body_bytes;
  f.graceful_timeout = o.server.graceful_timeout;
  f.socket_mode = o.socket_mode;
  return fastcgi::serve(std::move(app), f);
#else
  print(stderr, "csgi: this build has no FastCGI adapter (libfcgi-dev was missing)\n");
  return 1;
#endif
}

void print(std::FILE* to, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), to);
  std::fflush(to);
}

std::string usage(const std::string& program) {
  std::ostringstream o;
  o << "Usage: " << program << " [OPTIONS]\n\n"
    << "Serves this program's csgi app over HTTP/1.1 and HTTP/2 (TLS with --tls-cert, WebSocket for apps\n"
       "that ask), or over FastCGI (--fastcgi) or CGI (--cgi). Started by a front server, it serves FastCGI\n"
       "when fd 0 is a listening socket and one CGI request when GATEWAY_INTERFACE is set.\n\n"
    << describe()
    << "\n" << describe_signals();
  return o.str();
}

std::string version_line() {
  return "csgi " CSGI_VERSION " (spec " + std::string(keys::spec_version) + ")\n";
}

}  // namespace csgi::runner

namespace csgi {

int run(App app, int argc, char** argv) {
  using namespace runner;
  std::string program = argc > 0 ? argv[0] : "csgi";
  std::optional<Adapter> gateway = detect_gateway();
  try {
    if (gateway == Adapter::cgi) return serve(std::move(app), default_options(Adapter::cgi));
    Parsed p = parse(argc, argv, 1, {}, gateway);
    for (const std::string& w : p.warnings) print(stderr, program + ": " + w + "\n");
    if (p.help) {
      print(stdout, usage(program));
      return 0;
    }
    if (p.version) {
      print(stdout, version_line());
      return 0;
    }
    if (p.options.reload)
      throw UsageError("--reload: this program's app is linked into it; csgi serve --app LIB.so or --wsgi reloads");
    return serve(std::move(app), p.options);
  } catch (const UsageError& e) {
    print(stderr, program + ": " + e.what() + " (try --help)\n");
    return 2;
  } catch (const std::exception& e) {
    print(stderr, program + ": " + e.what() + "\n");
    return 1;
  }
}

}  // namespace csgi
