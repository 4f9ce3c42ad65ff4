#include "csgi/adapters/runner/options.hpp"

#include <getopt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/core/cidr.hpp"

namespace csgi::runner {

namespace {

constexpr unsigned H = static_cast<unsigned>(Adapter::http);
constexpr unsigned F = static_cast<unsigned>(Adapter::fastcgi);
constexpr unsigned C = static_cast<unsigned>(Adapter::cgi);
constexpr Adapter every_adapter[] = {Adapter::http, Adapter::fastcgi, Adapter::cgi};

std::uint64_t whole(const std::string& v, std::uint64_t lo, std::uint64_t hi, int base = 10) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n, base);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
    std::ostringstream o;
    if (base == 8) o << std::oct;
    o << "'" << v << "' is not a " << (base == 8 ? "octal " : "") << "whole number from " << lo << " to " << hi;
    throw std::invalid_argument(o.str());
  }
  return n;
}

std::chrono::milliseconds seconds(const std::string& v) {
  double s = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !(s > 0) || s > 86400.0 * 365)
    throw std::invalid_argument("'" + v + "' is not a number of seconds > 0");
  return std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000)));
}

std::string show(std::uint64_t n) { return std::to_string(n); }
std::string show_seconds(std::chrono::milliseconds ms) {
  std::ostringstream o;
  o << static_cast<double>(ms.count()) / 1000.0;
  return o.str();
}
std::string show_bytes(std::uint64_t n) {
  const char* units[] = {"KiB", "MiB", "GiB"};
  std::string out = std::to_string(n);
  std::uint64_t v = n;
  for (const char* u : units) {
    if (v < 1024 || v % 1024) break;
    v /= 1024;
    if (v < 1024 || v % 1024) return out + " (" + std::to_string(v) + " " + u + ")";
  }
  return out;
}

std::string adapters_text(unsigned bits) {
  std::string out;
  for (Adapter a : every_adapter)
    if (bits & static_cast<unsigned>(a)) out += (out.empty() ? "" : ", ") + std::string(adapter_name(a));
  return out;
}

// The default of `row` as shown: one value when the adapters it applies to agree, else "X (HTTP), Y (FastCGI)".
std::string defaults_text(const OptionSpec& row) {
  std::vector<std::pair<Adapter, std::string>> shown;
  for (Adapter a : every_adapter) {
    if (!(row.adapters & static_cast<unsigned>(a))) continue;
    std::string t = row.default_text(default_options(a));
    if (!t.empty()) shown.emplace_back(a, std::move(t));
  }
  bool same = true;
  for (const auto& s : shown) same = same && s.second == shown.front().second;
  if (shown.empty() || same) return shown.empty() ? std::string() : shown.front().second;
  std::string out;
  for (const auto& [a, t] : shown) out += (out.empty() ? "" : ", ") + t + " (" + std::string(adapter_name(a)) + ")";
  return out;
}

std::string off(const Options&) { return "off"; }
void ignore(Options&, const std::string&) {}

