#include "csgi/middleware/cgi_bin.hpp"
#include "csgi/middleware/cgi_bin_process.hpp"

#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/builder.hpp"
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
         CONTENT_LENGTH CONTENT_TYPE REMOTE_ADDR SERVER_NAME SERVER_PORT SERVER_PROTOCOL REQUEST_URI \
         PATH_TRANSLATED SCRIPT_FILENAME; do
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
    write("slow1.sh", "#!/bin/sh\nsleep 1\nprintf 'Content-Type: text/plain\\n\\ndone'\n", true);
    write("slow2.sh", "#!/bin/sh\nsleep 3\nprintf 'Content-Type: text/plain\\n\\nslow'\n", true);
    write("ticker.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nwhile :; do echo tick; sleep 0.05; done\n", true);
    write("dots.sh", "#!/bin/sh\nprintf 'Location: /cgi/sub/./../env.sh/moved\\n\\n'\n", true);
    write("climb.sh", "#!/bin/sh\nprintf 'Location: /other/../../etc/passwd\\n\\n'\n", true);
    write("outside.sh", "#!/bin/sh\nprintf 'Location: /other/x/../y?q=1\\n\\n'\n", true);
    write("local.sh", "#!/bin/sh\nprintf 'Location: /cgi/env.sh/moved?from=redirect\\n\\n'\n", true);
    write("away.sh", "#!/bin/sh\nprintf 'Location: http://example.com/x\\n\\n'\n", true);
    write("notfound.sh", "#!/bin/sh\nprintf 'Status: 404 Not Found\\nContent-Type: text/html\\n\\n<p>nope</p>'\n", true);
    write("garbage.sh", "#!/bin/sh\necho 'this is not a header'\necho\n", true);
    write("silent.sh", "#!/bin/sh\nexit 3\n", true);
    write("late.sh", "#!/bin/sh\nprintf 'Status: 204 No Content\\r\\n\\r\\n'\nexec 1>&-\necho late-stderr >&2\nexit 4\n", true);
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

/// Set once a delayed answer is complete: answered, writer closed, or writer dropped unclosed.
struct Done {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  void set() {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  }
  bool wait(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return done; });
  }
};

class WaitWriter final : public Writer {
public:
  WaitWriter(WriterPtr inner, std::shared_ptr<Done> d) : inner_(std::move(inner)), done_(std::move(d)) {}
  ~WaitWriter() override { done_->set(); }  // unclosed: the answer failed (the test client's `closed` is false)
  bool write(std::string_view chunk) override { return inner_->write(chunk); }
  void close() override {
    inner_->close();
    done_->set();
  }

private:
  WriterPtr inner_;
  std::shared_ptr<Done> done_;
};

class WaitResponder final : public ResponderImpl {
public:
  WaitResponder(Responder inner, std::shared_ptr<Done> d) : inner_(std::move(inner)), done_(std::move(d)) {}
  ~WaitResponder() override {
    if (!started_) done_->set();
  }
  void respond(Response r) override {
    inner_.respond(std::move(r));
    done_->set();
  }
  WriterPtr start(int status, Headers headers) override {
    started_ = true;
    return std::make_shared<WaitWriter>(inner_.start(status, std::move(headers)), done_);
  }

private:
  Responder inner_;
  std::shared_ptr<Done> done_;
  bool started_ = false;
};

/// testing::call drains a delayed response in its callable: this waits there until the worker's answer is
/// complete.
App waiting(App inner) {
  return [inner](Env& env) -> Response {
    Response r = inner(env);
    if (!r.is_delayed()) return r;
    Delayed d = std::get<Delayed>(std::move(r.body));
    return Response::delayed([d](Responder outer) {
      auto done = std::make_shared<Done>();
      d(Responder(std::make_shared<WaitResponder>(std::move(outer), done)));
      REQUIRE(done->wait());
    });
  };
}

/// The app under Lint, on a worker (async) or on the calling thread.
App cgi_app(mw::CgiBinOptions o, bool async) {
  o.async = async;
  return waiting(lint(mw::CgiBin(o)));
}

