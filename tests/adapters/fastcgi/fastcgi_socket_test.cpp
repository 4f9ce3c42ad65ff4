// csgi-fcgi spoken to directly over its socket: the param map, bad input (huge params, NUL bytes, Proxy),
// a body read to EOF, fd 0 spawning (systemd StandardInput=socket, as docs/deploy/systemd describes) and
// the graceful stop on SIGTERM.
#include "csgi/adapters/fastcgi/fastcgi.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "harness.hpp"

using namespace csgi::test;
using namespace std::chrono_literals;
using Params = std::vector<std::pair<std::string, std::string>>;

namespace {
Params base(const std::string& uri) {
  return {{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", uri}, {"QUERY_STRING", ""}, {"SCRIPT_NAME", uri},
          {"SERVER_NAME", "localhost"}, {"SERVER_PORT", "80"}, {"SERVER_PROTOCOL", "HTTP/1.1"}};
}

int listen_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd, 64);
  return fd;
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

/// Waits (bounded) until `path` holds `n` lines; the access log's writer thread writes a moment later.
bool wait_for_lines(const std::string& path, int n) {
  for (int i = 0; i < 100 && count_lines(path) < n; ++i) std::this_thread::sleep_for(50ms);
  return count_lines(path) == n;
}

int task_count(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return n;
}

/// The threads of process `pid` once it has started them all: polls (bounded) until `want` is reached,
/// then checks the count stays.
int settled_tasks(pid_t pid, int want) {
  for (int i = 0; i < 100 && task_count(pid) != want; ++i) std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(200ms);
  return task_count(pid);
}
}  // namespace

TEST_CASE("is_fastcgi_socket tells a listening socket from anything else") {
  TempDir dir;
  int fd = listen_unix(dir / "s.sock");
  CHECK(csgi::fastcgi::is_fastcgi_socket(fd));
  ::close(fd);
  int pair[2];
  ::socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
  CHECK_FALSE(csgi::fastcgi::is_fastcgi_socket(pair[0]));
  ::close(pair[0]);
  ::close(pair[1]);
  CHECK_FALSE(csgi::fastcgi::is_fastcgi_socket(-1));
}