// clang-format off
std::vector<OptionSpec> make_table() {
  return {
  {"fastcgi", 0, nullptr, H | F | C, false,
   "serve over FastCGI: on the listening socket a front server passes as fd 0 (mod_fcgid, spawn-fcgi, "
   "lighttpd bin-path, systemd), or on the one --listen address",
   off, ignore},
  {"cgi", 0, nullptr, H | F | C, false,
   "serve one CGI/1.1 request: the environment, stdin and stdout of this process",
   off, ignore},
  {"listen", 'l', "ADDR", H | F, true,
   "where to listen: HOST:PORT, [IPV6]:PORT, :PORT (all IPv4), PORT or unix:/PATH. HTTP: repeatable; "
   "https://HOST:PORT serves TLS there (--tls-cert); without it the sockets systemd passes in LISTEN_FDS, "
   "if any. FastCGI: at most one",
   [](const Options& d) { return std::string(d.adapter == Adapter::fastcgi ? "the socket on fd 0" : "127.0.0.1:5000"); },
   [](Options& o, const std::string& v) {
     if (v.empty()) throw std::invalid_argument("an address is needed");
     o.server.listen.push_back(v);
   }},
  {"threads", 't', "N", H | F, false,
   "threads per process. HTTP: io threads, each with its own event loop and connections. FastCGI: each "
   "serves one request, and holds one kept front-server connection, at a time",
   [](const Options& d) { return show(d.server.threads); },
   [](Options& o, const std::string& v) { o.server.threads = static_cast<unsigned>(whole(v, 1, 1024)); }},
  {"workers", 'w', "N", H | F, false,
   "0: serve in this process; N: a master process forks N workers and restarts any that dies (one that exits "
   "with status 3, its app unable to start, stops the server with that status)",
   [](const Options& d) { return show(d.server.workers); },
   [](Options& o, const std::string& v) { o.server.workers = static_cast<unsigned>(whole(v, 0, 1024)); }},
  {"app-threads", 0, "N", H, false,
   "0: the app runs on the io thread that owns the connection (the fast path for apps that never block; "
   "the default); N: on a pool of N threads with one shared queue, the io threads keep serving while the "
   "app blocks. Not given with --wsgi: on the io thread until a call blocks or computes past 2 ms, then on "
   "a pool of 8 for good. Under FastCGI the app runs on its --threads",
   [](const Options& d) { return show(d.server.app_threads); },
   [](Options& o, const std::string& v) { o.server.app_threads = static_cast<unsigned>(whole(v, 0, 4096)); }},
  {"reload", 0, nullptr, H, false,
   "for development: watch the --app library (with --wsgi, the module's .py files; with --psgi, the .psgi "
   "file and the .pm files under the current directory; with --rack, config.ru and the .rb files under its "
   "directory) and, when it changes, "
   "start new workers with it; they replace the old ones once they listen, and a build that does not load "
   "leaves the old ones serving. Without --workers, one worker runs under a master",
   off, [](Options& o, const std::string&) { o.reload = true; }},
  {"reuseport", 0, nullptr, H, false,
   "one SO_REUSEPORT socket per io thread instead of one shared socket",
   off, [](Options& o, const std::string&) { o.server.reuseport = true; }},
  {"proxy-protocol", 0, nullptr, H, false,
   "a TCP connection from a --trusted-proxy address must start with a PROXY protocol header (v1 or v2: "
   "HAProxy's send-proxy, send-proxy-v2), which gives the client's address and port and the scheme; a "
   "header from another address, a malformed one or a missing one is refused and logged",
   off, [](Options& o, const std::string&) { o.server.proxy_protocol = true; }},
  {"trusted-proxy", 0, "CIDR", H, true,
   "an address or block (IPv4 or IPv6: 10.0.0.0/8, ::1) of the proxies that send a PROXY header; "
   "repeatable, required with --proxy-protocol",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) {
     Cidr check(v);  // throws for a malformed block
     o.server.trusted_proxies.push_back(v);
   }},
  {"tls-cert", 0, "FILE", H, true,
   "a PEM certificate chain to serve TLS with, paired with the --tls-key of the same position; repeatable: "
   "the certificate whose names match the client's SNI is chosen, the first by default. Served on the "
   "https:// listeners, or on every listener when none says https://. Re-read on SIGHUP",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) {
     if (v.empty()) throw std::invalid_argument("a file is needed");
     o.server.tls_certificates.push_back({v, ""});
   }},
  {"tls-key", 0, "FILE", H, true,
   "the PEM private key (unencrypted) of the --tls-cert of the same position",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) {
     if (v.empty()) throw std::invalid_argument("a file is needed");
     for (auto& c : o.server.tls_certificates)
       if (c.key_file.empty()) {
         c.key_file = v;
         return;
       }
     o.server.tls_certificates.push_back({"", v});
   }},
  {"tls-client-ca", 0, "FILE", H, false,
   "require a client certificate signed by a CA in this PEM file (the handshake fails without one); the "
   "app reads SSL_CLIENT_VERIFY, SSL_CLIENT_S_DN and SSL_CLIENT_CERT",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) {
     if (v.empty()) throw std::invalid_argument("a file is needed");
     o.server.tls_client_ca = v;
   }},
  {"script-name", 0, "PATH", H | F | C, false,
   "mount the app under this prefix (SCRIPT_NAME; empty or /prefix). HTTP: other paths get 404. "
   "FastCGI, CGI: a fixed mount point instead of the one derived from the front server's variables "
   "(\"\" for the root)",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) {
     if (!v.empty() && (v.front() != '/' || v.back() == '/'))
       throw std::invalid_argument("'" + v + "' must be empty or start with / and not end with /");
     o.server.script_name = v;
     o.script_name_given = true;
   }},
  {"access-log", 0, "FILE", H | F | C, false,
   "append one line per request to FILE (- for stdout, not under CGI), in --access-log-format",
   [](const Options&) { return std::string("none"); },
   [](Options& o, const std::string& v) { o.access_log = v; }},
  {"access-log-format", 0, "FORMAT", H | F | C, false,
   "common, combined, combined_id, json (JSON Lines named as nginx's variables) or an Apache LogFormat "
   "string (docs/middleware/access_log.md)",
   [](const Options& d) { return d.access_log_format; },
   [](Options& o, const std::string& v) {
     if (v.empty()) throw std::invalid_argument("a format is needed");
     o.access_log_format = v;
   }},
  {"error-log", 0, "FILE", H, false,
   "csgi.errors goes to FILE",
   [](const Options&) { return std::string("stderr"); },
   [](Options& o, const std::string& v) { o.server.error_log = v; }},
  {"max-request-line", 0, "BYTES", H, false, "longest request line; longer: 414",
   [](const Options& d) { return show_bytes(d.server.max_request_line); },
   [](Options& o, const std::string& v) { o.server.max_request_line = whole(v, 64, 1ull << 30); }},
  {"max-header-bytes", 0, "BYTES", H, false, "largest request head (request line and fields); larger: 431",
   [](const Options& d) { return show_bytes(d.server.max_header_bytes); },
   [](Options& o, const std::string& v) { o.server.max_header_bytes = whole(v, 256, 1ull << 30); }},
  {"max-header-count", 0, "N", H, false, "most header fields; more: 431",
   [](const Options& d) { return show(d.server.max_header_count); },
   [](Options& o, const std::string& v) { o.server.max_header_count = whole(v, 1, 1u << 20); }},
  {"max-body-bytes", 0, "BYTES", H | F | C, false,
   "largest request body, Content-Length or chunked; larger: 413 (FastCGI, CGI: reading csgi.input past "
   "it fails with 413)",
   [](const Options& d) { return show_bytes(d.server.max_body_bytes); },
   [](Options& o, const std::string& v) { o.server.max_body_bytes = whole(v, 0, 1ull << 62); }},
  {"body-buffer-bytes", 0, "BYTES", H, false,
   "every request body is read before the app runs; one is kept in memory up to this size, a larger one "
   "goes to a temporary file (--body-temp-dir)",
   [](const Options& d) { return show_bytes(d.server.body_buffer_bytes); },
   [](Options& o, const std::string& v) { o.server.body_buffer_bytes = whole(v, 0, 1ull << 62); }},
  {"body-memory-bytes", 0, "BYTES", H, false,
   "request bodies the whole process keeps in memory at once, HTTP/1 body read buffers included; a body past "
   "it goes to a temporary file",
   [](const Options& d) { return show_bytes(d.server.body_memory_bytes); },
   [](Options& o, const std::string& v) { o.server.body_memory_bytes = whole(v, 0, 1ull << 62); }},
  {"body-temp-dir", 0, "DIR", H, false,
   "where request bodies past memory go, as unlinked files",
   [](const Options& d) { return d.server.body_temp_dir.empty() ? std::string("$TMPDIR or /tmp") : d.server.body_temp_dir; },
   [](Options& o, const std::string& v) { o.server.body_temp_dir = v; }},
  {"max-connections", 0, "N", H, false, "open connections per process; at the limit accepting pauses",
   [](const Options& d) { return show(d.server.max_connections); },
   [](Options& o, const std::string& v) { o.server.max_connections = whole(v, 1, 1u << 24); }},
  {"h2-max-streams", 0, "N", H, false,
   "HTTP/2 (h2 by ALPN over TLS, h2c in the clear): streams one connection may have open at once "
   "(SETTINGS_MAX_CONCURRENT_STREAMS); a client that keeps more requests in the app (reset ones too) is not "
   "read from until some finish. 0: no HTTP/2 (ALPN offers http/1.1 alone; no h2c)",
   [](const Options& d) { return show(d.server.h2_max_streams); },
   [](Options& o, const std::string& v) { o.server.h2_max_streams = static_cast<std::uint32_t>(whole(v, 0, 1u << 20)); }},
  {"h2-initial-window", 0, "BYTES", H, false,
   "HTTP/2: each stream's receive window for request bodies (SETTINGS_INITIAL_WINDOW_SIZE); the header list "
   "limit is --max-header-bytes",
   [](const Options& d) { return show_bytes(d.server.h2_initial_window); },
   [](Options& o, const std::string& v) { o.server.h2_initial_window = static_cast<std::uint32_t>(whole(v, 1024, (1u << 31) - 1)); }},
  {"no-h2-websocket", 0, nullptr, H, false,
   "HTTP/2: no WebSocket over a stream (RFC 8441 extended CONNECT; SETTINGS_ENABLE_CONNECT_PROTOCOL is not "
   "sent), so that clients open their WebSockets on an HTTP/1.1 connection",
   off, [](Options& o, const std::string&) { o.server.h2_websocket = false; }},
  {"h2c-upgrade", 0, nullptr, H, false,
   "HTTP/2: take HTTP/1.1 `Upgrade: h2c` (deprecated by RFC 9113) on plain connections; off, it is ignored "
   "(h2c with prior knowledge is always taken). Risk: behind a proxy that forwards Upgrade (as WebSocket "
   "setups do), the client's later requests reach the server as HTTP/2 frames the proxy does not inspect, "
   "past its per-path rules",
   off, [](Options& o, const std::string&) { o.server.h2c_upgrade = true; }},
  {"http3", 0, nullptr, H, false,
   "HTTP/3 over QUIC on each https:// listener: a UDP socket on the same port, the same --tls-cert files "
   "(ALPN h3, TLS 1.3, no 0-RTT), and `Alt-Svc: h3=\":PORT\"; ma=86400` on its HTTP/1.1 and HTTP/2 "
   "responses. Streams per connection: --h2-max-streams. A UDP socket per io thread of each worker (128 at "
   "most), each connection's datagrams routed to the thread that owns it by its connection ID",
   off, [](Options& o, const std::string&) { o.server.http3 = true; }},
  {"http3-retry", 0, nullptr, H, false,
   "HTTP/3: every new client proves its address with a Retry round trip before the server keeps state for "
   "it (one more round trip; for servers under spoofed-address floods)",
   off, [](Options& o, const std::string&) { o.server.http3_retry = true; }},
  {"header-timeout", 0, "SECONDS", H, false, "to receive a request head; then 408",
   [](const Options& d) { return show_seconds(d.server.header_timeout); },
   [](Options& o, const std::string& v) { o.server.header_timeout = seconds(v); }},
  {"body-timeout", 0, "SECONDS", H, false,
   "between two pieces of a request body; then 408 (HTTP/2, HTTP/3: the connection is closed)",
   [](const Options& d) { return show_seconds(d.server.body_timeout); },
   [](Options& o, const std::string& v) { o.server.body_timeout = seconds(v); }},
  {"body-min-rate", 0, "BYTES", H, false,
   "a request body slower than this many bytes a second on average (after a grace of --body-timeout) "
   "gets 408; 0: no minimum",
   [](const Options& d) { return show(d.server.body_min_rate); },
   [](Options& o, const std::string& v) { o.server.body_min_rate = whole(v, 0, 1ull << 40); }},
  {"idle-timeout", 0, "SECONDS", H, false, "a keep-alive connection may idle",
   [](const Options& d) { return show_seconds(d.server.idle_timeout); },
   [](Options& o, const std::string& v) { o.server.idle_timeout = seconds(v); }},
  {"send-timeout", 0, "SECONDS", H, false, "a client may stop reading a response",
   [](const Options& d) { return show_seconds(d.server.send_timeout); },
   [](Options& o, const std::string& v) { o.server.send_timeout = seconds(v); }},
  {"graceful-timeout", 0, "SECONDS", H | F, false,
   "requests in flight get this long on SIGTERM/SIGINT before the process exits",
   [](const Options& d) { return show_seconds(d.server.graceful_timeout); },
   [](Options& o, const std::string& v) { o.server.graceful_timeout = seconds(v); }},
  {"max-requests", 0, "N", H, false,
   "with --workers: a worker that has answered N requests (plus its share of --max-requests-jitter) stops "
   "accepting, finishes its requests and exits while the master starts its replacement; 0: never",
   [](const Options& d) { return show(d.server.max_requests); },
   [](Options& o, const std::string& v) { o.server.max_requests = whole(v, 0, 1ull << 62); }},
  {"max-requests-jitter", 0, "J", H, false,
   "each worker's --max-requests limit is N plus a random whole number from 0 to J, so that workers do not "
   "all leave at once (gunicorn's rule)",
   [](const Options& d) { return show(d.server.max_requests_jitter); },
   [](Options& o, const std::string& v) { o.server.max_requests_jitter = whole(v, 0, 1ull << 62); }},
  {"max-worker-memory", 0, "MB", H, false,
   "with --workers: a worker whose resident memory exceeds MB mebibytes after a request is recycled as by "
   "--max-requests (uWSGI's reload-on-rss); 0: never",
   [](const Options& d) { return show(d.server.max_worker_rss >> 20); },
   [](Options& o, const std::string& v) { o.server.max_worker_rss = whole(v, 0, 1ull << 40) << 20; }},
  {"request-timeout", 0, "SECONDS", H, false,
   "with --workers: an app call running longer is answered 504, the app thread's stack goes to the error "
   "log, and its worker finishes its other requests and is replaced (uWSGI's harakiri); off by default",
   [](const Options&) { return std::string("off"); },
   [](Options& o, const std::string& v) { o.server.request_timeout = seconds(v); }},
  {"ws-max-message-bytes", 0, "BYTES", H, false,
   "largest WebSocket message a client may send (fragments together); larger: closed with 1009",
   [](const Options& d) { return show_bytes(d.server.ws_max_message_bytes); },
   [](Options& o, const std::string& v) { o.server.ws_max_message_bytes = whole(v, 1, 1ull << 40); }},
  {"ws-send-queue-bytes", 0, "BYTES", H, false,
   "WebSocket messages queued for a slow client up to this size; past it send() returns false",
   [](const Options& d) { return show_bytes(d.server.ws_send_queue_bytes); },
   [](Options& o, const std::string& v) { o.server.ws_send_queue_bytes = whole(v, 1, 1ull << 40); }},
  {"ws-allowed-origin", 0, "ORIGIN", H, true,
   "a browser origin (https://app.example, http://localhost:3000; * for any) whose pages may open a WebSocket "
   "besides the same origin; repeatable. A handshake whose Origin is neither gets 403; one without Origin "
   "(not a browser) is allowed",
   [](const Options&) { return std::string("same origin"); },
   [](Options& o, const std::string& v) { o.server.ws_allowed_origins.push_back(v); }},
  {"ws-connection-buffer-bytes", 0, "BYTES", H, false,
   "HTTP/2: memory for unfinished incoming WebSocket messages across the streams of one connection; a "
   "stream whose message would pass it is closed with 1009",
   [](const Options& d) { return show_bytes(d.server.ws_connection_buffer_bytes); },
   [](Options& o, const std::string& v) { o.server.ws_connection_buffer_bytes = whole(v, 4096, 1ull << 40); }},
  {"ws-process-buffer-bytes", 0, "BYTES", H, false,
   "memory for unfinished incoming WebSocket messages across every WebSocket of a process (HTTP/1.1 and "
   "HTTP/2); one whose message would pass it is closed with 1013 (try again later)",
   [](const Options& d) { return show_bytes(d.server.ws_process_buffer_bytes); },
   [](Options& o, const std::string& v) { o.server.ws_process_buffer_bytes = whole(v, 4096, 1ull << 40); }},
  {"ws-idle-timeout", 0, "SECONDS", H, false,
   "a silent WebSocket client is pinged after half of this and closed after all of it",
   [](const Options& d) { return show_seconds(d.server.ws_idle_timeout); },
   [](Options& o, const std::string& v) { o.server.ws_idle_timeout = seconds(v); }},
  {"backlog", 0, "N", F, false, "listen() backlog of the socket opened for --listen",
   [](const Options& d) { return show(static_cast<std::uint64_t>(d.backlog)); },
   [](Options& o, const std::string& v) { o.backlog = static_cast<int>(whole(v, 1, 65535)); }},
  {"socket-mode", 0, "OCTAL", F, false,
   "permissions of the unix socket created for --listen unix:/PATH: 0660 lets a front server in the socket's "
   "group (nginx's www-data) connect; under umask 022 the socket is 0755 and only its owner may connect "
   "(nginx answers 502)",
   [](const Options&) { return std::string("as the umask leaves them"); },
   [](Options& o, const std::string& v) { o.socket_mode = static_cast<int>(whole(v, 0, 07777, 8)); }},
  };
}
// clang-format on

