#pragma once
/// The one command line of every way to launch an app: `csgi serve` (HTTP, `--fastcgi`, `--cgi`), its
/// aliases csgi-fcgi and csgi-cgi, and programs that call csgi::run(). One options struct (Options), one
/// option table (option_table()) from which `--help` and the
/// options table of docs/standalone.md are generated, and one parser (parse()).
///
/// Each row says which adapters it applies to; an option given for an adapter it does not apply to is a
/// usage error naming both ("--reuseport does not apply to FastCGI (--fastcgi)"). An option has one
/// default for every adapter it applies to, except where a row shows a per-adapter default (`--threads`:
/// 1 for HTTP, 16 for FastCGI, where each thread serves one kept front-server connection at a time).
///
/// The words are read by getopt_long(3): `--name VALUE`, `--name=VALUE` (`--name=` is an empty value),
/// `-l VALUE`, `-lVALUE`, a long name shortened to any unambiguous prefix, and other words anywhere.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/standalone/server.hpp"

namespace csgi::runner {

/// The app threads a WSGI app runs on unless --app-threads says (`csgi serve --wsgi`, `python3 -m csgi
/// serve --wsgi`): a WSGI app blocks on I/O as a rule (docs/standalone.md).
inline constexpr unsigned wsgi_app_threads = 8;

/// The protocol an app is served with. The values are bits of OptionSpec::adapters.
enum class Adapter : unsigned { http = 1, fastcgi = 2, cgi = 4 };
inline constexpr unsigned all_adapters = 7;

/// "HTTP", "FastCGI", "CGI".
std::string_view adapter_name(Adapter a) noexcept;
/// How the adapter is chosen on the command line: "HTTP (the default)", "FastCGI (--fastcgi)", "CGI (--cgi)".
std::string adapter_label(Adapter a);

/// Everything the command line sets. The HTTP server reads `server` whole; the FastCGI and CGI adapters
/// read the fields of the rows that apply to them (runner.hpp's serve() translates).
struct Options {
  Adapter adapter = Adapter::http;
  standalone::ServerOptions server;
  /// --script-name was given. For a gateway, even "" is then a fixed mount point (SCRIPT_NAME "" for every
  /// request); without it the gateway derives the mount point from the front server's variables.
  bool script_name_given = false;
  int backlog = 1024;    // FastCGI: listen() backlog of the socket it opens for --listen
  int socket_mode = -1;  // FastCGI: permissions of the unix socket it creates (-1: as the umask leaves them)
  /// --access-log FILE ("-": stdout) and its line format: written by the access_log middleware that
  /// serve() puts outermost, under every adapter (the HTTP server reports it the bytes it sent).
  std::string access_log;
  std::string access_log_format = "combined";
  /// --reload: `csgi serve` watches the --app library (or the --wsgi module's files) and restarts the
  /// workers when they change (ServerOptions::reload, which the csgi command fills in).
  bool reload = false;
};

/// The defaults for `adapter`: Options{} with the adapter set and its per-adapter defaults applied.
Options default_options(Adapter adapter);

/// One row of the option table.
struct OptionSpec {
  const char* name;        // long name, without "--"
  char short_name;         // one-letter alias ("-l"), or 0
  const char* value_name;  // "N", "ADDR", ...; nullptr for a switch
  unsigned adapters;       // bits of Adapter it applies to
  bool repeatable;         // may be given more than once (values collected in order)
  const char* help;        // one or two sentences
  /// The default as --help and the docs show it, for the given adapter's defaults ("" when there is none
  /// worth showing, e.g. --listen's, which the help text explains).
  std::string (*default_text)(const Options& defaults);
  /// Stores one value (for a switch: "1"); throws std::invalid_argument with the reason for a bad value.
  void (*apply)(Options& options, const std::string& value);
};

/// Every option of the runner, in the order --help lists them. --fastcgi and --cgi choose the adapter.
const std::vector<OptionSpec>& option_table();
/// The row named `name` (without "--"), or nullptr.
const OptionSpec* find_option(std::string_view name);

/// An option the calling program adds to the table's (the csgi command's app modes). They apply to every
/// adapter and are not validated here: the caller reads them from Parsed::given.
struct ExtraOption {
  const char* name;        // long name, without "--"
  const char* value_name;  // nullptr for a switch
  bool repeatable;
  const char* help;
};

/// The table under the title "Server options:", one option per entry, each help text followed by its
/// default(s) and, unless it applies everywhere, the adapters it applies to. What --help prints.
std::string describe();
/// Options listed as describe() lists the table's, under `title`.
std::string describe(std::string_view title, const std::vector<ExtraOption>& options);
/// The table as the Markdown table of docs/standalone.md ("| option | default | adapters | meaning |").
std::string options_markdown();

/// One row of the signal table: what a signal does in a single process and under a master (--workers).
/// The SIGNALS of --help and the table of docs/standalone.md's "Signals" are made from it.
struct SignalSpec {
  const char* names;   // "TERM, INT"
  const char* single;  // in a single process
  const char* master;  // with --workers, in the master
};
const std::vector<SignalSpec>& signal_table();
/// The signal table as --help shows it: one entry per row, the two cases each in a sentence, wrapped.
std::string describe_signals();
/// The signal table as the Markdown table of docs/standalone.md ("| signal | single process | ... |").
std::string signals_markdown();

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One option as given: its long name (the table's or the caller's; a deprecated spelling as written)
/// and its value ("" for a switch).
struct GivenOption {
  std::string name;
  std::string value;
};

struct Parsed {
  Options options;
  std::vector<GivenOption> given;     // every option given, the caller's `extra` ones included, in order
  std::vector<std::string> warnings;  // deprecated spellings used, one line each
  bool help = false;                  // -h / --help
  bool version = false;               // --version
  /// Whether the option named `name` was given.
  bool has(std::string_view name) const;
  /// The values given for `name`, in order.
  std::vector<std::string> values(std::string_view name) const;
};

/// Parses argv[first..argc) against the table plus `extra` (the caller's own options, e.g. the csgi
/// command's app modes). `implied`: the adapter the program serves whatever the command line says
/// (csgi-fcgi, a csgi::run program spawned on a FastCGI socket); --fastcgi/--cgi choose it otherwise.
/// Words that are not options are refused, except under CGI (a server passes an ISINDEX query's words as
/// arguments). Throws UsageError with a one-line reason.
/// An option given twice that is not repeatable, an unknown or ambiguous name and a missing value are
/// usage errors too.
Parsed parse(int argc, char** argv, int first, const std::vector<ExtraOption>& extra,
             std::optional<Adapter> implied = std::nullopt);

/// Checks the values across options (limits, ranges, at most one --listen for FastCGI); throws UsageError.
void validate(Options& options);

/// Where a WSGI app runs when --app-threads is not given: on the io thread, the fast path for a quick app,
/// until a call blocks or computes past 2 ms; then on a pool of wsgi_app_threads, for good.
inline void use_wsgi_app_threads(Options& o) noexcept {
  o.server.app_threads = wsgi_app_threads;
  o.server.app_inline_first = true;
}

}  // namespace csgi::runner
