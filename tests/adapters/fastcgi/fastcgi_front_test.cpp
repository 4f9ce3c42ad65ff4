// The FastCGI adapter behind real front servers, each configured from the docs/deploy templates
// (fronts.hpp): nginx (four variants), Apache 2.4 + mod_fcgid with the .htaccess, lighttpd — at / and
// /app. Prints a table of cases × front servers. CSGI_FRONT_ONLY=nginx|apache|lighttpd runs one.
#include <catch2/catch.hpp>

#include "front_checks.hpp"
#include "fronts.hpp"

using namespace csgi::test;

TEST_CASE("FastCGI adapter behind nginx, Apache mod_fcgid (.htaccess) and lighttpd, at / and /app") {
  FrontServers servers(CSGI_GATEWAY_APP, "nginx,apache,lighttpd");
  for (const auto& e : servers.errors) FAIL_CHECK(e);
  std::vector<Column> table;
  for (const Front& f : servers.fronts) table.push_back(run_front_checks(f));
  print_table(table);
  require_all(table);
}
