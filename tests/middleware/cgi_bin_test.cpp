#include "csgi/middleware/cgi_bin.hpp"

#include <catch2/catch.hpp>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;
namespace fs = std::filesystem;

namespace {
struct Scripts {
  fs::path dir;
  Scripts() {
    std::string tmpl = (fs::temp_directory_path() / "csgi-cgi-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    write("env.sh", R"(#!/bin/sh
printf 'Content-Type: text/plain\r\nX-Script: env\r\n\r\n'
for v in GATEWAY_INTERFACE SERVER_SOFTWARE REQUEST_METHOD SCRIPT_NAME PATH_INFO QUERY_STRING HTTP_X_FOO \
         CONTENT_LENGTH CONTENT_TYPE REMOTE_ADDR SERVER_NAME SERVER_PORT SERVER_PROTOCOL REQUEST_URI; do
  eval "printf '%s=%s\n' $v \"\$$v\""
done
printf 'HTTP_PROXY=%s\n' "${HTTP_PROXY-unset}"
printf 'HTTP_AUTHORIZATION=%s\n' "${HTTP_AUTHORIZATION-unset}"
printf 'HOME=%s\n' "${HOME-unset}"
printf 'body='; cat
)", true);
    write("echo.pl", R"(use strict;
my $len = $ENV{CONTENT_LENGTH} || 0;
my $body = '';
read(STDIN, $body, $len) if $len;
print STDERR "perl says hi\n";
print "Status: 201 Created\nContent-Type: text/plain\nX-Perl: yes\nContent-Length: 99999\nConnection: close\n\n";
print "got ", length($body), " bytes: ", substr($body, 0, 10), "\n";
)", false);
    write("slow.sh", "#!/bin/sh\nsleep 5\necho 'Content-Type: text/plain'\necho\necho late\n", true);
    write("slowbody.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nfirst'\nsleep 5\necho late\n", true);
    write("local.sh", "#!/bin/sh\nprintf 'Location: /cgi/env.sh/moved?from=redirect\\n\\n'\n", true);
    write("away.sh", "#!/bin/sh\nprintf 'Location: http://example.com/x\\n\\n'\n", true);
    write("notfound.sh", "#!/bin/sh\nprintf 'Status: 404 Not Found\\nContent-Type: text/html\\n\\n<p>nope</p>'\n", true);
    write("garbage.sh", "#!/bin/sh\necho 'this is not a header'\necho\n", true);
    write("silent.sh", "#!/bin/sh\nexit 3\n", true);
    write("plain.txt", "not executable\n", false);
    write("info.php", "<?php header('X-Php: 1'); echo 'php ', $_SERVER['GATEWAY_INTERFACE'], ' ', $_GET['a']; ?>", false);
    fs::create_directories(dir / "sub");
    write("sub/deep.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s|%s' \"$SCRIPT_NAME\" \"$PATH_INFO\"\n", true);
    write(".hidden.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nhidden'\n", true);
    fs::create_symlink("/bin/sh", dir / "escape");
  }
  ~Scripts() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text, bool exec) {
    std::ofstream(dir / name) << text;
    fs::permissions(dir / name, exec ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write);
  }
};

testing::Options mounted() {
  testing::Options o;
  o.script_name = "/cgi";
  o.remote_addr = "192.0.2.1";
  return o;
}

mw::CgiBinOptions rooted(const std::string& root, std::size_t max_processes = 16) {
  mw::CgiBinOptions o;
  o.root = root;
  o.max_processes = max_processes;
  return o;
}

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}
}  // namespace