// Spellings kept from the former csgi-fcgi/csgi-cgi parsers: deprecated name → row.
constexpr std::pair<const char*, const char*> deprecated[] = {{"max-body", "max-body-bytes"}};
// Options that no longer do anything, still taken (with their value) so that a command line that gives
// them keeps working: name → the warning's reason.
constexpr std::pair<const char*, const char*> retired[] = {
    {"discard-body-bytes", "every request body is read before the app runs (--body-buffer-bytes, --max-body-bytes)"}};

// Every option getopt_long is told about: the table's rows, the caller's, the deprecated spellings and
// --help, each with its long name, short letter (or 0), whether it takes a value and may repeat.
struct Known {
  std::string name;
  char short_name;
  bool takes_value;
  bool repeatable;
};

std::vector<Known> known_options(const std::vector<ExtraOption>& extra) {
  std::vector<Known> known;
  for (const OptionSpec& row : option_table())
    known.push_back({row.name, row.short_name, row.value_name != nullptr, row.repeatable});
  for (const ExtraOption& e : extra) known.push_back({e.name, 0, e.value_name != nullptr, e.repeatable});
  for (const auto& [old, now] : deprecated) known.push_back({old, 0, true, false});
  for (const auto& [old, why] : retired) known.push_back({old, 0, true, false});
  known.push_back({"help", 'h', false, true});
  known.push_back({"version", 0, false, true});
  return known;
}