/// The same without Lint, for hand-built envs that no adapter would produce (Lint refuses a dot segment in
/// PATH_INFO: ENV-5).
App unlinted_cgi_app(mw::CgiBinOptions o, bool async) {
  o.async = async;
  return waiting(mw::CgiBin(o));
}

/// A hand-built env, as an adapter or a middleware could pass it: nothing canonicalised.
testing::Options raw_path(std::string path_info) {
  testing::Options o = mounted();
  o.setup = [path_info](Env& env) { env.set(keys::PATH_INFO, path_info); };
  return o;
}
}  // namespace

TEST_CASE("cgi_bin: CGI/1.1 environment, no HTTP_PROXY, no server environment, stdin piped") {
  Scripts s;
  bool async = GENERATE(true, false);
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  App app = cgi_app(o, async);
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
  CHECK(res.closed);
}

TEST_CASE("cgi_bin: Perl script — Status, headers, stderr to csgi.errors, Content-Length and hop-by-hop dropped") {
  Scripts s;
  bool async = GENERATE(true, false);
  App app = cgi_app(rooted(s.dir.string()), async);
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
  bool async = GENERATE(true, false);
  App app = cgi_app(rooted(s.dir.string()), async);
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
  // Logged before the answer: once it is complete, csgi.errors may be gone (APP-3).
  auto late = testing::call(app, "GET /cgi/late.sh", {}, {}, mounted());
  CHECK(late.status == 204);
  CHECK(late.errors.find("late-stderr") != std::string::npos);
  CHECK(late.errors.find("exited with status 4") != std::string::npos);
  CHECK(testing::call(app, "GET /cgi/sub/deep.sh/a/b", {}, {}, mounted()).body == "/cgi/sub/deep.sh|/a/b");
  CHECK(testing::call(app, "GET /cgi/plain.txt", {}, {}, mounted()).status == 403);
  CHECK(testing::call(app, "GET /cgi/nothere.sh", {}, {}, mounted()).status == 404);
  CHECK(testing::call(app, "GET /cgi/sub", {}, {}, mounted()).status == 404);
  CHECK(testing::call(app, "GET /cgi/.hidden.sh", {}, {}, mounted()).status == 404);
  App unlinted = unlinted_cgi_app(rooted(s.dir.string()), async);
  CHECK(testing::call(unlinted, "GET /cgi/x", {}, {}, raw_path("/sub/../env.sh")).status == 404);
  CHECK(testing::call(app, "GET /cgi/x", {}, {}, raw_path("//env.sh")).status == 404);
  CHECK(testing::call(unlinted, "GET /cgi/x", {}, {}, raw_path("/./env.sh")).status == 404);
  CHECK(testing::call(app, "GET /cgi/escape", {}, {}, mounted()).status == 403);
}

TEST_CASE("cgi_bin: timeout before headers (504) and after (response fails); group killed, children reaped") {
  Scripts s;
  bool async = GENERATE(true, false);
  mw::CgiBinOptions o;
  o.root = s.dir.string();
  o.timeout = std::chrono::milliseconds(300);
  o.async = async;
  mw::CgiBin cgi(o);
  App app = waiting(lint(cgi));
  auto t0 = std::chrono::steady_clock::now();
  auto res = testing::call(app, "GET /cgi/slow.sh", {}, {}, mounted());
  CHECK(res.status == 504);
  CHECK(res.errors.find("no response headers before the timeout") != std::string::npos);
  if (async) {
    // The writer is dropped unclosed: the adapter ends the response as failed.
    auto cut = testing::call(app, "GET /cgi/slowbody.sh", {}, {}, mounted());
    CHECK(cut.status == 200);
    CHECK(cut.body == "first");
    CHECK_FALSE(cut.closed);
    CHECK(cut.errors.find("timed out after the headers") != std::string::npos);
  } else {
    CHECK_THROWS_WITH(testing::call(app, "GET /cgi/slowbody.sh", {}, {}, mounted()), Catch::Contains("timed out"));
  }
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
    auto second = testing::call(waiting(cgi), "GET /cgi/env.sh", {}, {}, mounted());
    CHECK(second.status == 503);
    CHECK(second.header("Retry-After") == "1");
    auto stream = std::get<StreamPtr>(first.body);
    std::string chunk;
    REQUIRE(stream->next(chunk));
    CHECK(chunk == "first");
    stream->close();
    CHECK(cgi.running() == 0);
  }
  for (int i = 0; i < 10; ++i) CHECK(testing::call(waiting(cgi), "GET /cgi/env.sh", {}, {}, mounted()).status == 200);
  CHECK(open_fds() == fds_before);
}

