#include "csgi/middleware/access_log.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "csgi/core/json.hpp"
#include "csgi/middleware/static.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;
using mwtest::TempDir;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Logged {
  TempDir dir;
  std::string path = (dir.path / "access.log").string();
  std::shared_ptr<LogWriter> writer = std::make_shared<LogWriter>(path);
  App make(App inner, std::string format) {
    AccessLogOptions o;
    o.format = std::move(format);
    o.writer = writer;
    return mwtest::linted(std::move(inner), [o](App a) { return wrap<AccessLog>(a, o); });
  }
  std::vector<std::string> lines() {
    writer->flush();
    return lines_of(slurp(path));
  }
};

/// The bytes an escaped log field stands for: Apache's `\"`, `\\`, `\n`… and `\xhh`, nginx's `\xHH`.
std::string unescaped(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    char c = s[++i];
    if (c == 'x' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c);
    }
  }
  return out;
}

/// Apache's combined format, split into its fields; the quoted ones still escaped.
struct Combined {
  std::string host, ident, user, time, request, status, bytes, referer, agent;
};
std::optional<Combined> parse_combined(const std::string& line) {
  static const std::regex re(
      R"re(^(\S+) (\S+) (\S+) \[([^\]]+)\] "((?:[^"\\]|\\.)*)" (\d{3}) (\S+) "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"$)re");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return std::nullopt;
  return Combined{m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9]};
}

const std::regex clf_time(R"(\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})");

}  // namespace

TEST_CASE("access_log: combined and common lines", "[access_log]") {
  Logged log;
  App app = [](Env&) { return Response::text(200, "hello"); };
  auto combined = log.make(app, "combined");
  auto common = log.make(app, "common");
  testing::call(combined, "GET /path?q=1 HTTP/1.1", {{"User-Agent", "curl/8 \"x\" \\y"}, {"Referer", "http://r/"}});
  testing::Options user;
  user.setup = [](Env& env) { env.set(keys::REMOTE_USER, "alice"); };
  testing::call(common, "POST /form HTTP/1.0", {}, "a=1", user);
  auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  auto c = parse_combined(lines[0]);
  REQUIRE(c);
  CHECK(c->host == "127.0.0.1");
  CHECK(c->ident == "-");
  CHECK(c->user == "-");
  CHECK(std::regex_match(c->time, clf_time));
  CHECK(c->request == "GET /path?q=1 HTTP/1.1");
  CHECK(c->status == "200");
  CHECK(c->bytes == "5");
  CHECK(c->referer == "http://r/");
  CHECK(c->agent == R"(curl/8 \x22x\x22 \x5Cy)");
  std::smatch m;
  REQUIRE(std::regex_match(lines[1], m, std::regex(R"(^127\.0\.0\.1 - alice \[([^\]]+)\] "POST /form HTTP/1\.0" 200 5$)")));
}

TEST_CASE("access_log: json lines named as nginx's variables", "[access_log][json]") {
  Logged log;
  App app = [](Env& env) {
    env.set("request_id.id", "req-7");
    return Response::text(201, "hello");
  };
  auto json = log.make(app, "json");
  testing::call(json, "GET /p%20x?q=\"1\" HTTP/1.1",
                {{"User-Agent", "agent \"q\" \\ caf\xc3\xa9 \xff"}, {"Referer", "http://r/"}, {"Host", "example.org:8080"}});
  testing::call(json, "HEAD / HTTP/1.0", {});
  auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  auto j = nlohmann::json::parse(lines[0]);  // throws on a line that is not valid JSON
  CHECK(j.size() == 16);
  CHECK(j["remote_addr"] == "127.0.0.1");
  CHECK(j["remote_user"] == "");
  CHECK(j["request"] == "GET /p%20x?q=\"1\" HTTP/1.1");
  CHECK(j["request_method"] == "GET");
  CHECK(j["request_uri"] == "/p%20x?q=\"1\"");
  CHECK(j["server_protocol"] == "HTTP/1.1");
  CHECK(j["host"] == "example.org");
  CHECK(j["status"] == 201);
  CHECK(j["body_bytes_sent"] == 5);
  CHECK(j["http_referer"] == "http://r/");
  // Valid UTF-8 kept, a byte of no UTF-8 sequence replaced by U+FFFD.
  CHECK(j["http_user_agent"] == "agent \"q\" \\ caf\xc3\xa9 \xef\xbf\xbd");
  
  CHECK(j["request_id"] == "req-7");
  std::regex secs(R"(^\d+\.\d{3}$)");
  for (const char* k : {"request_time", "upstream_header_time", "msec"}) {
    INFO(k);
    REQUIRE(j[k].is_number());
    std::string text = lines[0].substr(lines[0].find(std::string("\"") + k + "\":") + std::strlen(k) + 3);
    CHECK(std::regex_match(text.substr(0, text.find_first_of(",}")), secs));
  }
  CHECK(j["upstream_header_time"].get<double>() <= j["request_time"].get<double>());
  CHECK(std::regex_match(j["time_iso8601"].get<std::string>(),
                         std::regex(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$)")));
  auto head = nlohmann::json::parse(lines[1]);
  CHECK(head["request_method"] == "HEAD");
  CHECK(head["body_bytes_sent"] == 0);
  CHECK(head["server_protocol"] == "HTTP/1.0");
}

TEST_CASE("access_log: bytes are exact for every body kind", "[access_log]") {
  TempDir d;
  std::string body(10000, 'z');
  auto file = d.write("f.bin", body);
  for (Kind k : mwtest::all_kinds()) {
    INFO(mwtest::kind_name(k));
    Logged log;
    auto app = log.make(mwtest::body_app(k, 200, {{"Content-Type", "text/plain"}}, body, file.string(), 7),
                        "%>s %b %B %D %{ms}T %T");
    auto r = testing::call(app, "GET /");
    CHECK(r.body.size() == 10000);
    auto lines = log.lines();
    REQUIRE(lines.size() == 1);
    CHECK(std::regex_match(lines[0], std::regex(R"(^200 10000 10000 \d+ \d+ \d+$)")));
  }
}

TEST_CASE("access_log: HEAD and bodiless statuses log no bytes", "[access_log]") {
  TempDir d;
  d.write("f.txt", "file body");
  Logged log;
  StaticOptions so;
  so.root = d.str();
  auto app = log.make(Static(so), "%m %>s %b %B");
  testing::call(app, "HEAD /f.txt");
  testing::call(app, "GET /f.txt", {{"If-None-Match", "*"}});
  testing::call(app, "GET /f.txt");
  auto lines = log.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "HEAD 200 - 0");
  CHECK(lines[1] == "GET 304 - 0");
  CHECK(lines[2] == "GET 200 9 9");
}

TEST_CASE("access_log: custom directives", "[access_log]") {
  Logged log;
  App app = [](Env& env) {
    env.set(keys::REMOTE_USER, "set-inside");  // read after the app ran
    Response r = Response::text(201, "x");
    r.headers.add("X-Out", "out\tvalue");
    return r;
  };
  testing::Options o;
  o.setup = [](Env& env) {
    env.set("request_id.id", "rid-42");
    env.set("my.key", "envval");
  };
  auto logged = log.make(app, "%h|%u|%m|%U|%q|%H|%v|%p|%s|%{X-In}i|%{X-Missing}i|%{X-Out}o|%{my.key}e|%L|%%|%{sec}t|%{%Y}t");
  testing::call(logged, "PUT /a%20b?c=d HTTP/1.1", {{"X-In", "in-value"}}, "", o);
  auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  std::smatch m;
  INFO(lines[0]);
  CHECK(std::regex_match(lines[0], m,
                         std::regex(R"(^127\.0\.0\.1\|set-inside\|PUT\|/a b\|\?c=d\|HTTP/1\.1\|localhost\|80\|201\|in-value\|-\|out\\x09value\|envval\|rid-42\|%\|\d{10}\|\d{4}$)")));
  for (const char* bad : {"%Z", "%{Referer", "%i", "abc %"}) {
    AccessLogOptions o;
    o.format = bad;
    INFO(bad);
    CHECK_THROWS_AS(AccessLog(app, o), std::invalid_argument);
  }
}

TEST_CASE("access_log: an exception is logged as 500 and rethrown", "[access_log]") {
  Logged log;
  App boom = [](Env&) -> Response { throw std::runtime_error("boom"); };
  AccessLogOptions o;
  o.format = "%>s %b";
  o.writer = log.writer;
  App app = wrap<AccessLog>(boom, o);
  CHECK_THROWS_AS(testing::call(app, "GET /"), std::runtime_error);
  auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "500 -");
}

TEST_CASE("access_log: an abandoned stream is logged with the bytes sent so far", "[access_log]") {
  Logged log;
  App app = [](Env&) {
    Response r;
    r.headers.add("Content-Type", "text/plain");
    r.body = make_stream([]() -> std::optional<std::string> { return std::string(100, 'a'); });
    return r;
  };
  AccessLogOptions o;
  o.format = "%>s %b";
  o.writer = log.writer;
  App logged = wrap<AccessLog>(app, o);
  {
    Env env;
    env.set(keys::REQUEST_METHOD, "GET");
    Response res = logged(env);
    auto s = std::get<StreamPtr>(res.body);
    std::string chunk;
    for (int i = 0; i < 3; ++i) REQUIRE(s->next(chunk));
    s->close();  // the client went away
  }
  auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "200 300");
}

