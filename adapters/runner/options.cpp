#include "csgi/adapters/runner/options.hpp"

#include <boost/program_options.hpp>
#include <charconv>
#include <cmath>
#include <sstream>

namespace csgi::runner {

namespace po = boost::program_options;

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
   "without it the sockets systemd passes in LISTEN_FDS, if any. FastCGI: at most one",
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
   "the default, but 8 for csgi serve --wsgi); N: on a pool of N threads with one shared queue, the io "
   "threads keep serving while the app blocks. Under FastCGI the app runs on its --threads",
   [](const Options& d) { return show(d.server.app_threads); },
   [](Options& o, const std::string& v) { o.server.app_threads = static_cast<unsigned>(whole(v, 0, 4096)); }},
  {"reuseport", 0, nullptr, H, false,
   "one SO_REUSEPORT socket per io thread instead of one shared socket",
   off, [](Options& o, const std::string&) { o.server.reuseport = true; }},
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
   [](Options& o, const std::string& v) { o.server.access_log = v; }},
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
   "a Content-Length body up to this size is read before the app runs (a slow client holds no thread); "
   "larger and chunked bodies are read while the app reads them",
   [](const Options& d) { return show_bytes(d.server.body_buffer_bytes); },
   [](Options& o, const std::string& v) { o.server.body_buffer_bytes = whole(v, 0, 1ull << 62); }},
  {"discard-body-bytes", 0, "BYTES", H, false,
   "a request body the app did not read is discarded up to this size and the connection kept; a longer "
   "one closes the connection after the response",
   [](const Options& d) { return show_bytes(d.server.discard_body_bytes); },
   [](Options& o, const std::string& v) { o.server.discard_body_bytes = whole(v, 0, 1ull << 62); }},
  {"max-connections", 0, "N", H, false, "open connections per process; at the limit accepting pauses",
   [](const Options& d) { return show(d.server.max_connections); },
   [](Options& o, const std::string& v) { o.server.max_connections = whole(v, 1, 1u << 24); }},
  {"header-timeout", 0, "SECONDS", H, false, "to receive a request head; then 408",
   [](const Options& d) { return show_seconds(d.server.header_timeout); },
   [](Options& o, const std::string& v) { o.server.header_timeout = seconds(v); }},
  {"body-timeout", 0, "SECONDS", H, false, "between two pieces of a request body; then 408",
   [](const Options& d) { return show_seconds(d.server.body_timeout); },
   [](Options& o, const std::string& v) { o.server.body_timeout = seconds(v); }},
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
  {"backlog", 0, "N", F, false, "listen() backlog of the socket opened for --listen",
   [](const Options& d) { return show(static_cast<std::uint64_t>(d.backlog)); },
   [](Options& o, const std::string& v) { o.backlog = static_cast<int>(whole(v, 1, 65535)); }},
  {"socket-mode", 0, "OCTAL", F, false, "permissions of the unix socket created for --listen unix:/PATH",
   [](const Options&) { return std::string("as the umask leaves them"); },
   [](Options& o, const std::string& v) { o.socket_mode = static_cast<int>(whole(v, 0, 07777, 8)); }},
  };
}
// clang-format on

// Spellings kept from the former csgi-fcgi/csgi-cgi parsers: deprecated name → row.
constexpr std::pair<const char*, const char*> deprecated[] = {{"max-body", "max-body-bytes"}};

std::string po_name(const OptionSpec& row) {
  return row.short_name ? std::string(row.name) + "," + row.short_name : std::string(row.name);
}

bool given(const po::variables_map& vm, const char* name) {
  auto it = vm.find(name);
  if (it == vm.end() || it->second.defaulted() || it->second.empty()) return false;
  if (auto* b = boost::any_cast<bool>(&it->second.value())) return *b;
  return true;
}

