// The FastCGI adapter behind real front servers, each configured from the docs/deploy templates:
// nginx (four variants of nginx-csgi.conf, the app started by the spawn-fcgi.sh line), Apache 2.4 +
// mod_fcgid with the .htaccess (httpd-fcgid.conf, htaccess-fcgid, app.fcgi), lighttpd (lighttpd.conf,
// bin-path spawning). Prints a table of cases × front servers.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "front_checks.hpp"
#include "harness.hpp"

using namespace csgi::test;

namespace {
const std::string deploy = source_dir() + "/docs/deploy/";

std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ' ' || c == '\n') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// The `exec spawn-fcgi ...` line of docs/deploy/spawn-fcgi.sh, rendered.
std::vector<std::string> spawn_fcgi_argv(const std::map<std::string, std::string>& vars) {
  std::string script = render(deploy + "spawn-fcgi.sh", vars);
  auto at = script.find("\nexec ");
  REQUIRE(at != std::string::npos);
  return shell_words(script.substr(at + 6, script.find('\n', at + 6) - at - 6));
}
}  // namespace

TEST_CASE("FastCGI adapter behind nginx, Apache mod_fcgid (.htaccess) and lighttpd, at / and /app") {
  std::vector<Column> table;

  auto wanted = [](const char* name) {
    const char* only = std::getenv("CSGI_FRONT_ONLY");  // run one front server: nginx, apache, lighttpd
    return !only || std::string(only) == name;
  };
  if (wanted("nginx")) {  // nginx + spawn-fcgi
    TempDir dir;
    std::string sock = dir / "app.sock";
    std::map<std::string, std::string> vars = {
        {"SOCKET", sock}, {"FCGI", CSGI_FCGI_BIN}, {"APP", CSGI_GATEWAY_APP}, {"APP_ARG", dir / "file.bin"},
        {"THREADS", "16"}, {"READ_TIMEOUT", "30s"}};
    Process app(spawn_fcgi_argv(vars), log_path(dir, "app"));
    REQUIRE(wait_for_unix(sock));
    int root = free_port(), prefix = free_port(), nosplit = free_port(), nokeep = free_port();
    vars["PORT_ROOT"] = std::to_string(root);
    vars["PORT_PREFIX"] = std::to_string(prefix);
    vars["PORT_PREFIX_NOSPLIT"] = std::to_string(nosplit);
    vars["PORT_ROOT_NOKEEP"] = std::to_string(nokeep);
    std::string why;
    auto nginx = start_nginx(dir, render(deploy + "nginx-csgi.conf", vars), root, why);
    INFO(why);
    REQUIRE(nginx != nullptr);
    REQUIRE(wait_for_port(nokeep));
    std::vector<std::string> logs = {log_path(dir, "app"), log_path(dir, "nginx-error")};
    table.push_back(run_front_checks({"nginx / keep_conn", root, "", "", "", logs}));
    table.push_back(run_front_checks({"nginx /app split_path_info", prefix, "/app", "", "", logs}));
    table.push_back(run_front_checks({"nginx /app SCRIPT_NAME param", nosplit, "/app", "", "", logs}));
    table.push_back(run_front_checks({"nginx / no keep_conn", nokeep, "", "", "", logs}));
  }

  if (wanted("apache")) {  // Apache + mod_fcgid, .htaccess at the root and in /app
    TempDir dir;
    std::string docroot = dir / "site";
    ::mkdir(docroot.c_str(), 0755);
    ::mkdir((docroot + "/app").c_str(), 0755);
    ::mkdir((dir / "fcgid").c_str(), 0777);
    ::chmod((dir / "fcgid").c_str(), 0777);  // mod_fcgid binds its sockets there as Apache's User
    if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
    std::map<std::string, std::string> vars = {
        {"FCGI", CSGI_FCGI_BIN}, {"APP", CSGI_GATEWAY_APP}, {"APP_ARG", dir / "file.bin"}, {"DIR", dir.path()},
        {"DOCROOT", docroot}, {"IO_TIMEOUT", "30"}};
    for (const std::string& d : {docroot, docroot + "/app"}) {
      write_file(d + "/.htaccess", render(deploy + "apache/htaccess-fcgid", vars));
      write_file(d + "/app.fcgi", render(deploy + "apache/app.fcgi", vars), 0755);
    }
    int port = free_port();
    std::string why;
    auto apache = start_apache(dir, port, docroot, render(deploy + "apache/httpd-fcgid.conf", vars), "", why);
    INFO(why);
    REQUIRE(apache != nullptr);
    std::vector<std::string> logs = {log_path(dir, "apache-error")};
    table.push_back(run_front_checks({"apache-fcgid /", port, "", "", "", logs}));
    table.push_back(run_front_checks({"apache-fcgid /app", port, "/app", "", "", logs}));
  }

  if (wanted("lighttpd")) {  // lighttpd, bin-path spawning
    TempDir dir;
    if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
    int root = free_port(), prefix = free_port();
    std::map<std::string, std::string> vars = {
        {"FCGI", CSGI_FCGI_BIN}, {"APP", CSGI_GATEWAY_APP}, {"APP_ARG", dir / "file.bin"}, {"DIR", dir.path()},
        {"PORT_ROOT", std::to_string(root)}, {"PORT_PREFIX", std::to_string(prefix)}, {"USER_LINE", ""}};
    std::string conf = render(deploy + "lighttpd.conf", vars);
    write_file(dir / "lighttpd.conf", conf);
    Process lighttpd({"lighttpd", "-D", "-f", dir / "lighttpd.conf"}, log_path(dir, "lighttpd"));
    bool up = wait_for_port(root) && wait_for_port(prefix);
    INFO(read_file(log_path(dir, "lighttpd")) + read_file(dir / "lighttpd-error.log"));
    REQUIRE(up);
    std::vector<std::string> logs = {log_path(dir, "lighttpd"), dir / "lighttpd-error.log"};
    table.push_back(run_front_checks({"lighttpd /", root, "", "", "", logs}));
    table.push_back(run_front_checks({"lighttpd /app", prefix, "/app", "", "", logs}));
  }

  print_table(table);
  require_all(table);
}