// Levenshtein distance between two option names.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean --workers?)" for the known name nearest to `word` ("--wrokers"), when one is near enough.
std::string suggestion(std::string_view word, const std::vector<Known>& known) {
  while (!word.empty() && word.front() == '-') word.remove_prefix(1);
  if (word.empty()) return {};
  const Known* best = nullptr;
  std::size_t best_distance = word.size() / 3 + 1;
  for (const Known& k : known)
    if (std::size_t d = edit_distance(word, k.name); d <= best_distance && (!best || d < best_distance)) {
      best = &k;
      best_distance = d;
    }
  return best ? " (did you mean --" + best->name + "?)" : std::string();
}

// getopt_long's error for the word at argv[optind - 1]: the option as written, without its value.
std::string offending(char* const* argv, int at, int letter) {
  if (letter > 0 && letter < 256) return std::string("-") + static_cast<char>(letter);
  std::string_view w = at >= 0 ? argv[at] : "";
  return std::string(w.substr(0, w.find('=')));
}

// Runs getopt_long over `words` (words[0] is a placeholder program name): the options in order, and the
// other words. getopt_long keeps its state in globals, so this runs once per process in practice (tests
// call it repeatedly from one thread; optind = 0 starts it afresh each time).
void read_words(std::vector<std::string>& words, const std::vector<Known>& known, Parsed& p,
                std::vector<std::string>& others) {
  std::vector<option> longs;
  std::string shorts = "-:";
  for (std::size_t i = 0; i < known.size(); ++i) {
    longs.push_back({known[i].name.c_str(), known[i].takes_value ? required_argument : no_argument, nullptr,
                     static_cast<int>(1000 + i)});
    if (known[i].short_name) shorts += std::string(1, known[i].short_name) + (known[i].takes_value ? ":" : "");
  }
  longs.push_back({nullptr, 0, nullptr, 0});
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  auto by_letter = [&](int c) -> const Known* {
    for (const Known& k : known)
      if (k.short_name && k.short_name == c) return &k;
    return nullptr;
  };
  optind = 0;
  opterr = 0;
  for (;;) {
    int index = -1;
    int c = getopt_long(argc, argv.data(), shorts.c_str(), longs.data(), &index);
    if (c == -1) break;
    if (c == 1) {
      others.emplace_back(optarg);
      continue;
    }
    if (c == '?') {
      std::string word = offending(argv.data(), optind - 1, optopt);
      throw UsageError("unknown or ambiguous option '" + word + "'" + suggestion(word, known));
    }
    if (c == ':') {
      const Known* k = optopt >= 1000 ? &known[static_cast<std::size_t>(optopt - 1000)] : by_letter(optopt);
      throw UsageError("--" + (k ? k->name : offending(argv.data(), optind - 1, optopt)) + " needs a value");
    }
    const Known* k = c >= 1000 ? &known[static_cast<std::size_t>(c - 1000)] : by_letter(c);
    if (!k) throw UsageError("unknown option '" + offending(argv.data(), optind - 1, c) + "'");
    if (!k->repeatable && p.has(k->name)) throw UsageError("--" + k->name + " may be given only once");
    p.given.push_back({k->name, k->takes_value && optarg ? optarg : ""});
  }
  for (int i = optind; i < argc; ++i) others.emplace_back(argv[static_cast<std::size_t>(i)]);
}

