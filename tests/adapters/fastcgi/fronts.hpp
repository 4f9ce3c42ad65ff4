#pragma once
/// Every front server of the gateway tests, started for one app library from the docs/deploy templates:
/// nginx (nginx-csgi.conf, four variants; the app started by the spawn-fcgi.sh line), Apache 2.4 +
/// mod_fcgid with the .htaccess (at / and /app), lighttpd (lighttpd.conf, at / and /app) and the CGI
/// adapter through Apache mod_cgid (htaccess-cgi, at / and /app). Stopped when destroyed.
#include <memory>
#include <string>
#include <vector>

#include "front_checks.hpp"
#include "harness.hpp"

namespace csgi::test {

class FrontServers {
public:
  /// `which`: a comma-separated subset of nginx,apache,lighttpd,cgi (all when empty); the environment
  /// variable CSGI_FRONT_ONLY narrows it further. `app_arg(dir)` gives the app's --app-arg per server.
  FrontServers(const std::string& app, const std::string& which = {});
  ~FrontServers();
  std::vector<Front> fronts;  // one per (server, mount)
  std::vector<std::string> errors;  // servers that did not start, with the reason

private:
  struct Server;
  std::vector<std::unique_ptr<Server>> servers_;
};

}  // namespace csgi::test
