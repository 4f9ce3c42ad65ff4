// The conformance suite (tests/conformance: libconformance_app.so + run_conformance.py) through every
// gateway front server of fronts.hpp — nginx (4 variants), Apache mod_fcgid (.htaccess), lighttpd, and
// the CGI adapter through Apache mod_cgid — each at / and /app. Prints a table of cases × front servers;
// every cell passes or is skipped with the reason given below (the front server decides that part).
// Groups run: core, extensions and range (Range is the app's csgi::mw::Ranges, so every column answers
// alike; the adapters pass the response through, ADP-16). Not run: http1 and framing (the front server
// speaks HTTP, not the adapter), limits and timeouts (front server settings). Also: nginx guarding /admin in front of csgi-fcgi, where
// a dot segment nginx resolved must not route to /admin in the app.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "fronts.hpp"

using namespace csgi::test;

namespace {
// Cases a front server decides, not the adapter: why each is skipped.
const std::vector<std::string> common_skips = {
    "csgix.io=the front server owns the client connection; FastCGI/CGI give the app no raw socket",
    "103=nginx, Apache and lighttpd do not pass interim (1xx) responses from FastCGI/CGI",
    "informational=nginx, Apache and lighttpd do not pass interim (1xx) responses from FastCGI/CGI",
};

struct Row {
  std::string result, note;
};

/// Runs the suite against one front; returns case → result.
std::map<std::string, Row> run_suite(const Front& f, std::string& raw, int& failed) {
  std::string cmd = "/usr/bin/python3 " + source_dir() + "/tests/conformance/run_conformance.py --name '" + f.name +
                    "' --url http://127.0.0.1:" + std::to_string(f.port) + f.prefix + " --groups core,extensions,range";
  for (const auto& s : common_skips) cmd += " --skip '" + s + "'";
  if (f.name.rfind("apache", 0) == 0)
    cmd += " --skip 'repeated response header=Apache merges repeated response fields from CGI/FastCGI into one "
           "(\"a, b\"), except Set-Cookie'";
  if (f.name.rfind("apache-cgi", 0) == 0)
    cmd += " --skip 'file body (open fd) with Content-Length=Apache mod_cgid re-frames this response with chunked "
           "encoding instead of the Content-Length the script sent'";
  if (f.name.rfind("lighttpd", 0) == 0)
    cmd += " --skip 'a body on GET=lighttpd 1.4 does not forward a request body on GET to the FastCGI backend'";
  cmd += " 2>&1";
  std::map<std::string, Row> rows;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return rows;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) raw += buf;
  int rc = ::pclose(p);
  failed = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
  std::istringstream in(raw);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, '|')) {
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      cells.push_back(cell);
    }
    if (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());  // rows start with "| "
    if (cells.size() >= 2 && (cells[1] == "pass" || cells[1] == "FAIL" || cells[1] == "fail" || cells[1] == "skip"))
      rows[cells[0]] = {cells[1], cells.size() > 2 ? cells[2] : ""};
  }
  return rows;
}
}  // namespace

TEST_CASE("conformance suite through nginx, Apache mod_fcgid, lighttpd and Apache mod_cgid, at / and /app") {
  FrontServers servers(CSGI_CONFORMANCE_APP);
  for (const auto& e : servers.errors) FAIL_CHECK(e);
  std::vector<std::string> names;
  std::map<std::string, std::map<std::string, Row>> table;  // front → case → row
  std::vector<std::string> case_order;
  for (const Front& f : servers.fronts) {
    std::string raw;
    int failed = 0;
    auto rows = run_suite(f, raw, failed);
    INFO(f.name << ":\n" << raw);
    CHECK(!rows.empty());
    CHECK(failed == 0);
    for (const auto& [c, r] : rows)
      if (std::find(case_order.begin(), case_order.end(), c) == case_order.end()) case_order.push_back(c);
    names.push_back(f.name);
    table[f.name] = std::move(rows);
  }
  std::printf("\n%-48s", "case");
  for (const auto& n : names) std::printf(" | %s", n.c_str());
  std::printf("\n");
  for (const auto& c : case_order) {
    std::printf("%-48.48s", c.c_str());
    for (const auto& n : names) {
      auto it = table[n].find(c);
      std::printf(" | %-*s", static_cast<int>(n.size()), it == table[n].end() ? "-" : it->second.result.c_str());
    }
    std::printf("\n");
  }
  for (const auto& n : names)
    for (const auto& [c, r] : table[n])
      if (r.result != "pass") std::printf("  %s [%s] %s: %s\n", r.result.c_str(), n.c_str(), c.c_str(), r.note.c_str());
  std::fflush(stdout);
}

TEST_CASE("nginx guarding /admin in front of csgi-fcgi: dot segments never reach the /admin app (ENV-5)") {
  TempDir dir;
  std::string sock = dir / "app.sock";
  ::mkdir((dir / "data").c_str(), 0777);
  Process app({CSGI_FCGI_BIN, "--app", CSGI_CONFORMANCE_APP, "--app-arg", dir / "data", "--listen", "unix:" + sock,
               "--threads", "2"},
              log_path(dir, "app"));
  REQUIRE(wait_for_unix(sock));
  int port = free_port();
  std::string conf = "server {\n  listen 127.0.0.1:" + std::to_string(port) +
                     ";\n  location /admin { return 403; }\n  location / {\n    include fastcgi_params;\n"
                     "    fastcgi_pass unix:" + sock + ";\n  }\n}\n";
  std::string why;
  auto nginx = start_nginx(dir, conf, port, why);
  REQUIRE(nginx);
  auto get = [&](const std::string& target) {
    HttpResponse r = http(port, "GET", target, {}, {{"X-Csgi-Test", "mount"}});
    return std::to_string(r.status) + " " + (r.status == 200 ? r.body : std::string());
  };
  CHECK(get("/admin") == "403 ");
  CHECK(get("/x") == "200 site /x");
  // nginx resolves these to a path outside /admin and passes them on; the app must see the same path.
  CHECK(get("/admin/..") == "200 site /");
  CHECK(get("/admin/users/../..") == "200 site /");
  CHECK(get("/admin/%2e%2e") == "200 site /");
  CHECK(get("/admin/%2e%2e/x") == "200 site /x");
  CHECK(get("/admin%2F..%2Fx") == "200 site /x");  // nginx, too, takes a decoded %2F for a '/'
  // nginx resolves these to /admin itself: its rule answers, the app is never asked.
  CHECK(get("/admin/%2e%2e/admin") == "403 ");
  CHECK(get("/x/../admin") == "403 ");
  CHECK(get("/x/%2e%2e/admin/y") == "403 ");
  CHECK(get("/x%2F..%2Fadmin") == "403 ");
  // nginx merges "//" before resolving ".."; csgi keeps "//", so such a ".." has no single meaning: 400.
  CHECK(get("/admin//..").substr(0, 4) == "400 ");
  CHECK(get("/admin/x//../..").substr(0, 4) == "400 ");
  // Above the root: nginx refuses it first.
  CHECK(get("/admin/../../etc/passwd").substr(0, 4) == "400 ");
}