// The help of a list of options: "  -l, --listen ADDR" and the text beside it, wrapped.
std::string help_list(std::string_view title, const std::vector<std::pair<std::string, std::string>>& entries) {
  constexpr std::size_t column = 32, width = 100;
  std::string out = std::string(title) + ":\n";
  for (const auto& [name, text] : entries) {
    std::string line = "  " + name;
    if (line.size() + 2 > column) {
      out += line + "\n";
      line.clear();
    }
    line.resize(column, ' ');
    std::istringstream in(text);
    std::string word;
    bool first = true;
    while (in >> word) {
      if (!first && line.size() + 1 + word.size() > width) {
        out += line + "\n";
        line.assign(column, ' ');
        first = true;
      }
      line += (first ? "" : " ") + word;
      first = false;
    }
    out += line + "\n";
  }
  return out;
}

std::string entry_name(const char* name, char short_name, const char* value_name) {
  std::string out = short_name ? std::string("-") + short_name + ", " : "";
  out += "--" + std::string(name);
  if (value_name) out += " " + std::string(value_name);
  return out;
}

void apply_row(Options& o, const OptionSpec& row, const std::vector<std::string>& vals, const char* as) {
  if (!(row.adapters & static_cast<unsigned>(o.adapter)))
    throw UsageError("--" + std::string(as) + " does not apply to " + adapter_label(o.adapter) + "; it applies to " +
                     adapters_text(row.adapters));
  for (const std::string& v : vals) {
    try {
      row.apply(o, v);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--" + std::string(as) + ": " + e.what());
    }
  }
}

}  // namespace

