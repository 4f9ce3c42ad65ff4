// Faults behind real front servers: the app killed mid-request (nginx + `--workers` master restarting it;
// Apache mod_fcgid respawning it), an app that hangs (front server timeout → 504), and 1,000 requests
// whose client disconnects mid-body (afterwards every worker thread is free again, counted by a barrier
// that needs all of them at once).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "harness.hpp"

using namespace csgi::test;
using namespace std::chrono_literals;

namespace {
const std::string deploy = source_dir() + "/docs/deploy/";

struct NginxSetup {
  TempDir dir;
  std::unique_ptr<Process> app, nginx;
  int root = 0, nokeep = 0;
  std::string why;
  NginxSetup(int threads, std::vector<std::string> extra) {
    std::string sock = dir / "app.sock";
    std::vector<std::string> argv = {CSGI_FCGI_BIN, "--app", CSGI_GATEWAY_APP, "--app-arg", dir / "file.bin",
                                     "--listen", "unix:" + sock, "--threads", std::to_string(threads)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    app = std::make_unique<Process>(argv, log_path(dir, "app"));
    if (!wait_for_unix(sock)) return;
    root = free_port();
    nokeep = free_port();
    std::map<std::string, std::string> vars = {
        {"SOCKET", sock}, {"READ_TIMEOUT", "3s"}, {"PORT_ROOT", std::to_string(root)},
        {"PORT_PREFIX", std::to_string(free_port())}, {"PORT_PREFIX_NOSPLIT", std::to_string(free_port())},
        {"PORT_ROOT_NOKEEP", std::to_string(nokeep)}};
    nginx = start_nginx(dir, render(deploy + "nginx-csgi.conf", vars), root, why);
    if (nginx && !wait_for_port(nokeep)) nginx.reset();
  }
};
}  // namespace

TEST_CASE("nginx: app process killed mid-request → 502, the --workers master restarts it") {
  NginxSetup s(4, {"--workers", "2"});
  INFO(s.why);
  REQUIRE(s.nginx != nullptr);
  REQUIRE(http(s.root, "GET", "/pid").status == 200);
  auto r = http(s.root, "GET", "/die");
  CHECK(r.status == 502);
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += http(s.nokeep, "GET", "/pid").status == 200;
  CHECK(ok == 20);
  bool restarted = false;
  for (int i = 0; i < 100 && !restarted; ++i) {
    restarted = read_file(log_path(s.dir, "app")).find("restarting it") != std::string::npos;
    if (!restarted) std::this_thread::sleep_for(20ms);
  }
  CHECK(restarted);
  // Kill both workers in turn: the master brings each back.
  CHECK(http(s.nokeep, "GET", "/die").status == 502);
  std::this_thread::sleep_for(1200ms);
  CHECK(http(s.nokeep, "GET", "/die").status == 502);
  int served = 0;
  for (int i = 0; i < 100 && served < 5; ++i) {
    if (http(s.nokeep, "GET", "/pid").status == 200) ++served;
    else std::this_thread::sleep_for(50ms);
  }
  CHECK(served == 5);
}

TEST_CASE("nginx: an app that hangs → 504 from fastcgi_read_timeout; the app is fine afterwards") {
  NginxSetup s(4, {});
  INFO(s.why);
  REQUIRE(s.nginx != nullptr);
  auto r = http(s.root, "GET", "/hang?ms=6000");
  CHECK(r.status == 504);
  CHECK(http(s.root, "GET", "/pid").status == 200);
}

TEST_CASE("nginx: 1,000 clients gone mid-body leave no stuck thread") {
  const int threads = 8;
  NginxSetup s(threads, {});
  INFO(s.why);
  REQUIRE(s.nginx != nullptr);
  // Variant (4) streams request bodies to the app (fastcgi_request_buffering off): the app thread is
  // reading the body when the client goes.
  auto t0 = std::chrono::steady_clock::now();
  int sent = 0;
  for (; sent < 1000 && std::chrono::steady_clock::now() - t0 < 120s; ++sent) {
    Connection c(s.nokeep);
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'x'));
    if (sent % 4 == 0) std::this_thread::sleep_for(1ms);
    c.close(sent % 2 == 0);
  }
  CHECK(sent == 1000);
  // Every thread must be free: `threads` requests that only complete when all are inside the app at once.
  std::this_thread::sleep_for(500ms);
  std::vector<std::future<int>> all;
  for (int i = 0; i < threads; ++i)
    all.push_back(std::async(std::launch::async, [&] {
      return http(s.nokeep, "GET", "/barrier?n=" + std::to_string(threads), "", {}, 10s).status;
    }));
  int ok = 0;
  for (auto& f : all) ok += f.get() == 200;
  CHECK(ok == threads);
}

TEST_CASE("Apache mod_fcgid: app killed mid-request → error answer, the next request is served by a new process") {
  TempDir dir;
  std::string docroot = dir / "site";
  ::mkdir(docroot.c_str(), 0755);
  ::mkdir((dir / "fcgid").c_str(), 0777);
  ::chmod((dir / "fcgid").c_str(), 0777);  // mod_fcgid binds its sockets there as Apache's User
  if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
  std::map<std::string, std::string> vars = {
      {"FCGI", CSGI_FCGI_BIN}, {"APP", CSGI_GATEWAY_APP}, {"APP_ARG", dir / "file.bin"}, {"DIR", dir.path()},
      {"DOCROOT", docroot}, {"IO_TIMEOUT", "2"}};
  write_file(docroot + "/.htaccess", render(deploy + "apache/htaccess-fcgid", vars));
  write_file(docroot + "/app.fcgi", render(deploy + "apache/app.fcgi", vars), 0755);
  int port = free_port();
  std::string why;
  auto apache = start_apache(dir, port, docroot, render(deploy + "apache/httpd-fcgid.conf", vars), "", why);
  INFO(why);
  REQUIRE(apache != nullptr);
  std::string pid1 = http(port, "GET", "/pid").body;
  REQUIRE(!pid1.empty());
  auto r = http(port, "GET", "/die");
  INFO("mod_fcgid answered " << r.status);
  CHECK((r.status == 502 || r.status == 500 || r.status == 503));
  auto next = http(port, "GET", "/pid");
  CHECK(next.status == 200);
  CHECK(next.body != pid1);
  SECTION("hang → mod_fcgid's FcgidIOTimeout ends the request with an error status") {
    auto h = http(port, "GET", "/hang?ms=4000");
    INFO("mod_fcgid answered " << h.status);
    CHECK(h.status >= 500);
  }
}
