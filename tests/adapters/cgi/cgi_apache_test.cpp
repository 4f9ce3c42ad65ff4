// The CGI adapter (csgi-cgi) behind Apache 2.4 mod_cgid, installed the way docs/deploy/apache/ says
// (htaccess-cgi + app.cgi), at the site root and under /app.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "front_checks.hpp"
#include "harness.hpp"

using namespace csgi::test;

TEST_CASE("CGI adapter behind Apache mod_cgid (.htaccess), at / and /app") {
  TempDir dir;
  const std::string deploy = source_dir() + "/docs/deploy/apache/";
  std::string docroot = dir / "site";
  ::mkdir(docroot.c_str(), 0755);
  ::mkdir((docroot + "/app").c_str(), 0755);
  std::map<std::string, std::string> vars = {
      {"CGI", CSGI_CGI_BIN}, {"APP", CSGI_GATEWAY_APP}, {"APP_ARG", dir / "file.bin"}, {"DIR", dir.path()},
      {"DOCROOT", docroot}};
  for (const std::string& d : {docroot, docroot + "/app"}) {
    write_file(d + "/.htaccess", render(deploy + "htaccess-cgi", vars));
    write_file(d + "/app.cgi", render(deploy + "app.cgi", vars), 0755);
  }
  if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
  std::string server_conf = "<Directory \"" + docroot + "\">\n  AllowOverride AuthConfig FileInfo Options\n  Require all granted\n</Directory>\n"
                            "ScriptSock " + dir.path() + "/cgid.sock\n";
  std::string modules = "LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so\n"
                        "LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so\n";
  int port = free_port();
  std::string why;
  auto apache = start_apache(dir, port, docroot, server_conf, modules, why);
  REQUIRE(apache != nullptr);
  INFO(why);

  std::vector<Column> table;
  for (const std::string prefix : {"", "/app"}) {
    Front f;
    f.name = "apache-cgi " + (prefix.empty() ? std::string("/") : prefix);
    f.port = port;
    f.prefix = prefix;
    f.logs = {log_path(dir, "apache-error")};
    f.no_gone_reason = "CGI: each request is its own process, and mod_cgid keeps reading the script's output after "
                       "the client left";
    table.push_back(run_front_checks(f));
  }
  print_table(table);
  require_all(table);

  SECTION("csgi.run_once is true under CGI") {
    auto r = http(port, "GET", "/app/env");
    auto env = parse_env(r.body);
    CHECK(env["csgi.run_once"] == "true");
  }
}