TEST_CASE("log_writer: a full queue drops lines instead of blocking", "[access_log][log_writer]") {
  TempDir d;
  std::string fifo = (d.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rd >= 0);
  std::uint64_t accepted = 0, refused = 0;
  std::thread reader;
  {
    LogWriter w(fifo, 4);
    std::string big(32 * 1024, 'x');
    // The pipe holds 64 KiB: the writer thread blocks in write(2) after a few lines; pushes must not.
    for (int i = 0; i < 200; ++i) (w.push(big) ? accepted : refused)++;
    CHECK(refused > 0);
    CHECK(w.dropped() == refused);
    // Drain the pipe so the writer can finish, then check everything accepted was written.
    reader = std::thread([rd] {
      char buf[65536];
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (std::chrono::steady_clock::now() < until) {
        ssize_t n = ::read(rd, buf, sizeof buf);
        if (n == 0) break;  // writer closed
        if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    w.flush();
    CHECK(w.written() == accepted);
  }  // the writer closes the fifo: the reader sees its end
  reader.join();
  ::close(rd);
}

TEST_CASE("log_writer: lines queued before SIGUSR1 go to the rotated file, later ones to the new", "[access_log][log_writer]") {
  TempDir d;
  std::string path = (d.path / "app.log").string();
  LogWriter w(path);
  w.push("before");  // queued, not written yet
  std::filesystem::rename(path, path + ".1");
  LogWriter::reopen_all();  // what the SIGUSR1 handler does
  w.push("after");
  w.flush();
  CHECK(slurp(path + ".1") == "before\n");
  CHECK(slurp(path) == "after\n");
}

TEST_CASE("log_writer: reopen() and SIGUSR1 switch to a new file after rotation", "[access_log][log_writer]") {
  TempDir d;
  std::string path = (d.path / "app.log").string();
  LogWriter w(path);
  w.push("one");
  w.flush();
  std::filesystem::rename(path, path + ".1");
  w.push("two");  // still the old file: not reopened yet
  w.flush();
  w.reopen();
  w.push("three");
  w.flush();
  CHECK(slurp(path + ".1") == "one\ntwo\n");
  CHECK(slurp(path) == "three\n");

  std::filesystem::rename(path, path + ".2");
  LogWriter::install_sigusr1_handler();
  auto before = w.reopens();
  REQUIRE(::raise(SIGUSR1) == 0);
  for (int i = 0; i < 500 && w.reopens() == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(w.reopens() > before);
  w.push("four");
  w.flush();
  CHECK(slurp(path) == "four\n");
  ::signal(SIGUSR1, SIG_DFL);
}

namespace {
/// Runs `child` in a forked process that then ends with exit(0) (the writer's destructor not run, as in a
/// Python worker whose interpreter keeps its objects: the atexit flush writes), unless `child` ends it
/// itself; SIGALRM ends it when it hangs. Returns the child's wait status, or -1 when it did not end
/// within 10 s.
int in_child(const std::function<void()>& child) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(10);
    child();
    std::exit(0);
  }
  int status = 0;
  for (int i = 0; i < 1100; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}
}  // namespace

TEST_CASE("log_writer: a writer made before fork() writes what each child pushes", "[access_log][log_writer][fork]") {
  TempDir d;
  std::string path = (d.path / "app.log").string();
  auto w = std::make_shared<LogWriter>(path);
  constexpr int children = 3, lines = 100;
  std::vector<int> statuses;
  for (int c = 0; c < children; ++c)
    statuses.push_back(in_child([&, c] {
      for (int i = 0; i < lines; ++i) w->push("child " + std::to_string(c) + " line " + std::to_string(i));
    }));
  for (int st : statuses) CHECK((st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0));
  auto got = lines_of(slurp(path));
  CHECK(got.size() == children * lines);
  CHECK(w->written() == 0);  // the parent pushed nothing and started no thread
}

TEST_CASE("log_writer: after fork() a child whose parent already wrote gets its own thread", "[access_log][log_writer][fork]") {
  TempDir d;
  std::string path = (d.path / "app.log").string();
  {
    LogWriter w(path);
    w.push("parent before");
    w.flush();
    w.push("parent queued");  // may still be queued at fork(): written by the parent only
    int st = in_child([&] {
      for (int i = 0; i < 50; ++i) w.push("child " + std::to_string(i));
      w.flush();
      w.push("child after flush");
      // As a csgi serve worker ends. (Not exit(): the parent's writer thread is gone here, and the leak
      // checker would take what only its stack held for leaks.)
      log_files::flush_all();
      std::_Exit(0);
    });
    CHECK((st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0));
    w.push("parent after");
  }  // the parent's writer ends here
  auto got = lines_of(slurp(path));
  REQUIRE(got.size() == 54);
  CHECK(std::count(got.begin(), got.end(), "parent queued") == 1);
  CHECK(std::count(got.begin(), got.end(), "child after flush") == 1);
  CHECK(got.front() == "parent before");
}

TEST_CASE("log_files: reopen_all() reopens every log writer of the process", "[access_log][log_writer]") {
  TempDir d;
  std::string a = (d.path / "a.log").string(), b = (d.path / "b.log").string();
  LogWriter wa(a), wb(b);
  wa.push("a1");
  wb.push("b1");
  wa.flush();
  wb.flush();
  std::filesystem::rename(a, a + ".1");
  std::filesystem::rename(b, b + ".1");
  CHECK(log_files::reopen_all().empty());
  wa.push("a2");
  wb.push("b2");
  wa.flush();
  wb.flush();
  CHECK(slurp(a + ".1") == "a1\n");
  CHECK(slurp(b + ".1") == "b1\n");
  CHECK(slurp(a) == "a2\n");
  CHECK(slurp(b) == "b2\n");
}

// ---- the same requests through Apache and through csgi, compared field by field --------------------------

namespace {

int free_port() {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    int port = 20000 + static_cast<int>(rng() % 12000);
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    if (ok) return port;
  }
  return -1;
}

bool port_open(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

int run(const std::vector<std::string>& argv) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Apache {
  TempDir dir;
  int port = free_port();
  pid_t pid = -1;
  std::string log = (dir.path / "access.log").string();
  explicit Apache(const std::string& format) {
    std::filesystem::permissions(dir.path, std::filesystem::perms::all, std::filesystem::perm_options::add);
    dir.write("htdocs/hello.txt", "hello from both servers\n");
    std::filesystem::permissions(dir.path / "htdocs", std::filesystem::perms::all, std::filesystem::perm_options::add);
    std::filesystem::permissions(dir.path / "htdocs/hello.txt", std::filesystem::perms::others_read, std::filesystem::perm_options::add);
    std::string escaped;
    for (char c : format) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      escaped.push_back(c);
    }
    std::string d = dir.str();
    dir.write("httpd.conf",
              "ServerRoot \"" + d + "\"\n"
              "Listen 127.0.0.1:" + std::to_string(port) + "\n"
              "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n"
              "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so\n"
              "ServerName 127.0.0.1\n"
              "PidFile " + d + "/httpd.pid\n"
              "DefaultRuntimeDir " + d + "\n"
              "Mutex file:" + d + " default\n"
              "ErrorLog " + d + "/error.log\n"
              "User nobody\nGroup nogroup\n"
              "StartServers 1\nMinSpareServers 1\nMaxSpareServers 1\n"
              "DocumentRoot \"" + d + "/htdocs\"\n"
              "<Directory \"" + d + "/htdocs\">\n  Require all granted\n</Directory>\n"
              "LogFormat \"" + escaped + "\" csgitest\n"
              "CustomLog " + log + " csgitest\n");
    pid = ::fork();
    if (pid == 0) {
      ::setsid();  // Apache signals its whole process group on shutdown: keep the test out of it
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      std::string conf = d + "/httpd.conf";
      ::execl("/usr/sbin/apache2", "apache2", "-f", conf.c_str(), "-DFOREGROUND", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 100 && !port_open(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~Apache() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int st;
      for (int i = 0; i < 100; ++i) {
        if (::waitpid(pid, &st, WNOHANG) == pid) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
    }
  }
  std::vector<std::string> lines(std::size_t want) {
    for (int i = 0; i < 100; ++i) {
      auto l = lines_of(slurp(log));
      if (l.size() >= want) return l;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return lines_of(slurp(log));
  }
};

struct Req {
  std::string method, target, agent, referer;
};

}  // namespace

TEST_CASE("access_log: a combined line matches Apache's for the same requests", "[access_log][apache]") {
  if (::access("/usr/sbin/apache2", X_OK) != 0 || ::access("/usr/bin/curl", X_OK) != 0 ||
      ::access("/usr/lib/apache2/modules/mod_mpm_prefork.so", R_OK) != 0) {
    WARN("skipped: apache2 (with mod_mpm_prefork) or curl is not installed");
    return;
  }
  Apache apache(combined_log_format);
  REQUIRE(apache.port > 0);
  REQUIRE(port_open(apache.port));
  const std::vector<Req> reqs = {
      {"GET", "/hello.txt?x=1&y=%20z", "csgi-test/1.0", "http://example.com/from?a=b"},
      {"GET", "/missing.txt", "Mozilla/5.0 \"quoted\" back\\slash", ""},
      {"HEAD", "/hello.txt", "curl-head", "http://r/"},
  };
  std::string host = "127.0.0.1:" + std::to_string(apache.port);
  for (const Req& r : reqs) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-o", "/dev/null", "--max-time", "10", "-A", r.agent};
    if (r.method == "HEAD") argv.push_back("-I");
    if (!r.referer.empty()) argv.insert(argv.end(), {"-e", r.referer});
    argv.push_back("http://" + host + r.target);
    REQUIRE(run(argv) == 0);
  }
  auto apache_lines = apache.lines(reqs.size());
  REQUIRE(apache_lines.size() == reqs.size());

  Logged log;
  StaticOptions so;
  so.root = (apache.dir.path / "htdocs").string();
  auto app = log.make(Static(so), combined_log_format);
  for (const Req& r : reqs) {
    std::vector<std::pair<std::string, std::string>> h = {{"Host", host}, {"User-Agent", r.agent}, {"Accept", "*/*"}};
    if (!r.referer.empty()) h.emplace_back("Referer", r.referer);
    testing::call(app, r.method + " " + r.target + " HTTP/1.1", h);
  }
  auto ours = log.lines();
  REQUIRE(ours.size() == reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    INFO("apache: " << apache_lines[i]);
    INFO("csgi:   " << ours[i]);
    auto a = parse_combined(apache_lines[i]);
    auto c = parse_combined(ours[i]);
    REQUIRE(a);
    REQUIRE(c);
    CHECK(c->host == a->host);
    CHECK(c->ident == a->ident);
    CHECK(c->user == a->user);
    CHECK(std::regex_match(a->time, clf_time));
    CHECK(std::regex_match(c->time, clf_time));
    // Apache escapes `"` as \" where csgi writes nginx's \x22: the same bytes, written two ways.
    CHECK(unescaped(c->request) == unescaped(a->request));
    CHECK(c->status == a->status);
    if (a->status != "404") CHECK(c->bytes == a->bytes);  // error pages differ in text, not in format
    CHECK(unescaped(c->referer) == unescaped(a->referer));
    CHECK(unescaped(c->agent) == unescaped(a->agent));
  }
}

namespace {
/// nginx's access-log escaping, byte by byte: what every text field must read (`"`, `\`, controls and
/// bytes >= 0x7f as \xHH).
std::string nginx_escaped(std::string_view s) {
  if (s.empty()) return "-";
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

/// Every byte value, plain runs between them.
std::string every_byte() {
  std::string s;
  for (int c = 0; c < 256; ++c) {
    s.push_back(static_cast<char>(c));
    if (c % 16 == 0) s += "plain-run";
  }
  return s;
}
}  // namespace

TEST_CASE("access_log: the same line for every body kind; every byte escaped as nginx does", "[access_log]") {
  TempDir d;
  const std::string body = "body of 17 bytes.";
  auto file = d.write("f.txt", body);
  const std::string odd = every_byte();
  testing::Options o;
  o.setup = [&](Env& env) {
    env.set(keys::REQUEST_URI, "/p" + odd);
    env.set(keys::SCRIPT_NAME, "/s" + odd);
    env.set(keys::PATH_INFO, "/i" + odd);
    env.set(keys::QUERY_STRING, "q" + odd);
    env.set(keys::REMOTE_USER, odd);
    env.set("HTTP_X_ODD", odd);
    env.set("odd.key", odd);
    env.set_int("n.key", -42);
    env.set("request_id.id", odd);
  };
  const std::string format = "%h %a %l %u \"%r\" %m %U%q %H %v %V %p %>s %s %b %B \"%{X-Odd}i\" \"%{X-Odd}o\" "
                             "\"%{X-None}o\" %{odd.key}e %{n.key}e %{none.key}e %L %%";
  const std::string e = nginx_escaped(odd);
  const std::string expected = "127.0.0.1 127.0.0.1 - " + e + " \"" + nginx_escaped("GET /p" + odd + " HTTP/1.1") +
                               "\" GET " + nginx_escaped("/s" + odd + "/i" + odd) + "?" + nginx_escaped("q" + odd) +
                               " HTTP/1.1 localhost localhost 80 203 203 17 17 \"" + e + "\" \"" + e + "\" \"-\" " + e +
                               " -42 - " + e + " %";
  std::vector<std::string> json_lines;
  for (Kind k : mwtest::all_kinds()) {
    INFO(mwtest::kind_name(k));
    Logged log;
    App inner = mwtest::body_app(k, 203, {{"Content-Type", "text/plain"}, {"X-Odd", odd}}, body, file.string());
    AccessLogOptions opts;
    opts.writer = log.writer;
    opts.format = format;
    testing::call(wrap<AccessLog>(inner, opts), "GET /x HTTP/1.1", {}, "", o);
    opts.format = "json";
    testing::call(wrap<AccessLog>(inner, opts), "GET /x HTTP/1.1", {}, "", o);
    auto lines = log.lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == expected);
    auto j = nlohmann::json::parse(lines[1]);
    for (const char* timed : {"time_iso8601", "msec", "request_time", "upstream_header_time"}) j.erase(timed);
    json_lines.push_back(j.dump());
  }
  for (const std::string& j : json_lines) CHECK(j == json_lines.front());
  auto j = nlohmann::json::parse(json_lines.front());
  CHECK(j["status"] == 203);
  CHECK(j["body_bytes_sent"] == 17);
  auto as_json = [](const std::string& s) {  // bytes of no UTF-8 sequence as U+FFFD
    return nlohmann::json::parse(nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  CHECK(j["request_uri"] == as_json("/p" + odd));
  CHECK(j["remote_user"] == as_json(odd));
}

TEST_CASE("access_log: a json line for an app that threw parses, its times in order", "[access_log][json]") {
  Logged log;
  App boom = [](Env&) -> Response { throw std::runtime_error("boom"); };
  AccessLogOptions o;
  o.format = "json";
  o.writer = log.writer;
  CHECK_THROWS_AS(testing::call(wrap<AccessLog>(boom, o), "GET /"), std::runtime_error);
  auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  INFO(lines[0]);
  auto j = nlohmann::json::parse(lines[0]);
  CHECK(j["status"] == 500);
  CHECK(j["body_bytes_sent"] == 0);
  CHECK(j["upstream_header_time"].get<double>() >= 0);
  CHECK(j["upstream_header_time"].get<double>() <= j["request_time"].get<double>());
}

TEST_CASE("log_writer: lines reach the file whole and in order, also past a write's 64 KiB", "[access_log][log_writer]") {
  TempDir d;
  std::string path = (d.path / "lines.log").string();
  std::string expected;
  {
    LogWriter w(path);
    std::mt19937 rng(7);
    for (int i = 0; i < 3000; ++i) {
      std::string line = "line " + std::to_string(i) + " " + std::string(rng() % 200, 'a' + static_cast<char>(i % 26));
      if (i == 1500) line += std::string(100000, 'L');  // longer than one write
      bool newline = i % 3 == 0;
      REQUIRE(w.push(newline ? line + "\n" : line));
      expected += line + "\n";
    }
    REQUIRE(w.push(""));  // an empty line is a line
    expected += "\n";
    w.flush();
    CHECK(w.written() == 3001);
    CHECK(slurp(path) == expected);
  }
  CHECK(slurp(path) == expected);
}

TEST_CASE("access_log: random texts are escaped as nginx does, whatever the byte positions", "[access_log]") {
  Logged log;
  AccessLogOptions opts;
  opts.writer = log.writer;
  opts.format = "%{X-R}i|%u";
  App logged = wrap<AccessLog>(App([](Env&) { return Response::text(200, "x"); }), opts);
  std::mt19937 rng(11);
  static const char bytes[] = "abcXYZ019 ~!/%\"\\\x7f\x80\xff\x1f\t\n";
  const std::string alphabet = std::string(bytes, sizeof bytes - 1) + std::string(1, '\0');  // 9 plain first
  std::vector<std::string> texts;
  for (int i = 0; i < 500; ++i) {
    std::string t;
    std::size_t n = rng() % 40;
    std::size_t special = rng() % 4 == 0 ? alphabet.size() : 9;  // often long plain runs
    for (std::size_t k = 0; k < n; ++k) t.push_back(alphabet[rng() % special]);
    texts.push_back(t);
    testing::Options o;
    o.setup = [t](Env& env) {
      env.set("HTTP_X_R", t);
      env.set(keys::REMOTE_USER, t + t);
    };
    testing::call(logged, "GET /", {}, "", o);
  }
  auto lines = log.lines();
  // lines_of splits on '\n'; the escaped text holds none.
  REQUIRE(lines.size() == texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    INFO(i);
    CHECK(lines[i] == nginx_escaped(texts[i]) + "|" + nginx_escaped(texts[i] + texts[i]));
  }
}
