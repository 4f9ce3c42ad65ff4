// The runner's one command line: every option refused, with a clear reason, for an adapter it does not
// apply to; one default per option wherever it applies (per-adapter defaults only where the table shows
// them); the FastCGI thread count left as given; the deprecated spellings; and docs/standalone.md's options
// table generated from the option table.
#include "csgi/adapters/runner/options.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

using namespace csgi::runner;

namespace {

constexpr Adapter adapters[] = {Adapter::http, Adapter::fastcgi, Adapter::cgi};

// parse() over {"prog", args...}.
Parsed parse_args(std::vector<std::string> args, std::optional<Adapter> implied = std::nullopt) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse(static_cast<int>(argv.size()), argv.data(), 1, {}, implied);
}

std::string usage_error(std::vector<std::string> args, std::optional<Adapter> implied = std::nullopt) {
  try {
    parse_args(std::move(args), implied);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> switch_for(Adapter a) {
  if (a == Adapter::fastcgi) return {"--fastcgi"};
  if (a == Adapter::cgi) return {"--cgi"};
  return {};
}

// A valid value for each option that takes one.
std::string sample(const OptionSpec& row) {
  std::string v = row.value_name;
  if (v == "ADDR") return "unix:/tmp/x.sock";
  if (v == "PATH") return "/app";
  if (v == "FILE") return "/tmp/x.log";
  if (v == "OCTAL") return "660";
  if (v == "SECONDS") return "5";
  if (v == "BYTES") return "4096";
  if (v == "CIDR") return "10.0.0.0/8";
  return "2";
}

// What an option needs beside it to be valid on its own.
std::vector<std::string> companion(const OptionSpec& row) {
  std::string name = row.name;
  if (name == "proxy-protocol") return {"--trusted-proxy", "127.0.0.1"};
  if (name == "trusted-proxy") return {"--proxy-protocol"};
  // Options that replace workers need a master; the jitter needs its limit.
  if (name == "max-requests" || name == "max-worker-memory" || name == "request-timeout") return {"--workers", "2"};
  if (name == "max-requests-jitter") return {"--workers", "2", "--max-requests", "9"};
  // TLS files come in pairs, and a client CA needs them.
  if (name == "tls-cert") return {"--tls-key", "k.pem"};
  if (name == "tls-key") return {"--tls-cert", "c.pem"};
  if (name == "tls-client-ca" || name == "http3") return {"--tls-cert", "c.pem", "--tls-key", "k.pem"};
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("--http3 needs certificates, and at most 128 io threads in all") {
  CHECK(usage_error({"--http3"}) == "--http3: give --tls-cert FILE --tls-key FILE too");
  CHECK_NOTHROW(parse_args({"--http3", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--workers", "32", "--threads", "4"}));
  CHECK(usage_error({"--http3", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--workers", "33", "--threads", "4"}) ==
        "--http3: at most 128 io threads in all, --workers × --threads (each has a UDP socket numbered in a byte "
        "of its connection IDs)");
  CHECK_NOTHROW(parse_args({"--http3", "--http3-retry", "--tls-cert", "c.pem", "--tls-key", "k.pem"}));
}

TEST_CASE("an option given for an adapter it does not apply to is a usage error naming the option and the adapter") {
  int refused = 0;
  for (const OptionSpec& row : option_table()) {
    for (Adapter a : adapters) {
      std::vector<std::string> args = switch_for(a);
      args.push_back("--" + std::string(row.name));
      if (row.value_name) args.push_back(sample(row));
      if (std::string(row.name) == "fastcgi" || std::string(row.name) == "cgi") continue;
      INFO(args.back() << " with " << adapter_name(a));
      if (row.adapters & static_cast<unsigned>(a)) {
        for (const std::string& c : companion(row)) args.push_back(c);
        CHECK_NOTHROW(parse_args(args));
      } else {
        std::string e = usage_error(args);
        CHECK(e.find("--" + std::string(row.name) + " does not apply to " + std::string(adapter_name(a))) == 0);
        ++refused;
      }
    }
  }
  CHECK(refused > 10);
  CHECK(usage_error({"--fastcgi", "--reuseport"}) ==
        "--reuseport does not apply to FastCGI (--fastcgi); it applies to HTTP");
  CHECK(usage_error({"--cgi", "--workers", "2"}) == "--workers does not apply to CGI (--cgi); it applies to HTTP, FastCGI");
  // The program's own adapter counts as chosen (csgi-fcgi, a csgi::run program spawned on a FastCGI socket).
  CHECK(usage_error({"--error-log", "x"}, Adapter::fastcgi).find("--error-log does not apply to FastCGI") == 0);
  CHECK(usage_error({"--cgi"}, Adapter::fastcgi) == "--cgi: this program serves FastCGI only");
  CHECK(usage_error({"--fastcgi", "--cgi"}) == "give only one of --fastcgi and --cgi");
}

TEST_CASE("recycling and the request timeout need --workers; a single process refuses them with a usage error") {
  CHECK(usage_error({"--max-requests", "100"}).find("--max-requests needs --workers N") == 0);
  CHECK(usage_error({"--max-worker-memory", "200"}).find("--max-worker-memory needs --workers N") == 0);
  CHECK(usage_error({"--request-timeout", "5"}).find("--request-timeout needs --workers N") == 0);
  CHECK(usage_error({"--workers", "2", "--max-requests-jitter", "5"}) == "--max-requests-jitter needs --max-requests");
  auto o = parse_args({"--workers", "2", "--max-requests", "100", "--max-requests-jitter", "10", "--max-worker-memory",
                       "300", "--request-timeout", "2.5"})
               .options.server;
  CHECK(o.max_requests == 100);
  CHECK(o.max_requests_jitter == 10);
  CHECK(o.max_worker_rss == 300ull << 20);
  CHECK(o.request_timeout == std::chrono::milliseconds(2500));
}

TEST_CASE("FastCGI keeps the --threads given; its own default applies only when none is") {
  CHECK(parse_args({"--fastcgi", "--threads", "1"}).options.server.threads == 1);
  CHECK(parse_args({"--fastcgi"}).options.server.threads == 16);
  CHECK(parse_args({"--threads", "3"}, Adapter::fastcgi).options.server.threads == 3);
  CHECK(parse_args({}).options.server.threads == 1);
}

TEST_CASE("an option has one default for every adapter it applies to, except those the table shows per adapter") {
  for (const OptionSpec& row : option_table()) {
    std::vector<std::string> shown;
    for (Adapter a : adapters)
      if (row.adapters & static_cast<unsigned>(a)) shown.push_back(row.default_text(default_options(a)));
    std::string name = row.name;
    INFO("--" << name);
    bool per_adapter = name == "threads" || name == "listen";
    for (const auto& s : shown) CHECK((s == shown.front() || per_adapter));
  }
  // The body limit, the graceful stop and the workers are the HTTP server's, everywhere.
  for (Adapter a : adapters) {
    Options o = default_options(a);
    CHECK(o.server.max_body_bytes == csgi::standalone::ServerOptions{}.max_body_bytes);
    CHECK(o.server.graceful_timeout == csgi::standalone::ServerOptions{}.graceful_timeout);
    CHECK(o.server.workers == 0);
  }
}

TEST_CASE("the gateways take --max-body-bytes; --max-body still works, with a warning") {
  auto p = parse_args({"--fastcgi", "--max-body-bytes", "1000"});
  CHECK(p.options.server.max_body_bytes == 1000);
  CHECK(p.warnings.empty());
  p = parse_args({"--max-body", "2000"}, Adapter::cgi);
  CHECK(p.options.server.max_body_bytes == 2000);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings.front() == "--max-body is deprecated; use --max-body-bytes");
  CHECK(usage_error({"--max-body", "1", "--max-body-bytes", "2"}) == "give only one of --max-body and --max-body-bytes");
}

TEST_CASE("--discard-body-bytes, which no longer does anything, is still taken, with a warning") {
  auto p = parse_args({"--discard-body-bytes", "4096", "--threads", "2"});
  CHECK(p.options.server.threads == 2);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings.front().rfind("--discard-body-bytes has no effect any more: every request body is read", 0) == 0);
}

TEST_CASE("values are checked: ranges, seconds, the mount point, one FastCGI address") {
  CHECK(usage_error({"--threads", "0"}) == "--threads: '0' is not a whole number from 1 to 1024");
  CHECK(usage_error({"--workers", "-1"}) == "--workers: '-1' is not a whole number from 0 to 1024");
  CHECK(usage_error({"--idle-timeout", "0"}) == "--idle-timeout: '0' is not a number of seconds > 0");
  CHECK(usage_error({"--script-name", "app"}).find("--script-name: 'app' must be empty or start with /") == 0);
  CHECK(usage_error({"--fastcgi", "--listen", "a:1", "--listen", "b:2"}).find("--listen: FastCGI") == 0);
  CHECK(usage_error({"--fastcgi", "--socket-mode", "999"}).find("--socket-mode: '999' is not a octal") == 0);
  CHECK(parse_args({"--fastcgi", "--socket-mode", "660"}).options.socket_mode == 0660);
  CHECK(parse_args({"--graceful-timeout", "0.5"}).options.server.graceful_timeout == std::chrono::milliseconds(500));
  auto two = parse_args({"--listen", "a:1", "-l", "b:2"});
  CHECK(two.options.server.listen == std::vector<std::string>{"a:1", "b:2"});
}

TEST_CASE("--script-name= is an empty fixed mount point; words are refused except under CGI") {
  auto p = parse_args({"--fastcgi", "--script-name="});
  CHECK(p.options.script_name_given);
  CHECK(p.options.server.script_name.empty());
  CHECK_FALSE(parse_args({"--fastcgi"}).options.script_name_given);
  CHECK(usage_error({"word"}) == "unexpected argument 'word'");
  CHECK(parse_args({"--cgi", "isindex", "words"}).options.adapter == Adapter::cgi);
}

TEST_CASE("the words as getopt_long reads them: =VALUE, -lVALUE, prefixes; repeats, unknowns and missing values refused") {
  CHECK(parse_args({"--threads=3"}).options.server.threads == 3);
  CHECK(parse_args({"-t4"}).options.server.threads == 4);
  CHECK(parse_args({"--work", "2"}).options.server.workers == 2);  // an unambiguous prefix
  CHECK(parse_args({"-l", "a:1", "--listen=b:2", "-lc:3"}).options.server.listen ==
        std::vector<std::string>{"a:1", "b:2", "c:3"});
  CHECK(usage_error({"--threads", "2", "--threads", "3"}) == "--threads may be given only once");
  CHECK(usage_error({"--reuseport", "--reuseport"}) == "--reuseport may be given only once");
  CHECK(usage_error({"--no-such-option"}) == "unknown or ambiguous option '--no-such-option'");
  CHECK(usage_error({"--max", "1"}) == "unknown or ambiguous option '--max'");  // --max-body-bytes, --max-connections...
  CHECK(usage_error({"-x"}) == "unknown or ambiguous option '-x'");
  CHECK(usage_error({"--listen"}) == "--listen needs a value");
  CHECK(usage_error({"-l"}) == "--listen needs a value");
  CHECK(usage_error({"--", "word"}) == "unexpected argument 'word'");
  // The caller's own options come back in command-line order with their values.
  std::vector<std::string> args{"prog", "--mode-a", "x", "--threads", "2", "--flag", "--mode-a", "y"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::vector<ExtraOption> extra{{"mode-a", "V", true, "a"}, {"flag", nullptr, false, "f"}};
  Parsed p = parse(static_cast<int>(argv.size()), argv.data(), 1, extra);
  CHECK(p.values("mode-a") == std::vector<std::string>{"x", "y"});
  CHECK(p.has("flag"));
  CHECK_FALSE(p.has("help"));
  REQUIRE(p.given.size() == 4);
  CHECK(p.given[2].name == "flag");
  CHECK(p.options.server.threads == 2);
  CHECK(parse_args({"-h"}).help);
}

// The part of docs/standalone.md between "<!-- NAME table: generated from …-->" and "<!-- end of NAME table -->",
// rewritten to `want` first when CSGI_UPDATE_DOCS is set.
std::string generated_section(const std::string& name, const std::string& want) {
  std::string doc = read_file(CSGI_SOURCE_DIR "/docs/standalone.md");
  const std::string begin = "<!-- " + name + " table: generated from adapters/runner/options.cpp -->\n";
  const std::string end = "<!-- end of " + name + " table -->";
  auto b = doc.find(begin), e = doc.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  std::string section = doc.substr(b + begin.size(), e - b - begin.size());
  if (section != want && std::getenv("CSGI_UPDATE_DOCS")) {
    doc.replace(b + begin.size(), section.size(), want);
    std::ofstream(CSGI_SOURCE_DIR "/docs/standalone.md") << doc;
    section = want;
  }
  return section;
}

TEST_CASE("addresses and TLS pairs are checked with the command line, and an unknown option gets the nearest one") {
  CHECK(usage_error({"--listen", "127.0.0.1:99999"}) == "bad port in --listen 127.0.0.1:99999");
  CHECK(usage_error({"--listen", "unix:"}).find("bad unix socket path") == 0);
  CHECK(usage_error({"--tls-cert", "c.pem"}) == "--tls-cert c.pem: no --tls-key given for it (they come in pairs)");
  CHECK(usage_error({"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-cert", "d.pem"}) ==
        "--tls-cert d.pem: no --tls-key given for it (they come in pairs)");
  CHECK(usage_error({"--graceful-timout", "3"}) == "unknown or ambiguous option '--graceful-timout' (did you mean --graceful-timeout?)");
  CHECK(usage_error({"--treads", "3"}).find("did you mean --threads?") != std::string::npos);
  CHECK(usage_error({"--qqqqqqq"}) == "unknown or ambiguous option '--qqqqqqq'");
  CHECK(parse_args({"--version"}).version);
}

TEST_CASE("docs/standalone.md's options table is the option table") {
  std::string want = options_markdown();
  std::string section = generated_section("options", want);
  INFO("regenerate with CSGI_UPDATE_DOCS=1 cli_options_tests; the table is:\n" << want);
  CHECK(section == want);
  for (const OptionSpec& row : option_table()) CHECK(section.find("| `--" + std::string(row.name)) != std::string::npos);
}

TEST_CASE("docs/standalone.md's signals table and --help's SIGNALS are the signal table") {
  std::string want = signals_markdown();
  std::string section = generated_section("signals", want);
  INFO("regenerate with CSGI_UPDATE_DOCS=1 cli_options_tests; the table is:\n" << want);
  CHECK(section == want);
  std::string help;  // unwrapped
  std::istringstream in(describe_signals());
  for (std::string word; in >> word;) help += (help.empty() ? "" : " ") + word;
  for (const SignalSpec& row : signal_table()) {
    CHECK(help.find(std::string(row.names) + " Single process: " + row.single + ". With --workers: " + row.master) !=
          std::string::npos);
  }
}

TEST_CASE("--help lists every option with its default(s) and the adapters it applies to") {
  std::ostringstream help;
  help << describe();
  std::string flat;  // the help text is wrapped: compare with the line breaks and indents taken out
  for (std::istringstream in(help.str()); in;) {
    std::string word;
    in >> word;
    if (!word.empty()) flat += (flat.empty() ? "" : " ") + word;
  }
  for (const OptionSpec& row : option_table()) {
    INFO("--" << row.name);
    CHECK(flat.find("--" + std::string(row.name) + " ") != std::string::npos);
    for (Adapter a : adapters)
      if (row.adapters & static_cast<unsigned>(a))
        if (std::string d = row.default_text(default_options(a)); !d.empty()) {
          bool shown = flat.find(d) != std::string::npos;
          CHECK(shown);
        }
  }
  CHECK(flat.find("Default: 1 (HTTP), 16 (FastCGI). [HTTP, FastCGI]") != std::string::npos);
}

TEST_CASE("--proxy-protocol and --trusted-proxy come together; a block is an IPv4 or IPv6 address or CIDR") {
  auto o = parse_args({"--proxy-protocol", "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "::1"}).options.server;
  CHECK(o.proxy_protocol);
  CHECK(o.trusted_proxies == std::vector<std::string>{"10.0.0.0/8", "::1"});
  CHECK(usage_error({"--proxy-protocol"}).find("--proxy-protocol needs --trusted-proxy") == 0);
  CHECK(usage_error({"--trusted-proxy", "10.0.0.0/8"}) == "--trusted-proxy applies with --proxy-protocol");
  CHECK(usage_error({"--proxy-protocol", "--trusted-proxy", "10.0.0.0/33"}).find("--trusted-proxy: ") == 0);
  CHECK(usage_error({"--proxy-protocol", "--trusted-proxy", "lb.example"}).find("--trusted-proxy: ") == 0);
  CHECK(usage_error({"--fastcgi", "--proxy-protocol"}).find("--proxy-protocol does not apply to FastCGI") == 0);
}