TEST_CASE("cgi_bin: php-cgi when installed") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  if (!cgi.has_interpreter(".php")) {
    WARN("skipped: php-cgi is not installed");
    return;
  }
  auto res = testing::call(waiting(lint(cgi)), "GET /cgi/info.php?a=42", {}, {}, mounted());
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
  bool async = GENERATE(true, false);
  mw::CgiBinOptions o = rooted(s.dir.string(), 3);
  o.async = async;
  mw::CgiBin cgi(o);
  App app = waiting(cgi);
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


TEST_CASE("cgi_bin: '..' in a hand-built PATH_INFO never reaches a script, PATH_TRANSLATED or the lookup") {
  Scripts s;
  bool async = GENERATE(true, false);
  App app = unlinted_cgi_app(rooted(s.dir.string()), async);
  std::string root = fs::canonical(s.dir).string();
  auto ok = testing::call(app, "GET /cgi/env.sh/extra", {}, {}, raw_path("/env.sh/extra"));
  CHECK(ok.status == 200);
  CHECK(ok.body.find("PATH_TRANSLATED=" + root + "/extra\n") != std::string::npos);
  CHECK(ok.body.find("SCRIPT_FILENAME=" + root + "/env.sh\n") != std::string::npos);
  for (std::string bad : std::vector<std::string>{"/env.sh/../../../etc/passwd", "/env.sh/a/../../..", "/env.sh/..", "/sub/../env.sh",
                          "/../" + fs::path(root).filename().string() + "/env.sh"}) {
    INFO(bad);
    auto res = testing::call(app, "GET /cgi/x", {}, {}, raw_path(bad));
    CHECK(res.status == 404);
    CHECK(res.body.find("'..' segment") != std::string::npos);
    CHECK(res.body.find("PATH_TRANSLATED") == std::string::npos);
  }
}

TEST_CASE("cgi_bin: a local redirect's dot segments are resolved; one above the root is refused") {
  Scripts s;
  bool async = GENERATE(true, false);
  std::vector<std::string> seen;
  bool multithread = false;
  std::mutex mu;
  mw::CgiBinOptions o = rooted(s.dir.string());
  o.redirect_app = [&](Env& env) {
    std::lock_guard lock(mu);
    seen.push_back(std::string(env.get(keys::PATH_INFO)) + "?" + std::string(env.get(keys::QUERY_STRING)));
    multithread = env.flag(keys::multithread);  // on a worker it runs beside the adapter's threads
    return Response::text(200, "elsewhere");
  };
  App app = cgi_app(o, async);
  auto dots = testing::call(app, "GET /cgi/dots.sh", {}, {}, mounted());
  CHECK(dots.status == 200);
  CHECK(dots.body.find("SCRIPT_NAME=/cgi/env.sh\n") != std::string::npos);
  CHECK(dots.body.find("PATH_INFO=/moved\n") != std::string::npos);
  auto outside = testing::call(app, "GET /cgi/outside.sh", {}, {}, mounted());
  CHECK(outside.body == "elsewhere");
  auto climb = testing::call(app, "GET /cgi/climb.sh", {}, {}, mounted());
  CHECK(climb.status == 502);
  CHECK(climb.errors.find("bad local redirect") != std::string::npos);
  std::lock_guard lock(mu);
  CHECK(seen == std::vector<std::string>{"/other/y?q=1"});
  CHECK(multithread == async);
}

namespace {
/// A Responder that records the answer, for tests that drive a delayed response by hand.
struct Recorded {
  std::mutex mu;
  std::condition_variable cv;
  int status = 0;
  std::string body;
  bool answered = false;
  bool complete = false;  // respond(), or the writer closed
  bool gone = false;      // the client "went away": write() returns false
  std::thread::id thread;
  template <class F>
  bool wait_for(F pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return pred(*this); });
  }
};

