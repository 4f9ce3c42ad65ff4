#pragma once
/// ReverseProxy (Plack::Middleware::ReverseProxy, werkzeug's ProxyFix, nginx's realip): behind trusted
/// proxies, takes the client's address, scheme and host from `Forwarded` (RFC 7239) or
/// `X-Forwarded-For` / `-Proto` / `-Host` / `-Port`.
///
/// Only when REMOTE_ADDR is in `trusted` is anything read. The address chain (the header's addresses,
/// then REMOTE_ADDR) is walked from the right, skipping trusted proxies: the right-most address that is
/// not trusted is the client (all trusted: the left-most). A chain entry that is not an IP address
/// ("unknown", an obfuscated identifier, garbage) stops the walk at the last trusted hop. Scheme and
/// host come from the hop that reported the client (Forwarded: the same element; X-Forwarded-*: the
/// same position when the lists have the same length, else their right-most value). `Forwarded` wins
/// over X-Forwarded-* when present and enabled; a malformed one makes the request's proxy headers all
/// ignored (logged to csgi.errors).
/// Reads:  REMOTE_ADDR, HTTP_FORWARDED, HTTP_X_FORWARDED_FOR/_PROTO/_HOST/_PORT, HTTP_HOST.
/// Writes: REMOTE_ADDR (and REMOTE_PORT when Forwarded gives one), csgi.url_scheme ("http"/"https"
///         only), HTTP_HOST, SERVER_NAME, SERVER_PORT; the originals under `reverse_proxy.REMOTE_ADDR`,
///         `reverse_proxy.url_scheme`, `reverse_proxy.HTTP_HOST`.
/// Order:  outermost (before access_log, access, auth), so everything sees the client.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/middleware/cidr.hpp"

namespace csgi::mw {

struct ReverseProxyOptions {
  /// Proxies whose headers are believed. Default: loopback only.
  std::vector<std::string> trusted = {"127.0.0.0/8", "::1"};
  bool use_forwarded = true;         // RFC 7239 Forwarded
  bool use_x_forwarded = true;       // X-Forwarded-For/-Proto/-Host/-Port
  bool set_host = true;              // take the host (and port) too, not only address and scheme
};

class ReverseProxy {
public:
  /// Throws std::invalid_argument for a malformed CIDR block or when both header kinds are disabled.
  explicit ReverseProxy(App next, ReverseProxyOptions options = {});
  Response operator()(Env& env);
  /// Applies the headers to `env` (what operator() does before calling the app).
  void apply(Env& env) const;

private:
  App next_;
  ReverseProxyOptions options_;
  CidrSet trusted_;
};

}  // namespace csgi::mw