TEST_CASE("cgi_bin: CGI/1.1 environment, no HTTP_PROXY, no server environment, stdin piped") {
  Scripts s;
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  App app = lint(mw::CgiBin(o));
  auto res = testing::call(app, "POST /cgi/env.sh/extra/path?q=1&b=2",
                           {{"X-Foo", "bar"}, {"Proxy", "http://evil:8080"}, {"Authorization", "Basic eDp5"},
                            {"Content-Type", "text/plain"}},
                           "hello stdin", mounted());
  CHECK(res.status == 200);
  CHECK(res.streamed);
  CHECK(res.header("X-Script") == "env");
  for (std::string line : {"GATEWAY_INTERFACE=CGI/1.1", "SERVER_SOFTWARE=csgi/0.1", "REQUEST_METHOD=POST",
                           "SCRIPT_NAME=/cgi/env.sh", "PATH_INFO=/extra/path", "QUERY_STRING=q=1&b=2",
                           "HTTP_X_FOO=bar", "CONTENT_LENGTH=11", "CONTENT_TYPE=text/plain", "REMOTE_ADDR=192.0.2.1",
                           "SERVER_NAME=localhost", "SERVER_PORT=80", "SERVER_PROTOCOL=HTTP/1.1",
                           "REQUEST_URI=/cgi/env.sh/extra/path?q=1&b=2", "HTTP_PROXY=unset",
                           "HTTP_AUTHORIZATION=unset", "HOME=unset", "body=hello stdin"})
    CHECK_THAT(res.body, Catch::Contains(line + "\n") || Catch::EndsWith(line));
}

TEST_CASE("cgi_bin: Perl script — Status, headers, stderr to csgi.errors, Content-Length and hop-by-hop dropped") {
  Scripts s;
  App app = lint(mw::CgiBin(rooted(s.dir.string())));
  std::string big(300000, 'z');  // larger than a pipe buffer: input and output are pumped together
  auto res = testing::call(app, "POST /cgi/echo.pl", {{"Content-Type", "application/octet-stream"}}, big, mounted());
  CHECK(res.status == 201);
  CHECK(res.header("X-Perl") == "yes");
  CHECK_FALSE(res.headers.has("Content-Length"));
  CHECK_FALSE(res.headers.has("Connection"));
  CHECK(res.body == "got 300000 bytes: zzzzzzzzzz\n");
  CHECK(res.errors.find("cgi_bin: /cgi/echo.pl: perl says hi") != std::string::npos);
}

TEST_CASE("cgi_bin: redirects, script errors, refusals") {
  Scripts s;
  App app = lint(mw::CgiBin(rooted(s.dir.string())));
  auto local = testing::call(app, "POST /cgi/local.sh", {}, "ignored", mounted());
  CHECK(local.status == 200);
  CHECK(local.body.find("REQUEST_METHOD=GET\n") != std::string::npos);
  CHECK(local.body.find("PATH_INFO=/moved\n") != std::string::npos);
  CHECK(local.body.find("QUERY_STRING=from=redirect\n") != std::string::npos);
  auto away = testing::call(app, "GET /cgi/away.sh", {}, {}, mounted());
  CHECK(away.status == 302);
  CHECK(away.header("Location") == "http://example.com/x");
  auto nf = testing::call(app, "GET /cgi/notfound.sh", {}, {}, mounted());
  CHECK(nf.status == 404);
  CHECK(nf.body == "<p>nope</p>");
  auto garbage = testing::call(app, "GET /cgi/garbage.sh", {}, {}, mounted());
  CHECK(garbage.status == 502);
  CHECK(garbage.errors.find("malformed header") != std::string::npos);
  auto silent = testing::call(app, "GET /cgi/silent.sh", {}, {}, mounted());
  CHECK(silent.status == 502);
  CHECK(silent.errors.find("exited with status 3") != std::string::npos);
  CHECK(testing::call(app, "GET /cgi/sub/deep.sh/a/b", {}, {}, mounted()).body == "/cgi/sub/deep.sh|/a/b");
  CHECK(testing::call(app, "GET /cgi/plain.txt", {}, {}, mounted()).status == 403);
  CHECK(testing::call(app, "GET /cgi/nothere.sh", {}, {}, mounted()).status == 404);
  CHECK(testing::call(app, "GET /cgi/sub", {}, {}, mounted()).status == 404);
  CHECK(testing::call(app, "GET /cgi/.hidden.sh", {}, {}, mounted()).status == 404);
  // The adapter resolves "sub/.." before any app sees the path (ENV-5); a ".." that a layer above puts
  // into PATH_INFO itself is still refused by cgi_bin.
  CHECK(testing::call(app, "GET /cgi/sub/../env.sh", {}, {}, mounted()).status == 200);
  testing::Options dotted = mounted();
  dotted.setup = [](Env& e) { e.set(keys::PATH_INFO, "/sub/../env.sh"); };
  CHECK(testing::call(mw::CgiBin(rooted(s.dir.string())), "GET /cgi/x", {}, {}, dotted).status == 404);
  CHECK(testing::call(app, "GET /cgi//env.sh", {}, {}, mounted()).status == 404);
  CHECK(testing::call(app, "GET /cgi/escape", {}, {}, mounted()).status == 403);
}