class RecordWriter final : public Writer {
public:
  explicit RecordWriter(std::shared_ptr<Recorded> r) : r_(std::move(r)) {}
  bool write(std::string_view chunk) override {
    std::lock_guard lock(r_->mu);
    r_->body.append(chunk);
    r_->cv.notify_all();
    return !r_->gone;
  }
  void close() override {
    std::lock_guard lock(r_->mu);
    r_->complete = true;
    r_->cv.notify_all();
  }

private:
  std::shared_ptr<Recorded> r_;
};

class RecordResponder final : public ResponderImpl {
public:
  explicit RecordResponder(std::shared_ptr<Recorded> r) : r_(std::move(r)) {}
  void respond(Response res) override {
    auto t = testing::drain(std::move(res));
    std::lock_guard lock(r_->mu);
    r_->status = t.status;
    r_->body = t.body;
    r_->answered = r_->complete = true;
    r_->thread = std::this_thread::get_id();
    r_->cv.notify_all();
  }
  WriterPtr start(int status, Headers) override {
    std::lock_guard lock(r_->mu);
    r_->status = status;
    r_->answered = true;
    r_->thread = std::this_thread::get_id();
    r_->cv.notify_all();
    return std::make_shared<RecordWriter>(r_);
  }

private:
  std::shared_ptr<Recorded> r_;
};

/// Calls `app` with an env built as the test client does and runs its delayed callable with a recorder.
std::shared_ptr<Recorded> start_delayed(const App& app, std::string path, StringErrorStream& errors) {
  auto rec = std::make_shared<Recorded>();
  testing::Options o = mounted();
  o.setup = [&errors](Env& env) { env.set_object<ErrorStream>(keys::errors, &errors); };
  // testing::call runs the delayed callable with its own responder; this wraps it to use the recorder.
  App grab = [&app, rec](Env& env) -> Response {
    Response r = app(env);
    REQUIRE(r.is_delayed());
    Delayed d = std::get<Delayed>(std::move(r.body));
    return Response::delayed([d, rec](Responder outer) {
      d(Responder(std::make_shared<RecordResponder>(rec)));
      outer.respond(Response::text(200, "recorded elsewhere"));
    });
  };
  testing::call(grab, "GET /cgi" + path, {}, {}, o);
  return rec;
}
}  // namespace

TEST_CASE("cgi_bin: the app returns a delayed response at once; a worker answers when the script does") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  StringErrorStream errors;
  auto rec = start_delayed(cgi, "/slow1.sh", errors);
  {
    // The callable has returned; the script sleeps 1 s before its headers.
    std::lock_guard lock(rec->mu);
    CHECK_FALSE(rec->answered);
  }
  CHECK(cgi.running() == 1);
  REQUIRE(rec->wait_for([](Recorded& r) { return r.complete; }));
  CHECK(rec->status == 200);
  CHECK(rec->body == "done");
  CHECK(rec->thread != std::this_thread::get_id());
  CHECK(cgi.running() == 0);
}

TEST_CASE("cgi_bin: a worker streams stdout as it comes and kills the script once the client has gone") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  StringErrorStream errors;
  auto rec = start_delayed(cgi, "/ticker.sh", errors);
  // The script never ends: its first lines arrive while it runs.
  REQUIRE(rec->wait_for([](Recorded& r) { return r.body.find("tick\n") != std::string::npos; }));
  CHECK(rec->status == 200);
  CHECK(cgi.running() == 1);
  {
    std::lock_guard lock(rec->mu);
    rec->gone = true;
  }
  REQUIRE(rec->wait_for([](Recorded& r) { return r.complete; }));
  for (int i = 0; i < 200 && cgi.running() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(cgi.running() == 0);
  CHECK(errors.text().find("the client went away; killed") != std::string::npos);
}

