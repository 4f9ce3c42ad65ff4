// The in-memory part of the spec's adapter-side rules (spec/csgi.md §2, §5, §7).
//
// The adapter rules (ADP-*) are checked over real sockets by the conformance suite (tests/conformance);
// here we check what the core gives every adapter for them — populate_env/add_header, known_length,
// reason_phrase, the error streams — and the in-memory adapter (csgi::testing::call), which honours the
// same rules. Each test names the rule it checks.
#include "csgi/core/request_env.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csgi/core/cookie.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

namespace {

Env& built(Env& env, std::string_view method, std::string_view target, std::string_view script = {}) {
  ConnectionInfo c;
  c.script_name = script;
  populate_env(env, {method, target}, c);
  return env;
}

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const HttpError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace

TEST_CASE("ENV-2: populate_env splits SCRIPT_NAME and PATH_INFO", "[adapter_rules][ENV-2]") {
  Env root;
  built(root, "GET", "/");
  CHECK(root.get(keys::SCRIPT_NAME) == "");
  CHECK(root.get(keys::PATH_INFO) == "/");
  Env at, under, beside;
  built(at, "GET", "/app", "/app");
  CHECK(at.get(keys::SCRIPT_NAME) == "/app");
  CHECK(at.get(keys::PATH_INFO) == "");
  built(under, "GET", "/app/x?q=1", "/app");
  CHECK(under.get(keys::SCRIPT_NAME) == "/app");
  CHECK(under.get(keys::PATH_INFO) == "/x");
  built(beside, "GET", "/application", "/app");
  CHECK(beside.get(keys::SCRIPT_NAME) == "");
  CHECK(beside.get(keys::PATH_INFO) == "/application");
  Env star;
  built(star, "OPTIONS", "*");
  CHECK(star.get(keys::SCRIPT_NAME) == "");
  CHECK(star.get(keys::PATH_INFO) == "");
  CHECK(star.get(keys::REQUEST_URI) == "*");
}

TEST_CASE("ENV-5: PATH_INFO is decoded exactly once, then its dot segments removed", "[adapter_rules][ENV-5]") {
  auto path = [](std::string_view target) {
    Env env;
    built(env, "GET", target);
    return std::string(env.get(keys::PATH_INFO));
  };
  CHECK(path("/foo/bar%2cbaz") == "/foo/bar,baz");
  CHECK(path("/foo/%252c") == "/foo/%2c");
  CHECK(path("/a+b") == "/a+b");
  CHECK(path("/a%2Fb") == "/a/b");
  CHECK(path("//foo///bar/baz") == "//foo///bar/baz");
  CHECK(path("/caf\xc3\xa9") == "/caf\xc3\xa9");
  CHECK(path("/a/../b") == "/b");
  CHECK(path("/admin/users/../..") == "/");
  CHECK(path("/admin/%2e%2e") == "/");
  CHECK(path("/a/./b") == "/a/b");
  CHECK(path("/a%2F..%2Fb") == "/b");
  CHECK(path("/a/b/..") == "/a/");
  for (std::string_view above : {"/..", "/a/%2e%2e/%2e%2e", "/a//.."}) {
    Env e;
    CHECK_THROWS_AS(built(e, "GET", above), BadRequest);
  }
  Env env;
  built(env, "GET", "/foo/bar%20baz%73?x=%20");
  CHECK(env.get(keys::QUERY_STRING) == "x=%20");
  CHECK(env.get(keys::REQUEST_URI) == "/foo/bar%20baz%73?x=%20");
}

TEST_CASE("ENV-9: header keys are upper-cased and repeats joined in order", "[adapter_rules][ENV-9]") {
  Env env;
  CHECK(add_header(env, "x-forwarded-for", "10.0.0.1"));
  CHECK(add_header(env, "X-Forwarded-For", "10.0.0.2"));
  CHECK(add_header(env, "Accept", "text/html"));
  CHECK(env.get("HTTP_X_FORWARDED_FOR") == "10.0.0.1, 10.0.0.2");
  CHECK(env.get("HTTP_ACCEPT") == "text/html");
  CHECK_FALSE(env.contains("HTTP_COOKIE"));
  auto res = testing::call(
      [](Env& e) { return Response::text(200, std::string(e.get("HTTP_FOO")) + "|" + (e.contains("HTTP_COOKIE") ? "c" : "-")); },
      "GET /", {{"Foo", "bar"}, {"Foo", "baz"}});
  CHECK(res.body == "bar, baz|-");
}

TEST_CASE("ENV-9: repeated Cookie fields are joined with \"; \"", "[adapter_rules][ENV-9]") {
  Env env;
  CHECK(add_header(env, "Cookie", "x=a,__Host-sid=evil"));
  CHECK(add_header(env, "cookie", "__Host-sid=real"));
  CHECK(env.get(keys::HTTP_COOKIE) == "x=a,__Host-sid=evil; __Host-sid=real");
  CHECK(parse_cookies(env.get(keys::HTTP_COOKIE)).get("__Host-sid") == "real");
  auto res = testing::call([](Env& e) { return Response::text(200, std::string(e.get(keys::HTTP_COOKIE))); }, "GET /",
                           {{"Cookie", "a=1"}, {"Cookie", "b=2"}});
  CHECK(res.body == "a=1; b=2");
}

TEST_CASE("ENV-10: names with '_' and the Proxy header are dropped", "[adapter_rules][ENV-10]") {
  Env env;
  CHECK_FALSE(add_header(env, "X_Real_IP", "1.2.3.4"));
  CHECK_FALSE(add_header(env, "proxy", "http://evil"));
  CHECK_FALSE(env.contains("HTTP_X_REAL_IP"));
  CHECK_FALSE(env.contains("HTTP_PROXY"));
  CHECK(env.size() == 0);
}

TEST_CASE("ENV-11: Content-Type/Content-Length become CONTENT_*, present only when sent", "[adapter_rules][ENV-11]") {
  Env env;
  add_header(env, "content-type", "application/json");
  add_header(env, "Content-Length", "2");
  CHECK(env.get(keys::CONTENT_TYPE) == "application/json");
  CHECK(env.get(keys::CONTENT_LENGTH) == "2");
  CHECK_FALSE(env.contains("HTTP_CONTENT_TYPE"));
  CHECK_FALSE(env.contains("HTTP_CONTENT_LENGTH"));
  bool get_has_length = true, get_has_type = true;
  testing::Options o;
  o.inspect = [&](const Env& e) {
    get_has_length = e.contains(keys::CONTENT_LENGTH);
    get_has_type = e.contains(keys::CONTENT_TYPE);
  };
  testing::call([](Env&) { return Response::text(200, ""); }, "GET /", {}, "", o);
  CHECK_FALSE(get_has_length);
  CHECK_FALSE(get_has_type);
}

TEST_CASE("ERR-1: one write is one whole message, even across threads", "[adapter_rules][ERR-1]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  });
  {
    FdErrorStream errors(fds[1]);
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t)
      writers.emplace_back([&errors, t] {
        for (int i = 0; i < 200; ++i) errors.write(std::string(100, static_cast<char>('a' + t)));
      });
    for (auto& w : writers) w.join();
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  std::size_t lines = 0, start = 0;
  for (std::size_t nl; (nl = got.find('\n', start)) != std::string::npos; start = nl + 1, ++lines) {
    std::string_view line(got.data() + start, nl - start);
    REQUIRE(line.size() == 100);
    CHECK(line.find_first_not_of(line.front()) == std::string_view::npos);
  }
  CHECK(lines == 800);
  StringErrorStream s;
  s.write("no newline");
  s.write("with newline\n");
  CHECK(s.text() == "no newline\nwith newline\n");
}

TEST_CASE("APP-3: the env stays valid until a delayed response has answered", "[adapter_rules][APP-3]") {
  App app = [](Env& env) {
    return Response::delayed([&env](Responder r) {
      std::string body = std::string(env.get(keys::PATH_INFO)) + "?" + std::string(env.get(keys::QUERY_STRING)) +
                         " " + env.input().read_all();
      r.respond(Response::text(200, body));
    });
  };
  CHECK(testing::call(wrap<Lint>(app), "POST /later?x=1", {}, "payload").body == "/later?x=1 payload");
}

TEST_CASE("EXT-2 (in memory): middleware hands the app the adapter's own Hijack", "[adapter_rules][EXT-2]") {
  struct Conn final : Hijack {
    int taken = 0;
    int take(std::string& pending) override {
      ++taken;
      pending += "leftover";
      return -1;
    }
  } conn;
  testing::Options o;
  o.setup = [&](Env& env) { env.set_object<Hijack>(keys::x::io, &conn); };
  App app = [&](Env& env) {
    Hijack* h = env.object<Hijack>(keys::x::io);
    CHECK(h == &conn);
    std::string pending;
    CHECK(h->take(pending) == -1);
    CHECK(pending == "leftover");
    return Response::text(200, "ok");
  };
  testing::call(wrap<Lint>(wrap<Lint>(app)), "GET /ws", {{"Upgrade", "websocket"}}, "", o);
  CHECK(conn.taken == 1);
}

TEST_CASE("RES-3 (in memory): repeated response headers are kept, in order", "[adapter_rules][RES-3]") {
  auto res = testing::call(wrap<Lint>([](Env&) {
                             Response r = Response::text(200, "x");
                             r.headers.add("Set-Cookie", "a=1");
                             r.headers.add("X-Between", "y");
                             r.headers.add("set-cookie", "b=2");
                             return r;
                           }),
                           "GET /");
  REQUIRE(res.headers.size() == 4);
  CHECK(res.headers[1].name == "Set-Cookie");
  CHECK(res.headers[2].name == "X-Between");
  CHECK(res.headers.get_all("Set-Cookie") == std::vector<std::string_view>{"a=1", "b=2"});
}

TEST_CASE("RES-9 / ADP-3 (in memory): a stream is closed after its end and after an error", "[adapter_rules][RES-9][ADP-3]") {
  int closes = 0;
  auto stream = [&](bool fail) {
    return [&closes, fail](Env&) {
      Response r = Response::text(200, "");
      r.body = make_stream(
          [fail, n = 0]() mutable -> std::optional<std::string> {
            if (n++ == 1) {
              if (fail) throw std::runtime_error("disk gone");
              return std::nullopt;
            }
            return std::string("chunk");
          },
          [&closes] { ++closes; });
      return r;
    };
  };
  auto res = testing::call(stream(false), "GET /");
  CHECK(res.body == "chunk");
  CHECK(res.closed);
  CHECK(closes == 1);
  CHECK_THROWS_WITH(testing::call(stream(true), "GET /"), "disk gone");
  CHECK(closes == 2);
}

TEST_CASE("ADP-1 (in memory): known_length gives the Content-Length of complete bodies only", "[adapter_rules][ADP-1]") {
  std::string path = "/tmp/csgi_adapter_rules_" + std::to_string(::getpid());
  std::ofstream(path) << "0123456789";
  Response r = Response::text(200, "hello");
  CHECK(r.known_length() == 5u);
  r.body = std::make_shared<const std::string>("abc");
  CHECK(r.known_length() == 3u);
  r.body = FileBody::open(path);
  CHECK(r.known_length() == 10u);
  r.body = FileBody::open(path, 4);
  CHECK(r.known_length() == 6u);
  r.body = FileBody::open(path, 2, 3);
  CHECK(r.known_length() == 3u);
  r.body = make_stream([]() -> std::optional<std::string> { return std::nullopt; });
  CHECK_FALSE(r.known_length().has_value());
  CHECK_FALSE(Response::delayed([](Responder) {}).known_length().has_value());
  std::remove(path.c_str());
}

TEST_CASE("ADP-2 (in memory): a HEAD response's body is still closed", "[adapter_rules][ADP-2]") {
  bool closed = false;
  auto res = testing::call(wrap<Lint>([&](Env& env) {
                             CHECK(env.get(keys::REQUEST_METHOD) == "HEAD");
                             Response r = Response::text(200, "");
                             r.headers.add("Content-Length", "5");
                             r.body = make_stream([n = 0]() mutable -> std::optional<std::string> {
                               if (n++) return std::nullopt;
                               return std::string("hello");
                             }, [&] { closed = true; });
                             return r;
                           }),
                           "HEAD /");
  CHECK(res.header("Content-Length") == "5");
  CHECK(closed);
}

TEST_CASE("ADP-4 (in memory): write() reports false once the response is over", "[adapter_rules][ADP-4]") {
  bool after = true;
  testing::call([&](Env&) {
    return Response::delayed([&](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      CHECK(w->write("a"));
      w->close();
      after = w->write("b");
    });
  }, "GET /");
  CHECK_FALSE(after);
}

TEST_CASE("ADP-5 (in memory): the app's exception reaches the boundary; the 500 page is valid", "[adapter_rules][ADP-5]") {
  App boom = [](Env&) -> Response { throw std::runtime_error("boom"); };
  CHECK_THROWS_WITH(testing::call(wrap<Lint>(boom), "GET /"), "boom");
  Response page = Response::error(500);
  CHECK(page.status == 500);
  CHECK(std::get<std::string>(page.body) == "500 Internal Server Error\n");
  CHECK_NOTHROW(Lint::check_head(page.status, page.headers));
}

TEST_CASE("ADP-6 (in memory): HttpErrors carry their status; their pages are valid", "[adapter_rules][ADP-6]") {
  CHECK(status_of([] { throw BadRequest("bad"); }) == 400);
  StringInput big(std::string(100, 'x'));
  CHECK(status_of([&] { big.read_all(10); }) == 413);
  for (int s : {400, 404, 413, 431, 503}) {
    Response page = Response::error(s, "detail");
    CHECK(page.status == s);
    CHECK_NOTHROW(Lint::check_head(page.status, page.headers));
  }
}

TEST_CASE("ADP-7 (in memory): envs built by populate_env/add_header pass Lint", "[adapter_rules][ADP-7]") {
  App app = wrap<Lint>([](Env&) { return Response::text(200, "ok"); });
  testing::Options mounted;
  mounted.script_name = "/app";
  for (std::string request : {"GET /", "GET /a%20b?x=1&y", "GET http://example.com/p?q=1", "OPTIONS *",
                              "DELETE //foo///bar HTTP/1.0", "GET /caf\xc3\xa9"})
    CHECK(testing::call(app, request, {{"Host", "example.com"}, {"Cookie", "a=1"}, {"X_Bad", "dropped"}}).status == 200);
  CHECK(testing::call(app, "POST /app/x", {{"Content-Type", "text/plain"}}, "body", mounted).status == 200);
  CHECK(testing::call(app, "GET /app", {}, "", mounted).status == 200);
}

TEST_CASE("ADP-8 (in memory): no-body statuses are known, and their pages have no body", "[adapter_rules][ADP-8]") {
  for (int s : {100, 101, 103, 204, 304}) CHECK(status_has_no_body(s));
  for (int s : {200, 205, 206, 404, 500}) CHECK_FALSE(status_has_no_body(s));
  Response not_modified = Response::error(304);
  CHECK(std::get<std::string>(not_modified.body).empty());
  CHECK_FALSE(not_modified.headers.has("Content-Type"));
}

TEST_CASE("ADP-9 (in memory): the input ends at the body, so the rest can be drained exactly", "[adapter_rules][ADP-9]") {
  auto res = testing::call([](Env& env) {
    CHECK(env.input().read(2) == "ab");
    return Response::text(200, "ok");
  }, "POST /", {}, "abcdef");
  CHECK(res.status == 200);
  StringInput data("abcdef");
  Input& in = data;
  CHECK(in.read(2) == "ab");
  CHECK(in.read_all() == "cdef");
  char c;
  CHECK(in.read(&c, 1) == 0);
}

TEST_CASE("ADP-10 (in memory): malformed request targets are 400s before any app runs", "[adapter_rules][ADP-10]") {
  for (std::string_view target : {"/a%zzb", "/a%4", "/a%00b", "relative", "/x%"}) {
    Env env;
    INFO(target);
    CHECK(status_of([&] { built(env, "GET", target); }) == 400);
  }
  bool ran = false;
  CHECK(status_of([&] { testing::call([&](Env&) { ran = true; return Response::text(200, ""); }, "GET /%zz"); }) == 400);
  CHECK_FALSE(ran);
}

TEST_CASE("ADP-11 (in memory): a delayed response never answered is an error, not a hang", "[adapter_rules][ADP-11]") {
  App silent = [](Env&) { return Response::delayed([](Responder) {}); };
  CHECK_THROWS_AS(testing::call(silent, "GET /"), std::logic_error);
}

TEST_CASE("ADP-12 (in memory): reason phrases and the Date format", "[adapter_rules][ADP-12]") {
  CHECK(reason_phrase(200) == "OK");
  CHECK(reason_phrase(404) == "Not Found");
  CHECK(reason_phrase(103) == "Early Hints");
  CHECK(reason_phrase(599) == "Unknown");
  CHECK(http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT");
  CHECK(http_date_now().size() == 29);
}