TEST_CASE("cgi_bin: timeout before headers (504) and after (stream throws); group killed, children reaped") {
  Scripts s;
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  o.timeout = std::chrono::milliseconds(300);
  mw::CgiBin cgi(o);
  App app = lint(cgi);
  auto t0 = std::chrono::steady_clock::now();
  auto res = testing::call(app, "GET /cgi/slow.sh", {}, {}, mounted());
  CHECK(res.status == 504);
  CHECK(res.errors.find("no response headers before the timeout") != std::string::npos);
  CHECK_THROWS_WITH(testing::call(app, "GET /cgi/slowbody.sh", {}, {}, mounted()), Catch::Contains("timed out"));
  CHECK((std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4)));
  CHECK(cgi.running() == 0);
}

TEST_CASE("cgi_bin: process limit gives 503; closing a stream early kills the script; no fd leak") {
  Scripts s;
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  o.max_processes = 1;
  mw::CgiBin cgi(o);
  std::size_t fds_before = open_fds();
  {
    Env env;
    StringInput in;
    StringErrorStream errors;
    env.set("REQUEST_METHOD", "GET");
    env.set("SCRIPT_NAME", "/cgi");
    env.set("PATH_INFO", "/slowbody.sh");
    env.set("QUERY_STRING", "");
    env.set_object<Input>(keys::input, &in);
    env.set_object<ErrorStream>(keys::errors, &errors);
    Response first = cgi(env);  // headers read; the script sleeps in its body
    REQUIRE(first.status == 200);
    CHECK(cgi.running() == 1);
    auto second = testing::call(cgi, "GET /cgi/env.sh", {}, {}, mounted());
    CHECK(second.status == 503);
    CHECK(second.header("Retry-After") == "1");
    auto stream = std::get<StreamPtr>(first.body);
    std::string chunk;
    REQUIRE(stream->next(chunk));
    CHECK(chunk == "first");
    stream->close();
    CHECK(cgi.running() == 0);
  }
  for (int i = 0; i < 10; ++i) CHECK(testing::call(cgi, "GET /cgi/env.sh", {}, {}, mounted()).status == 200);
  CHECK(open_fds() == fds_before);
}

TEST_CASE("cgi_bin: php-cgi when installed") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  if (!cgi.has_interpreter(".php")) {
    WARN("skipped: php-cgi is not installed");
    return;
  }
  auto res = testing::call(lint(cgi), "GET /cgi/info.php?a=42", {}, {}, mounted());
  CHECK(res.status == 200);
  CHECK(res.header("X-Php") == "1");
  CHECK(res.body == "php CGI/1.1 42");
}

TEST_CASE("cgi_bin: configuration errors") {
  CHECK_THROWS_AS(mw::CgiBin(rooted("/nonexistent/dir")), std::invalid_argument);
  Scripts s;
  CHECK_THROWS_AS(mw::CgiBin(rooted(s.dir.string(), 0)), std::invalid_argument);
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  o.extra_env = {{"BAD NAME", "x"}};
  CHECK_THROWS_AS(mw::CgiBin(o), std::invalid_argument);
}

TEST_CASE("cgi_bin: concurrent requests from several threads share one app and its process limit") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string(), 3));
  App app = cgi;
  std::size_t fds_before = open_fds();
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        auto res = testing::call(app, "POST /cgi/echo.pl", {}, std::string(1000 + t * 100 + i, 'a'), mounted());
        if (res.status == 201 && res.body == "got " + std::to_string(1000 + t * 100 + i) + " bytes: aaaaaaaaaa\n")
          ++ok;
        else if (res.status == 503)
          ++busy;
        else
          ++other;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(other == 0);
  CHECK(ok + busy == 48);
  CHECK(ok >= 3);
  CHECK(cgi.running() == 0);
  CHECK(open_fds() == fds_before);
}