std::string_view adapter_name(Adapter a) noexcept {
  switch (a) {
    case Adapter::http: return "HTTP";
    case Adapter::fastcgi: return "FastCGI";
    case Adapter::cgi: return "CGI";
  }
  return "?";
}

std::string adapter_label(Adapter a) {
  switch (a) {
    case Adapter::http: return "HTTP (the default)";
    case Adapter::fastcgi: return "FastCGI (--fastcgi)";
    case Adapter::cgi: return "CGI (--cgi)";
  }
  return "?";
}

Options default_options(Adapter adapter) {
  Options o;
  o.adapter = adapter;
  // libfcgi serves one request per connection at a time and a front server keeps connections open
  // (nginx's upstream keepalive defaults to 16): one thread would serve one kept connection only.
  if (adapter == Adapter::fastcgi) o.server.threads = 16;
  return o;
}

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec* find_option(std::string_view name) {
  for (const OptionSpec& row : option_table())
    if (name == row.name) return &row;
  return nullptr;
}

std::string describe() {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const OptionSpec& row : option_table()) {
    std::string help = row.help;
    if (std::string d = defaults_text(row); !d.empty()) help += ". Default: " + d;
    if (row.adapters != all_adapters) help += ". [" + adapters_text(row.adapters) + "]";
    entries.emplace_back(entry_name(row.name, row.short_name, row.value_name), help);
  }
  return help_list("Server options", entries);
}