TEST_CASE("csgi-fcgi over a unix socket: params, bad input, body, graceful stop") {
  TempDir dir;
  std::string sock = dir / "app.sock";
  Process app({CSGI_FCGI_BIN, "--app", CSGI_GATEWAY_APP, "--app-arg", dir / "file.bin", "--listen", "unix:" + sock,
               "--threads", "4"},
              log_path(dir, "app"));
  REQUIRE(wait_for_unix(sock));

  SECTION("last value wins; HTTP_PROXY, HTTP_CONTENT_* dropped; empty CONTENT_LENGTH is absent") {
    Params p = base("/app/env/x");
    p.push_back({"SCRIPT_NAME", "/app"});
    p.push_back({"HTTP_PROXY", "http://evil:3128"});
    p.push_back({"HTTP_CONTENT_TYPE", "text/evil"});
    p.push_back({"CONTENT_LENGTH", ""});
    auto r = fastcgi_request(sock, p);
    REQUIRE(r.ended);
    auto env = parse_env(parse_cgi_response(r.stdout_data).body);
    CHECK(env["SCRIPT_NAME"] == "/app");
    CHECK(env["PATH_INFO"] == "/env/x");
    CHECK_FALSE(env.count("HTTP_PROXY"));
    CHECK_FALSE(env.count("HTTP_CONTENT_TYPE"));
    CHECK_FALSE(env.count("CONTENT_LENGTH"));
    CHECK(env["csgi.multithread"] == "true");
  }
  SECTION("NUL bytes inside a param value are cut there, nothing breaks") {
    Params p = base("/env");
    p.push_back({"HTTP_X_NUL", std::string("ab\0cd", 5)});
    p.push_back({std::string("HTTP_X\0Y", 8), "v"});
    auto r = fastcgi_request(sock, p);
    REQUIRE(r.ended);
    auto res = parse_cgi_response(r.stdout_data);
    CHECK(res.status == 200);
    CHECK(parse_env(res.body)["HTTP_X_NUL"] == "ab");
  }
  SECTION("2 MB of params → 431; a REQUEST_URI with %00 → 400; no REQUEST_METHOD → 400") {
    Params p = base("/env");
    p.push_back({"HTTP_X_HUGE", std::string(2 << 20, 'h')});
    auto r = fastcgi_request(sock, p);
    REQUIRE(r.ended);
    CHECK(parse_cgi_response(r.stdout_data).status == 431);
    r = fastcgi_request(sock, base("/a%00b"));
    CHECK(parse_cgi_response(r.stdout_data).status == 400);
    Params none = base("/env");
    none.erase(none.begin());
    r = fastcgi_request(sock, none);
    CHECK(parse_cgi_response(r.stdout_data).status == 400);
    // Still serving.
    r = fastcgi_request(sock, base("/pid"));
    CHECK(parse_cgi_response(r.stdout_data).status == 200);
  }
  SECTION("the body is read to the end of FastCGI stdin, whatever CONTENT_LENGTH says") {
    Params p = base("/echo");
    p[0].second = "POST";
    p.push_back({"CONTENT_LENGTH", "3"});
    std::string body(200000, 'b');
    auto r = fastcgi_request(sock, p, body);
    auto res = parse_cgi_response(r.stdout_data);
    CHECK(res.header("X-Body-Length") == "200000");
  }
  SECTION("SIGTERM: idle threads wake, the request in flight finishes, exit status 0") {
    auto slow = std::async(std::launch::async, [&] { return fastcgi_request(sock, base("/hang?ms=1500"), {}, 10s); });
    std::this_thread::sleep_for(300ms);
    auto t0 = std::chrono::steady_clock::now();
    auto status = app.stop(SIGTERM, 8s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    auto r = slow.get();
    CHECK(r.ended);
    CHECK(parse_cgi_response(r.stdout_data).body == "woke\n");
  }
}

TEST_CASE("systemd StandardInput=socket (docs/deploy/systemd): the socket as fd 0, SIGTERM stops it") {
  TempDir dir;
  std::string sock = dir / "app.sock";
  std::map<std::string, std::string> vars = {{"FCGI", CSGI_FCGI_BIN}, {"APP", CSGI_GATEWAY_APP},
                                             {"APP_ARG", dir / "file.bin"}, {"SOCKET", sock}};
  std::string unit = render(source_dir() + "/docs/deploy/systemd/csgi-app.service", vars);
  std::string socket_unit = render(source_dir() + "/docs/deploy/systemd/csgi-app.socket", vars);
  REQUIRE(unit.find("StandardInput=socket") != std::string::npos);
  REQUIRE(socket_unit.find("ListenStream=" + sock) != std::string::npos);
  auto start = unit.find("\nExecStart=") + 1;
  std::string exec = unit.substr(start + 10, unit.find('\n', start) - start - 10);
  std::vector<std::string> argv;
  for (std::size_t p = 0; p < exec.size();) {
    auto q = exec.find(' ', p);
    if (q == std::string::npos) q = exec.size();
    if (q > p) argv.push_back(exec.substr(p, q - p));
    p = q + 1;
  }
  int fd = listen_unix(sock);  // what systemd does for csgi-app.socket
  Process app(argv, log_path(dir, "app"), fd);
  ::close(fd);
  auto r = fastcgi_request(sock, base("/pid"));
  INFO("argv: " << exec << "\nlog: " << read_file(log_path(dir, "app")));
  REQUIRE(r.ended);
  CHECK(parse_cgi_response(r.stdout_data).status == 200);
  auto env = parse_env(parse_cgi_response(fastcgi_request(sock, base("/env")).stdout_data).body);
  CHECK(env["csgi.multiprocess"] == "true");
  auto status = app.stop(SIGTERM, 10s);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
}

#ifdef CSGI_CLI_BIN
TEST_CASE("csgi serve --fastcgi takes the socket on fd 0 (as mod_fcgid and spawn-fcgi hand it over)") {
  TempDir dir;
  std::string sock = dir / "cli.sock";
  int fd = listen_unix(sock);
  Process app({CSGI_CLI_BIN, "serve", "--fastcgi", "--app", CSGI_GATEWAY_APP, "--app-arg", dir / "file.bin",
               "--script-name", "/mnt"},
              log_path(dir, "app"), fd);
  ::close(fd);
  auto r = fastcgi_request(sock, base("/mnt/env/x"));
  INFO(read_file(log_path(dir, "app")));
  REQUIRE(r.ended);
  auto env = parse_env(parse_cgi_response(r.stdout_data).body);
  CHECK(env["SCRIPT_NAME"] == "/mnt");
  CHECK(env["PATH_INFO"] == "/env/x");
  auto status = app.stop(SIGTERM, 10s);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
}
#endif

#ifdef CSGI_CLI_BIN
TEST_CASE("csgi serve --fastcgi keeps the --threads given; its 16 request threads are only the default") {
  for (auto [given, want] : {std::pair<std::string, int>{"1", 1}, {"3", 3}, {"", 16}}) {
    DYNAMIC_SECTION("--threads '" << given << "'") {
      TempDir dir;
      std::string sock = dir / "threads.sock";
      std::vector<std::string> argv = {CSGI_CLI_BIN, "serve", "--fastcgi", "--app", CSGI_GATEWAY_APP, "--app-arg",
                                       dir / "file.bin", "--listen", "unix:" + sock};
      if (!given.empty()) argv.insert(argv.end(), {"--threads", given});
      Process app(argv, log_path(dir, "app"));
      REQUIRE(wait_for_unix(sock));
      CHECK(parse_cgi_response(fastcgi_request(sock, base("/pid")).stdout_data).status == 200);
      CHECK(settled_tasks(app.pid(), 1 + want) == 1 + want);  // the signal-waiting main thread + the request threads
      auto status = app.stop(SIGTERM, 10s);
      REQUIRE(status.has_value());
      CHECK(WIFEXITED(*status));
    }
  }
}
#endif

TEST_CASE("csgi-fcgi takes --max-body-bytes as csgi serve does: a longer body the app reads answers 413") {
  TempDir dir;
  std::string sock = dir / "body.sock";
  Process app({CSGI_FCGI_BIN, "--app", CSGI_GATEWAY_APP, "--app-arg", dir / "file.bin", "--listen", "unix:" + sock,
               "--max-body-bytes", "1000"},
              log_path(dir, "app"));
  REQUIRE(wait_for_unix(sock));
  INFO(read_file(log_path(dir, "app")));
  for (std::size_t size : {500, 2000}) {
    Params p = base("/echo");
    p[0].second = "POST";
    p.emplace_back("CONTENT_LENGTH", std::to_string(size));
    auto res = parse_cgi_response(fastcgi_request(sock, p, std::string(size, 'x')).stdout_data);
    CHECK(res.status == (size <= 1000 ? 200 : 413));
  }
  auto status = app.stop(SIGTERM, 10s);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
}

#ifdef CSGI_HELLO_SERVER_BIN
TEST_CASE("csgi::run() serves FastCGI on --fastcgi --listen, and takes the FastCGI options when spawned on fd 0") {
  TempDir dir;
  std::string sock = dir / "run-listen.sock";
  {
    Process app({CSGI_HELLO_SERVER_BIN, "--fastcgi", "--listen", "unix:" + sock, "--threads", "2"},
                log_path(dir, "listen"));
    REQUIRE(wait_for_unix(sock));
    CHECK(parse_cgi_response(fastcgi_request(sock, base("/")).stdout_data).body == "Hello, world!");
    CHECK(settled_tasks(app.pid(), 3) == 3);
    auto status = app.stop(SIGTERM, 10s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
  }
  std::string spawned = dir / "run-fd0.sock";
  int fd = listen_unix(spawned);
  Process refused({CSGI_HELLO_SERVER_BIN, "--reuseport"}, log_path(dir, "refused"), fd);
  ::close(fd);
  auto status = refused.stop(0, 10s);  // signal 0: only waits for it to exit
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 2);
  CHECK(read_file(log_path(dir, "refused")).find("--reuseport does not apply to FastCGI") != std::string::npos);
}

TEST_CASE("csgi::run() picks FastCGI when fd 0 is a listening socket (an app.fcgi just works)") {
  TempDir dir;
  std::string sock = dir / "run.sock";
  int fd = listen_unix(sock);
  Process app({CSGI_HELLO_SERVER_BIN}, log_path(dir, "app"), fd);
  ::close(fd);
  auto r = fastcgi_request(sock, base("/"));
  INFO(read_file(log_path(dir, "app")));
  REQUIRE(r.ended);
  auto res = parse_cgi_response(r.stdout_data);
  CHECK(res.status == 200);
  CHECK(res.body == "Hello, world!");
  auto status = app.stop(SIGTERM, 10s);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
}
#endif

TEST_CASE("server_status under csgi-fcgi shows the FastCGI adapter's own counts", "[EXT-7]") {
  TempDir dir;
  std::string sock = dir / "app.sock";
  Process app({CSGI_FCGI_BIN, "--app", CSGI_PROCESS_APP, "--listen", "unix:" + sock, "--threads", "2"},
              log_path(dir, "app"));
  REQUIRE(wait_for_unix(sock));
  for (int i = 0; i < 3; ++i) CHECK(parse_cgi_response(fastcgi_request(sock, base("/hello")).stdout_data).status == 200);
  Params p = base("/server-status");
  p[1].second = "/server-status?json";  // REQUEST_URI
  p[2].second = "json";                 // QUERY_STRING
  auto page = parse_cgi_response(fastcgi_request(sock, p).stdout_data);
  REQUIRE(page.status == 200);
  nlohmann::json j = nlohmann::json::parse(page.body);
  CHECK(j["adapter"] == "fastcgi");
  CHECK(j["requests"]["total"] == 3);
  CHECK(j["statuses"]["200"] == 3);
  CHECK(j["bytes_sent"] == 3 * 5);  // "hello" three times: the adapter counts the bytes it wrote
  CHECK(j["workers"]["busy"] == 1);  // the page's own request
  auto status = app.stop(SIGTERM, 8s);
  REQUIRE(status.has_value());
}

TEST_CASE("server_status under csgi-cgi: no counters across requests, the page says 501", "[EXT-7]") {
  std::string cmd = std::string("env -i GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD=GET REQUEST_URI=/server-status "
                                "QUERY_STRING= SERVER_NAME=localhost SERVER_PORT=80 SERVER_PROTOCOL=HTTP/1.1 ") +
                    CSGI_CGI_BIN + " --app " + CSGI_PROCESS_APP + " </dev/null 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  auto res = parse_cgi_response(out);
  CHECK(res.status == 501);
  CHECK(res.body.find("csgix.server_stats") != std::string::npos);
}

TEST_CASE("csgi-fcgi reopens the app's access log on SIGUSR1, as logrotate expects after a rename") {
  for (std::string workers : {"1", "2"}) {
    DYNAMIC_SECTION("--workers " << workers) {
      TempDir dir;
      std::string sock = dir / "app.sock", log = dir / "access.log";
      Process app({CSGI_FCGI_BIN, "--app", CSGI_PROCESS_APP, "--app-arg", "access-log=" + log, "--listen",
                   "unix:" + sock, "--workers", workers},
                  log_path(dir, "app"));
      REQUIRE(wait_for_unix(sock));
      for (int i = 0; i < 3; ++i) CHECK(parse_cgi_response(fastcgi_request(sock, base("/hello")).stdout_data).status == 200);
      REQUIRE(wait_for_lines(log, 3));
      REQUIRE(::rename(log.c_str(), (log + ".1").c_str()) == 0);
      REQUIRE(::kill(app.pid(), SIGUSR1) == 0);
      std::this_thread::sleep_for(500ms);  // the serving loops see the signal within 200 ms
      for (int i = 0; i < 2; ++i) CHECK(parse_cgi_response(fastcgi_request(sock, base("/hello")).stdout_data).status == 200);
      CHECK(wait_for_lines(log, 2));  // a new file at the old path
      CHECK(count_lines(log + ".1") == 3);
      auto status = app.stop(SIGTERM, 8s);
      REQUIRE(status.has_value());
      CHECK(WIFEXITED(*status));  // SIGUSR1's default action would have ended it
    }
  }
}
