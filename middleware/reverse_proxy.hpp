#pragma once
/// ReverseProxy (Plack::Middleware::ReverseProxy, werkzeug's ProxyFix, nginx's realip): behind trusted
/// proxies, takes the client's address (and, when enabled, scheme, host and port) from one kind of
/// proxy header, chosen in the options: `X-Forwarded-For` (+ `-Proto`, `-Host`, `-Port`; the default,
/// what nginx and HAProxy set) or RFC 7239 `Forwarded`. The other kind is never read, so a client's own
/// `Forwarded` passed through by a proxy that sets X-Forwarded-For has no effect.
///
/// Only when REMOTE_ADDR is in `trusted` is anything read. The address chain (the header's addresses,
/// then REMOTE_ADDR) is walked from the right, skipping trusted proxies: the right-most address that is
/// not trusted is the client (all trusted: the left-most). When the client cannot be named — the header
/// is present but empty or malformed, or the walk reaches an entry that is not an IP address
/// ("unknown", an obfuscated identifier, garbage) — REMOTE_ADDR becomes "unknown": never the trusted
/// proxy's address, and no IP address rule (access) matches it. Scheme, host and port come from the hop
/// that reported the client (Forwarded: the same element; X-Forwarded-*: the same position when the
/// lists have the same length, else their right-most value).
/// Reads:  REMOTE_ADDR, HTTP_X_FORWARDED_FOR/_PROTO/_HOST/_PORT or HTTP_FORWARDED, HTTP_HOST.
/// Writes: REMOTE_ADDR (and REMOTE_PORT when Forwarded gives one); with use_proto csgi.url_scheme
///         ("http"/"https" only); with use_host HTTP_HOST and SERVER_NAME; SERVER_PORT; the originals
///         under `reverse_proxy.REMOTE_ADDR`, `reverse_proxy.url_scheme`, `reverse_proxy.HTTP_HOST`.
/// Order:  outermost (before access_log, access, auth), so everything sees the client.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/cidr.hpp"

namespace csgi::mw {

/// The one kind of proxy header ReverseProxy reads.
enum class ProxyHeader {
  x_forwarded,  // X-Forwarded-For, with X-Forwarded-Proto/-Host/-Port (nginx, HAProxy, most balancers)
  forwarded,    // RFC 7239 Forwarded: for=, proto=, host=
};

struct ReverseProxyOptions {
  /// Proxies whose headers are believed. Default: loopback only.
  std::vector<std::string> trusted = {"127.0.0.0/8", "::1"};
  /// The header kind the trusted proxies set; the other kind is ignored.
  ProxyHeader header = ProxyHeader::x_forwarded;
  bool use_proto = true;   // X-Forwarded-Proto / proto= → csgi.url_scheme
  bool use_host = false;   // X-Forwarded-Host / host= → HTTP_HOST, SERVER_NAME (off: a client could set it)
  bool use_port = false;   // X-Forwarded-Port → SERVER_PORT (x_forwarded only)
};

class ReverseProxy {
public:
  /// Throws std::invalid_argument for a malformed CIDR block.
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