std::string describe(std::string_view title, const std::vector<ExtraOption>& options) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const ExtraOption& e : options) entries.emplace_back(entry_name(e.name, 0, e.value_name), e.help);
  return help_list(title, entries);
}

bool Parsed::has(std::string_view name) const {
  for (const GivenOption& g : given)
    if (g.name == name) return true;
  return false;
}

std::vector<std::string> Parsed::values(std::string_view name) const {
  std::vector<std::string> out;
  for (const GivenOption& g : given)
    if (g.name == name) out.push_back(g.value);
  return out;
}

const std::vector<SignalSpec>& signal_table() {
  static const std::vector<SignalSpec> table = {
      {"TERM, INT",
       "stop accepting and finish the requests in flight (they say Connection: close; an idle keep-alive "
       "connection stays open until its next request or its idle timeout, so a request already on its way is "
       "never dropped), then exit 0; after --graceful-timeout the rest are cut, and a second TERM/INT closes "
       "idle connections at once",
       "forwarded to the workers, which do the same; the master exits 0 when all have"},
      {"HUP", "reopen the log files; re-read the TLS certificates and keys for new connections",
       "re-read the TLS certificates, start N new workers, then stop the old ones gracefully: zero failed "
       "requests; reopen the log files"},
      {"USR1", "reopen the log files (after logrotate)", "reopen the log files and forward: each worker reopens its own"},
      {"USR2", "ignored, with a line in the error log (an upgrade needs a master)",
       "binary upgrade: start the csgi binary now at the path this one was started from, on the same sockets; "
       "the old master leaves once the new one is ready, and stays if it fails (not with --http3: ignored, "
       "with a line in the error log)"},
  };
  return table;
}

std::string describe_signals() {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const SignalSpec& row : signal_table())
    entries.emplace_back(row.names, std::string("Single process: ") + row.single + ". With --workers: " + row.master + ".");
  return help_list("Signals (each is logged: csgi: SIGTERM: …)", entries);
}

std::string signals_markdown() {
  std::string out = "| signal | single process | with `--workers` (master) |\n|---|---|---|\n";
  for (const SignalSpec& row : signal_table())
    out += "| " + std::string(row.names) + " | " + row.single + " | " + row.master + " |\n";
  return out;
}

std::string options_markdown() {
  std::string out = "| option | default | adapters | meaning |\n|---|---|---|---|\n";
  for (const OptionSpec& row : option_table()) {
    std::string name = "`--" + std::string(row.name) + (row.value_name ? std::string(" ") + row.value_name : "") + "`";
    if (row.short_name) name += ", `-" + std::string(1, row.short_name) + "`";
    std::string d = defaults_text(row);
    out += "| " + name + " | " + (d.empty() ? "" : d) + " | " + adapters_text(row.adapters) + " | " + row.help + " |\n";
  }
  return out;
}

