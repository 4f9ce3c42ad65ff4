#include "csgi/adapters/cli/gateway_modes.hpp"

#include <iostream>
#include <stdexcept>

#if CSGI_HAVE_GATEWAYS
#include "csgi/adapters/cgi/cgi.hpp"
#include "csgi/adapters/fastcgi/fastcgi.hpp"
#endif

namespace csgi::cli {

bool gateway_available() noexcept { return CSGI_HAVE_GATEWAYS != 0; }

int serve_gateway(const std::string& gateway, App app, const standalone::ServerOptions& server) {
#if CSGI_HAVE_GATEWAYS
  if (gateway == "cgi") {
    cgi::Options o;
    if (!server.script_name.empty()) o.script_name = server.script_name;
    o.max_body = server.max_body_bytes;
    return cgi::serve(app, o);
  }
  fastcgi::Options o;
  if (server.listen.size() > 1) throw std::invalid_argument("--fastcgi takes at most one --listen");
  if (!server.listen.empty()) o.listen = server.listen.front();
  // The standalone default of one io thread would pin nginx's kept connections to one request at a time.
  o.threads = server.threads > 1 ? static_cast<int>(server.threads) : 16;
  o.workers = server.workers > 1 ? static_cast<int>(server.workers) : 1;
  if (!server.script_name.empty()) o.script_name = server.script_name;
  o.max_body = server.max_body_bytes;
  o.graceful_timeout = server.graceful_timeout;
  return fastcgi::serve(std::move(app), o);
#else
  std::cerr << "csgi: this build has no FastCGI/CGI adapters (libfcgi-dev was missing)\n";
  return 1;
#endif
}

}  // namespace csgi::cli
