#pragma once
/// `csgi serve --fastcgi` and `csgi serve --cgi`: serve the app built from the mode table through
/// the FastCGI adapter (csgi::fastcgi) or the CGI adapter (csgi::cgi) instead of the standalone server.
/// The standalone options that apply carry over: --listen (FastCGI: one "unix:/path" or "host:port";
/// none = the socket on fd 0 from mod_fcgid, spawn-fcgi, lighttpd or systemd), --threads, --workers,
/// --script-name (a fixed mount point), --max-body-bytes, --graceful-timeout.
#include <string>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/app.hpp"

namespace csgi::cli {

/// True when this csgi was built with the gateway adapters.
bool gateway_available() noexcept;

/// Serves `app` with `gateway` ("fastcgi" or "cgi"); returns the exit status.
int serve_gateway(const std::string& gateway, App app, const standalone::ServerOptions& server);

}  // namespace csgi::cli