Parsed parse(int argc, char** argv, int first, const std::vector<ExtraOption>& extra, std::optional<Adapter> implied) {
  std::vector<std::string> words{"csgi"};
  for (int i = first; i < argc; ++i) words.emplace_back(argv[i]);
  Parsed p;
  std::vector<std::string> others;
  read_words(words, known_options(extra), p, others);
  p.help = p.has("help");
  p.version = p.has("version");
  if (p.help || p.version) return p;

  bool fastcgi = p.has("fastcgi"), cgi = p.has("cgi");
  if (fastcgi && cgi) throw UsageError("give only one of --fastcgi and --cgi");
  Adapter chosen = fastcgi ? Adapter::fastcgi : cgi ? Adapter::cgi : Adapter::http;
  if (implied && (fastcgi || cgi) && chosen != *implied)
    throw UsageError(std::string(fastcgi ? "--fastcgi" : "--cgi") + ": this program serves " +
                     std::string(adapter_name(*implied)) + " only");
  p.options = default_options(implied ? *implied : chosen);

  if (!others.empty() && p.options.adapter != Adapter::cgi) throw UsageError("unexpected argument '" + others.front() + "'");
  for (const OptionSpec& row : option_table())
    if (p.has(row.name)) apply_row(p.options, row, row.value_name ? p.values(row.name) : std::vector<std::string>{"1"}, row.name);
  for (const auto& [old, now] : deprecated) {
    if (!p.has(old)) continue;
    if (p.has(now)) throw UsageError("give only one of --" + std::string(old) + " and --" + now);
    p.warnings.push_back("--" + std::string(old) + " is deprecated; use --" + now);
    apply_row(p.options, *find_option(now), p.values(old), old);
  }
  for (const auto& [old, why] : retired)
    if (p.has(old)) p.warnings.push_back("--" + std::string(old) + " has no effect any more: " + why);
  validate(p.options);
  return p;
}

namespace {
// Recycling and the request timeout replace a worker: they need a master (--workers).
void validate_recycling(const Options& o) {
  const auto& s = o.server;
  const char* needs_master = s.max_requests > 0        ? "--max-requests"
                             : s.max_worker_rss > 0    ? "--max-worker-memory"
                             : s.request_timeout.count() ? "--request-timeout"
                                                       : nullptr;
  if (needs_master && s.workers == 0)
    throw UsageError(std::string(needs_master) +
                     " needs --workers N: a worker is replaced by the master process, which a single process does not have");
  if (s.max_requests_jitter > 0 && s.max_requests == 0) throw UsageError("--max-requests-jitter needs --max-requests");
}
}  // namespace

void validate(Options& o) {
  auto& s = o.server;
  for (const std::string& l : s.listen) {
    try {
      standalone::parse_listen(l);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  for (const auto& c : s.tls_certificates) {
    if (c.key_file.empty()) throw UsageError("--tls-cert " + c.cert_file + ": no --tls-key given for it (they come in pairs)");
    if (c.cert_file.empty()) throw UsageError("--tls-key " + c.key_file + ": no --tls-cert given for it (they come in pairs)");
  }
  if (s.http3 && s.tls_certificates.empty()) throw UsageError("--http3: give --tls-cert FILE --tls-key FILE too");
  if (s.http3 && std::max(s.workers, 1u) * s.threads > 128)
    throw UsageError("--http3: at most 128 io threads in all, --workers × --threads (each has a UDP socket "
                     "numbered in a byte of its connection IDs)");
  if (!s.tls_client_ca.empty() && s.tls_certificates.empty())
    throw UsageError("--tls-client-ca: give --tls-cert FILE --tls-key FILE too");
  if (s.max_request_line > s.max_header_bytes) s.max_request_line = s.max_header_bytes;
  if (o.adapter == Adapter::fastcgi && s.listen.size() > 1)
    throw UsageError("--listen: FastCGI (--fastcgi) listens on one address; give it once");
  if (s.threads == 0 || s.threads > 1024) throw UsageError("--threads must be 1…1024");
  if (s.max_connections == 0) throw UsageError("--max-connections must be at least 1");
  if (s.proxy_protocol && s.trusted_proxies.empty())
    throw UsageError("--proxy-protocol needs --trusted-proxy CIDR: the addresses of the proxies that send the header");
  if (!s.proxy_protocol && !s.trusted_proxies.empty())
    throw UsageError("--trusted-proxy applies with --proxy-protocol");
  validate_recycling(o);
  if (o.adapter == Adapter::cgi && o.access_log == "-")
    throw UsageError("--access-log -: under CGI (--cgi) standard output is the response; give a file");
}

}  // namespace csgi::runner