TEST_CASE("cgi_bin: destroying the app kills the scripts still running; their workers answer 503 first") {
  Scripts s;
  StringErrorStream errors;
  std::shared_ptr<Recorded> rec;
  auto t0 = std::chrono::steady_clock::now();
  {
    mw::CgiBin cgi(rooted(s.dir.string()));
    rec = start_delayed(cgi, "/slow.sh", errors);
    CHECK(cgi.running() == 1);
  }  // the last copy goes: the destructor returns once the worker is done
  {
    std::lock_guard lock(rec->mu);
    CHECK(rec->complete);
    CHECK(rec->status == 503);
  }
  CHECK((std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4)));  // slow.sh sleeps 5 s
  CHECK(errors.text().find("the app was destroyed while the script ran; killed") != std::string::npos);
}

namespace {
int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

void send_request(int fd, const std::string& path) {
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
}

/// Everything until the server closes, or the limit.
std::string read_to_close(int fd, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
    char buf[4096];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) return got;
    got.append(buf, static_cast<std::size_t>(r));
  }
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

/// The standalone server with one io thread, serving /cgi (the app) and /fast, on a port of its own.
struct OneThreadServer {
  standalone::Server server;
  std::thread thread;
  int port = 0;
  OneThreadServer(const mw::CgiBin& cgi, std::chrono::milliseconds graceful)
      : server(Builder().mount("/cgi", cgi).mount("/fast", [](Env&) { return Response::text(200, "fast"); }).build(),
               [&] {
                 standalone::ServerOptions o;
                 o.listen = {"127.0.0.1:0"};
                 o.threads = 1;
                 o.handle_signals = false;
                 o.graceful_timeout = graceful;
                 o.on_listening = [](const std::string&) {};
                 return o;
               }()) {
    thread = std::thread([this] { server.run(); });
    REQUIRE(server.wait_listening());
    auto a = server.addresses().front();
    port = std::stoi(a.substr(a.rfind(':') + 1));
  }
  ~OneThreadServer() {
    server.stop();
    if (thread.joinable()) thread.join();
  }
};

bool wait_running(const mw::CgiBin& cgi, std::size_t n) {
  for (int i = 0; i < 500; ++i) {
    if (cgi.running() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}
}  // namespace

TEST_CASE("cgi_bin: a slow script does not hold the standalone server's only io thread") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  OneThreadServer srv(cgi, std::chrono::seconds(10));
  int slow = connect_to(srv.port);
  send_request(slow, "/cgi/slow2.sh");  // sleeps 3 s before its headers
  REQUIRE(wait_running(cgi, 1));
  int fast = connect_to(srv.port);
  send_request(fast, "/fast");
  std::string f = read_to_close(fast);
  CHECK(f.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(f.find("\r\n\r\nfast") != std::string::npos);
  // The fast answer came while the slow script was still running and its client still waited.
  CHECK(cgi.running() == 1);
  CHECK_FALSE(readable(slow));
  std::string r = read_to_close(slow);
  CHECK(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(r.find("slow") != std::string::npos);
  ::close(slow);
  ::close(fast);
}

TEST_CASE("cgi_bin: a server stopping with a script running finishes its answer and stops") {
  Scripts s;
  mw::CgiBin cgi(rooted(s.dir.string()));
  auto srv = std::make_unique<OneThreadServer>(cgi, std::chrono::seconds(10));
  int slow = connect_to(srv->port);
  send_request(slow, "/cgi/slow1.sh");
  REQUIRE(wait_running(cgi, 1));
  srv->server.stop();
  std::string r = read_to_close(slow);
  CHECK(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(r.find("done") != std::string::npos);
  srv.reset();  // joins run()
  CHECK(cgi.running() == 0);
  ::close(slow);
}

TEST_CASE("cgi_bin: a script's header name must be an RFC 9110 token (NUL included)", "[cgi_bin]") {
  using csgi::mw::cgi_bin_detail::parse_head;
  CHECK(parse_head("Content-Type: text/plain\r\nX-Ok: 1\r\n").error.empty());
  CHECK(parse_head("Bad Name: 1\r\n").error == "malformed header name");
  CHECK(parse_head(std::string_view("X-A\0B: 1\r\n", 10)).error == "malformed header name");
}
