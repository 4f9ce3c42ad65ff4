#pragma once
/// ServerStatus (Apache mod_status, nginx stub_status, Monkey's Cheetah): a page with the server's
/// uptime, workers (busy/total), open and accepted connections, requests served, bytes sent and
/// per-status counts, from csgi::ServerStats (which the adapters feed).
///
/// As HTML by default; as JSON with `?json` / `?format=json` or when Accept prefers application/json to
/// text/html; as plain "Key: value" lines with `?auto` / `?format=text` (mod_status's machine form).
/// ServerStatusApp is the page alone (mount it); ServerStatus is middleware that answers at `path` and
/// passes everything else on — and, while no adapter feeds the stats (ServerStats::adapter_attached()),
/// records the requests passing through it (status at header time; bytes unknown), so the page is
/// useful behind any adapter.
/// Reads:  PATH_INFO, QUERY_STRING, HTTP_ACCEPT, REQUEST_METHOD.
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
  /// The counters shown (and recorded by the middleware); the process-wide ones by default.
  ServerStats* stats = &ServerStats::global();
  /// Middleware: record passing requests while no adapter feeds the counters.
  bool record = true;
  std::string title = "csgi server status";
};

/// The status page as an app.
class ServerStatusApp {
public:
  /// Throws std::invalid_argument when stats is null.
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
  /// Throws std::invalid_argument when stats is null or path does not start with '/'.
  explicit ServerStatus(App next, ServerStatusOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  ServerStatusApp page_;
  ServerStatusOptions options_;
};

}  // namespace csgi::mw