std::vector<std::string> values(const po::variables_map& vm, const OptionSpec& row) {
  if (!row.value_name) return {"1"};
  if (row.repeatable) return vm[row.name].as<std::vector<std::string>>();
  return {vm[row.name].as<std::string>()};
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

po::options_description describe() {
  po::options_description o("Server options");
  for (const OptionSpec& row : option_table()) {
    std::string help = row.help;
    if (std::string d = defaults_text(row); !d.empty()) help += ". Default: " + d;
    if (row.adapters != all_adapters) help += ". [" + adapters_text(row.adapters) + "]";
    if (!row.value_name)
      o.add_options()(po_name(row).c_str(), po::bool_switch(), help.c_str());
    else if (row.repeatable)
      o.add_options()(po_name(row).c_str(), po::value<std::vector<std::string>>()->value_name(row.value_name)->composing(),
                      help.c_str());
    else
      o.add_options()(po_name(row).c_str(), po::value<std::string>()->value_name(row.value_name), help.c_str());
  }
  return o;
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

Parsed parse(int argc, char** argv, int first, const po::options_description& extra, std::optional<Adapter> implied) {
  po::options_description all;
  all.add(describe()).add(extra);
  po::options_description hidden;
  for (const auto& [old, now] : deprecated) hidden.add_options()(old, po::value<std::string>());
  hidden.add_options()("help,h", "")("csgi-words", po::value<std::vector<std::string>>());
  all.add(hidden);
  po::positional_options_description words;
  words.add("csgi-words", -1);

  // "--script-name=" gives an empty value, as "--script-name ''" does (program_options refuses it).
  std::vector<std::string> args;
  for (int i = first; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--") && a.size() > 3 && a.back() == '=' && a.find('=') == a.size() - 1) {
      args.emplace_back(a.substr(0, a.size() - 1));
      args.emplace_back();
    } else {
      args.emplace_back(a);
    }
  }
  Parsed p;
  try {
    auto parsed = po::command_line_parser(args).options(all).positional(words).run();
    po::store(parsed, p.vm);
    po::notify(p.vm);
    p.given = parsed.options;
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  p.help = p.vm.count("help") > 0;
  if (p.help) return p;

  bool fastcgi = given(p.vm, "fastcgi"), cgi = given(p.vm, "cgi");
  if (fastcgi && cgi) throw UsageError("give only one of --fastcgi and --cgi");
  Adapter chosen = fastcgi ? Adapter::fastcgi : cgi ? Adapter::cgi : Adapter::http;
  if (implied && (fastcgi || cgi) && chosen != *implied)
    throw UsageError(std::string(fastcgi ? "--fastcgi" : "--cgi") + ": this program serves " +
                     std::string(adapter_name(*implied)) + " only");
  p.options = default_options(implied ? *implied : chosen);

  if (p.vm.count("csgi-words") && p.options.adapter != Adapter::cgi)
    throw UsageError("unexpected argument '" + p.vm["csgi-words"].as<std::vector<std::string>>().front() + "'");
  for (const OptionSpec& row : option_table())
    if (given(p.vm, row.name)) apply_row(p.options, row, values(p.vm, row), row.name);
  for (const auto& [old, now] : deprecated) {
    if (!given(p.vm, old)) continue;
    if (given(p.vm, now)) throw UsageError("give only one of --" + std::string(old) + " and --" + now);
    p.warnings.push_back("--" + std::string(old) + " is deprecated; use --" + now);
    apply_row(p.options, *find_option(now), {p.vm[old].as<std::string>()}, old);
  }
  validate(p.options);
  return p;
}

void validate(Options& o) {
  auto& s = o.server;
  if (s.max_request_line > s.max_header_bytes) s.max_request_line = s.max_header_bytes;
  if (o.adapter == Adapter::fastcgi && s.listen.size() > 1)
    throw UsageError("--listen: FastCGI (--fastcgi) listens on one address; give it once");
  if (s.threads == 0 || s.threads > 1024) throw UsageError("--threads must be 1…1024");
  if (s.max_connections == 0) throw UsageError("--max-connections must be at least 1");
  if (o.adapter == Adapter::cgi && s.access_log == "-")
    throw UsageError("--access-log -: under CGI (--cgi) standard output is the response; give a file");
}

}  // namespace csgi::runner
