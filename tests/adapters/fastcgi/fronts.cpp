#include "fronts.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <map>

namespace csgi::test {

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

bool wanted(const std::string& which, const char* name) {
  auto in = [&](const std::string& list) { return ("," + list + ",").find(std::string(",") + name + ",") != std::string::npos; };
  if (!which.empty() && !in(which)) return false;
  const char* only = std::getenv("CSGI_FRONT_ONLY");
  return !only || in(only);
}
}  // namespace

struct FrontServers::Server {
  TempDir dir;
  std::vector<std::unique_ptr<Process>> procs;
};

FrontServers::FrontServers(const std::string& app, const std::string& which) {
  if (wanted(which, "nginx")) {
    auto s = std::make_unique<Server>();
    TempDir& dir = s->dir;
    std::string sock = dir / "app.sock";
    std::map<std::string, std::string> vars = {{"SOCKET", sock}, {"FCGI", CSGI_FCGI_BIN}, {"APP", app},
                                               {"APP_ARG", dir / "data"}, {"THREADS", "16"}, {"READ_TIMEOUT", "30s"}};
    ::mkdir((dir / "data").c_str(), 0777);
    std::string script = render(deploy + "spawn-fcgi.sh", vars);
    auto at = script.find("\nexec ");
    s->procs.push_back(std::make_unique<Process>(shell_words(script.substr(at + 6, script.find('\n', at + 6) - at - 6)),
                                                 log_path(dir, "app")));
    int root = free_port(), prefix = free_port(), nosplit = free_port(), nokeep = free_port();
    vars["PORT_ROOT"] = std::to_string(root);
    vars["PORT_PREFIX"] = std::to_string(prefix);
    vars["PORT_PREFIX_NOSPLIT"] = std::to_string(nosplit);
    vars["PORT_ROOT_NOKEEP"] = std::to_string(nokeep);
    std::string why;
    std::unique_ptr<Process> nginx;
    if (wait_for_unix(sock)) nginx = start_nginx(dir, render(deploy + "nginx-csgi.conf", vars), root, why);
    else why = "csgi-fcgi under spawn-fcgi did not start: " + read_file(log_path(dir, "app"));
    if (nginx && wait_for_port(nokeep)) {
      s->procs.push_back(std::move(nginx));
      std::vector<std::string> logs = {log_path(dir, "app"), log_path(dir, "nginx-error")};
      fronts.push_back({"nginx / keep_conn", root, "", "", "", logs});
      fronts.push_back({"nginx /app split_path_info", prefix, "/app", "", "", logs});
      fronts.push_back({"nginx /app SCRIPT_NAME param", nosplit, "/app", "", "", logs});
      fronts.push_back({"nginx / no keep_conn", nokeep, "", "", "", logs});
    } else {
      errors.push_back("nginx: " + why);
    }
    servers_.push_back(std::move(s));
  }

  auto apache = [&](const std::string& kind) {
    auto s = std::make_unique<Server>();
    TempDir& dir = s->dir;
    std::string docroot = dir / "site";
    ::mkdir(docroot.c_str(), 0755);
    ::mkdir((docroot + "/app").c_str(), 0755);
    ::mkdir((dir / "fcgid").c_str(), 0777);
    ::chmod((dir / "fcgid").c_str(), 0777);  // mod_fcgid binds its sockets there as Apache's User
    ::mkdir((dir / "data").c_str(), 0777);
    ::chmod((dir / "data").c_str(), 0777);   // the app runs as Apache's User
    if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
    std::map<std::string, std::string> vars = {
        {"FCGI", CSGI_FCGI_BIN}, {"CGI", CSGI_CGI_BIN}, {"APP", app}, {"APP_ARG", dir / "data"},
        {"DIR", dir.path()}, {"DOCROOT", docroot}, {"IO_TIMEOUT", "30"}};
    bool cgi = kind == "cgi";
    for (const std::string& d : {docroot, docroot + "/app"}) {
      write_file(d + "/.htaccess", render(deploy + (cgi ? "apache/htaccess-cgi" : "apache/htaccess-fcgid"), vars));
      write_file(d + (cgi ? "/app.cgi" : "/app.fcgi"), render(deploy + (cgi ? "apache/app.cgi" : "apache/app.fcgi"), vars), 0755);
    }
    std::string conf, modules;
    if (cgi) {
      conf = "<Directory \"" + docroot + "\">\n  AllowOverride AuthConfig FileInfo Options\n  Require all granted\n</Directory>\n"
             "ScriptSock " + dir.path() + "/cgid.sock\n";
      modules = "LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so\n"
                "LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so\n";
    } else {
      conf = render(deploy + "apache/httpd-fcgid.conf", vars);
    }
    int port = free_port();
    std::string why;
    auto p = start_apache(dir, port, docroot, conf, modules, why);
    if (!p) {
      errors.push_back("apache (" + kind + "): " + why);
    } else {
      s->procs.push_back(std::move(p));
      std::vector<std::string> logs = {log_path(dir, "apache-error")};
      std::string name = cgi ? "apache-cgi " : "apache-fcgid ";
      std::string no_gone = cgi ? "CGI: mod_cgid keeps reading the script's output after the client left" : "";
      fronts.push_back({name + "/", port, "", "", no_gone, logs});
      fronts.push_back({name + "/app", port, "/app", "", no_gone, logs});
    }
    servers_.push_back(std::move(s));
  };
  if (wanted(which, "apache")) apache("fcgid");

  if (wanted(which, "lighttpd")) {
    auto s = std::make_unique<Server>();
    TempDir& dir = s->dir;
    if (running_as_root()) ::chmod(dir.path().c_str(), 0777);
    ::mkdir((dir / "data").c_str(), 0777);
    int root = free_port(), prefix = free_port();
    std::map<std::string, std::string> vars = {
        {"FCGI", CSGI_FCGI_BIN}, {"APP", app}, {"APP_ARG", dir / "data"}, {"DIR", dir.path()},
        {"PORT_ROOT", std::to_string(root)}, {"PORT_PREFIX", std::to_string(prefix)}, {"USER_LINE", ""}};
    write_file(dir / "lighttpd.conf", render(deploy + "lighttpd.conf", vars));
    s->procs.push_back(std::make_unique<Process>(std::vector<std::string>{"lighttpd", "-D", "-f", dir / "lighttpd.conf"},
                                                 log_path(dir, "lighttpd")));
    if (wait_for_port(root) && wait_for_port(prefix)) {
      std::vector<std::string> logs = {log_path(dir, "lighttpd"), dir / "lighttpd-error.log"};
      fronts.push_back({"lighttpd /", root, "", "", "", logs});
      fronts.push_back({"lighttpd /app", prefix, "/app", "", "", logs});
    } else {
      errors.push_back("lighttpd: " + read_file(log_path(dir, "lighttpd")) + read_file(dir / "lighttpd-error.log"));
    }
    servers_.push_back(std::move(s));
  }
  if (wanted(which, "cgi")) apache("cgi");
}

FrontServers::~FrontServers() {
  // Servers stop in reverse order of start (front servers before the apps they talk to).
  for (auto& s : servers_)
    while (!s->procs.empty()) s->procs.pop_back();
}

}  // namespace csgi::test
