#pragma once
/// ServerStatus (Apache mod_status, nginx stub_status, Monkey's Cheetah): a page with the server's
/// uptime, workers (busy/total), open and accepted connections, requests served, bytes sent and
/// per-status counts, from the csgi::ServerStats the adapter serving the request hands over as
/// `csgix.server_stats` (spec EXT-7), or from ServerStatusOptions::stats when one is given.
///
/// As HTML by default; as JSON with `?json` / `?format=json` or when Accept prefers application/json to
/// text/html; as plain "Key: value" lines with `?auto` / `?format=text` (mod_status's machine form).
/// ServerStatusApp is the page alone (mount it); ServerStatus is middleware that answers at `path` and
/// passes everything else on. Without `stats` and without csgix.server_stats in the env (CGI, a C++ app
/// hosted by a WSGI server) the page answers 501 and says why. With `stats` given, the page shows that
/// object and the middleware records the requests passing through it (status at header time; bytes
/// unknown) unless an adapter feeds it (ServerStats::adapter_attached()), so the page works behind any
/// adapter.
/// Reads:  PATH_INFO, QUERY_STRING, HTTP_ACCEPT, REQUEST_METHOD, csgix.server_stats.
/// Writes: nothing in the env; on the page: Cache-Control: no-store, Vary: Accept.
/// Order:  outermost if it records (it then counts what the whole stack answers); protect the page
///         with access or auth_basic placed outside it.
#include <string>

#include "csgi/core/app.hpp"
#include "csgi/core/server_stats.hpp"

namespace csgi::mw {

struct ServerStatusOptions {
  /// Where the middleware serves the page (exact PATH_INFO match). Unused by ServerStatusApp.
  std::string path = "/server-status";
  /// The counters shown and recorded by the middleware instead of the adapter's; null (the default): the
  /// adapter's, from csgix.server_stats.
  ServerStats* stats = nullptr;
  /// Middleware: record passing requests into `stats` while no adapter feeds it.
  bool record = true;
  std::string title = "csgi server status";
};

/// The status page as an app.
class ServerStatusApp {
public:
  explicit ServerStatusApp(ServerStatusOptions options = {});
  Response operator()(Env& env) const;

  enum class Format { html, json, text };
  /// The format a request asks for.
  static Format negotiate(const Env& env);
  static std::string render_html(const ServerStats::Snapshot& s, const std::string& title);
  static std::string render_json(const ServerStats::Snapshot& s);
  static std::string render_text(const ServerStats::Snapshot& s);

private:
  ServerStatusOptions options_;
};

class ServerStatus {
public:
  /// Throws std::invalid_argument when path does not start with '/'.
  explicit ServerStatus(App next, ServerStatusOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  ServerStatusApp page_;
  ServerStatusOptions options_;
};

}  // namespace csgi::mw
