#include "csgi/adapters/cgi/gateway.hpp"

#include <catch2/catch.hpp>

#include <cstring>

#include <string>
#include <thread>
#include <vector>

#include "csgi/adapters/cgi/response_writer.hpp"
#include "csgi/adapters/cgi/spool_input.hpp"
#include "csgi/core/http_error.hpp"

using csgi::Env;
using csgi::cgi::split_paths;

namespace {
std::pair<std::string, std::string> split(std::string_view uri, std::string_view s, std::string_view i, bool repeated = false,
                                          std::optional<std::string> o = std::nullopt) {
  Env env;
  auto r = split_paths(env, uri, s, i, repeated, o);
  return {std::string(r.script_name), std::string(r.path_info)};
}

struct MemOutput final : csgi::cgi::Output {
  std::string data;
  int flushes = 0;
  bool gone = false;
  bool write(std::string_view b) override {
    if (gone) return false;
    data.append(b);
    return true;
  }
  bool flush() override {
    ++flushes;
    return !gone;
  }
  bool client_gone() override { return gone; }
};

std::vector<const char*> vars(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  for (auto& s : v) out.push_back(s.c_str());
  out.push_back(nullptr);
  return out;
}
}  // namespace

TEST_CASE("split_paths: every front server's way of saying where the app is mounted") {
  // nginx stock fastcgi_params: SCRIPT_NAME is the whole URI, no PATH_INFO → app at the root.
  CHECK(split("/app/foo/bar%20baz?x=1", "/app/foo/bar baz", "") == std::pair<std::string, std::string>{"", "/app/foo/bar baz"});
  CHECK(split("/foo/?x=1", "/foo/", "") == std::pair<std::string, std::string>{"", "/foo/"});
  // nginx fastcgi_split_path_info ^(/app)(/.*)$
  CHECK(split("/app/foo/bar%20baz", "/app", "/foo/bar baz") == std::pair<std::string, std::string>{"/app", "/foo/bar baz"});
  // nginx: explicit fastcgi_param SCRIPT_NAME /app after the stock one (sent twice), no PATH_INFO.
  CHECK(split("/app/foo", "/app", "", true) == std::pair<std::string, std::string>{"/app", "/foo"});
  CHECK(split("/app", "/app", "", true) == std::pair<std::string, std::string>{"/app", ""});
  // Apache mod_fcgid .htaccess rewrite to app.fcgi/$1.
  CHECK(split("/app/foo/bar%20baz", "/app/app.fcgi", "/foo/bar baz") == std::pair<std::string, std::string>{"/app", "/foo/bar baz"});
  CHECK(split("/foo", "/app.fcgi", "/foo") == std::pair<std::string, std::string>{"", "/foo"});
  // ... where Apache decoded %252c twice after the rewrite: PATH_INFO comes from REQUEST_URI.
  CHECK(split("/app/x%252c", "/app/app.fcgi", "/x,") == std::pair<std::string, std::string>{"/app", "/x%2c"});
  // Request straight to the script.
  CHECK(split("/app/app.fcgi/foo", "/app/app.fcgi", "/foo") == std::pair<std::string, std::string>{"/app/app.fcgi", "/foo"});
  // lighttpd with prefix /app; lighttpd at / with fix-root-scriptname.
  CHECK(split("/app/foo", "/app", "/foo") == std::pair<std::string, std::string>{"/app", "/foo"});
  CHECK(split("/foo/bar", "", "/foo/bar") == std::pair<std::string, std::string>{"", "/foo/bar"});
  // lighttpd at / without fix-root-scriptname needs the override.
  CHECK(split("/foo/bar", "/foo", "/bar", false, std::string("")) == std::pair<std::string, std::string>{"", "/foo/bar"});
  // Repeated slashes are kept (servers merge them).
  CHECK(split("//foo///bar/baz", "/foo/bar/baz", "") == std::pair<std::string, std::string>{"", "//foo///bar/baz"});
  CHECK(split("/app//foo///bar", "/app", "/foo/bar") == std::pair<std::string, std::string>{"/app", "//foo///bar"});
  // Root.
  CHECK(split("/", "/", "") == std::pair<std::string, std::string>{"", "/"});
  CHECK(split("/", "", "") == std::pair<std::string, std::string>{"", "/"});
  // Override: a prefix on a segment boundary only.
  CHECK(split("/app/x", "/whatever", "", false, std::string("/app")) == std::pair<std::string, std::string>{"/app", "/x"});
  CHECK(split("/apple", "/apple", "", false, std::string("/app")) == std::pair<std::string, std::string>{"", "/apple"});
  // No REQUEST_URI: the server's values.
  CHECK(split("", "/cgi-bin/x.cgi", "/y") == std::pair<std::string, std::string>{"/cgi-bin/x.cgi", "/y"});
  // Bad input.
  CHECK_THROWS_AS(split("/a%00b", "", ""), csgi::BadRequest);
  CHECK_THROWS_AS(split("/a%zzb", "", ""), csgi::BadRequest);
}

TEST_CASE("split_paths: the path is canonical, as nginx routed it, whatever the server split (ENV-5)") {
  using P = std::pair<std::string, std::string>;
  // nginx's stock params for /admin/.. (routed as "/"): SCRIPT_NAME=$fastcgi_script_name="/", REQUEST_URI raw.
  CHECK(split("/admin/..", "/", "") == P{"", "/"});
  CHECK(split("/admin/%2e%2e/x?y=/..", "/x", "") == P{"", "/x"});
  CHECK(split("/admin/users/../..", "/", "") == P{"", "/"});
  // fastcgi_split_path_info at /app: S and I from nginx's normalised $uri, P from REQUEST_URI.
  CHECK(split("/app/admin/../x", "/app", "/x") == P{"/app", "/x"});
  CHECK(split("/app/x/./y", "/app", "/x/y", true) == P{"/app", "/x/y"});
  CHECK(split("/x/../app/y", "/whatever", "", false, std::string("/app")) == P{"/app", "/y"});
  // No REQUEST_URI: the server's SCRIPT_NAME and PATH_INFO lose their dot segments too.
  CHECK(split("", "/cgi-bin/x.cgi", "/admin/../y") == P{"/cgi-bin/x.cgi", "/y"});
  CHECK(split("", "/cgi-bin/./x.cgi", "/y/.") == P{"/cgi-bin/x.cgi", "/y/"});
  CHECK(split("", "/cgi-bin/x/..", "/y") == P{"/cgi-bin", "/y"});  // never a SCRIPT_NAME ending in '/'
  CHECK(split("", "/x", "/a/../admin", false, std::string("/x")) == P{"/x", "/admin"});
  // Above the root, or after "//" (nginx merges slashes first, csgi does not): 400.
  CHECK_THROWS_AS(split("/..", "", ""), csgi::BadRequest);
  CHECK_THROWS_AS(split("/app/%2e%2e/%2e%2e/etc/passwd", "/app", ""), csgi::BadRequest);
  CHECK_THROWS_AS(split("/admin//..", "/", ""), csgi::BadRequest);
  CHECK_THROWS_AS(split("", "/cgi-bin/x.cgi", "/../../../etc/passwd"), csgi::BadRequest);
}

TEST_CASE("build_env: last value wins (HTTP_* joined), HTTP_CONTENT_* and HTTP_PROXY dropped, empty CONTENT_LENGTH absent") {
  std::vector<std::string> v = {"REQUEST_METHOD=POST",    "REQUEST_URI=/app/x?a=1", "QUERY_STRING=a=1",
                                "SCRIPT_NAME=/app/x",     "SCRIPT_NAME=/app",        "CONTENT_LENGTH=",
                                "HTTP_CONTENT_TYPE=text/x", "HTTP_CONTENT_LENGTH=5", "HTTP_PROXY=http://evil",
                                "CONTENT_TYPE=text/plain", "HTTP_FOO=1",             "HTTP_FOO=2",
                                "csgi.input=evil",        "HTTPS=on",               "SERVER_NAME=h"};
  auto p = vars(v);
  Env env;
  csgi::cgi::build_env(env, p.data(), {});
  CHECK(env.get("SCRIPT_NAME") == "/app");
  CHECK(env.get("PATH_INFO") == "/x");
  CHECK_FALSE(env.contains("CONTENT_LENGTH"));
  CHECK_FALSE(env.contains("HTTP_CONTENT_TYPE"));
  CHECK_FALSE(env.contains("HTTP_CONTENT_LENGTH"));
  CHECK_FALSE(env.contains("HTTP_PROXY"));
  CHECK(env.get("HTTP_FOO") == "1, 2");  // repeated header fields are joined
  CHECK(env.get("CONTENT_TYPE") == "text/plain");
  CHECK(env.get("csgi.url_scheme") == "https");
  CHECK(env.get("csgi.input").empty());
  CHECK(env.flag("csgi.streaming"));

  std::vector<std::string> bad = {"REQUEST_METHOD=GET", "CONTENT_LENGTH=12x"};
  auto pb = vars(bad);
  Env env2;
  CHECK_THROWS_AS(csgi::cgi::build_env(env2, pb.data(), {}), csgi::BadRequest);
  std::vector<std::string> none = {"QUERY_STRING="};
  auto pn = vars(none);
  Env env3;
  CHECK_THROWS_AS(csgi::cgi::build_env(env3, pn.data(), {}), csgi::BadRequest);
  std::vector<std::string> huge = {"REQUEST_METHOD=GET", "HTTP_X=" + std::string(2 << 20, 'x')};
  auto ph = vars(huge);
  Env env4;
  try {
    csgi::cgi::build_env(env4, ph.data(), {});
    FAIL("no exception");
  } catch (const csgi::HttpError& e) {
    CHECK(e.status() == 431);
  }
}

TEST_CASE("SpoolInput keeps the body for rewind, spilling to a file past the memory limit") {
  std::string src(300000, 'x');
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>('a' + i % 26);
  std::size_t pos = 0;
  csgi::cgi::SpoolInput in(
      [&](char* buf, std::size_t n) {
        std::size_t k = std::min({n, src.size() - pos, std::size_t{777}});
        std::memcpy(buf, src.data() + pos, k);
        pos += k;
        return k;
      },
      ~std::uint64_t{0}, 4096);
  CHECK(in.read(100) == src.substr(0, 100));
  CHECK(in.read_all() == src.substr(100));
  in.rewind();
  CHECK(in.read_all() == src);
  std::size_t left = 10000;
  csgi::cgi::SpoolInput limited([&](char* buf, std::size_t n) {
    std::size_t k = std::min(n, left);
    std::memset(buf, 'y', k);
    left -= k;
    return k;
  }, 5000);
  CHECK_THROWS_AS(limited.read_all(), csgi::PayloadTooLarge);
}

TEST_CASE("send_response writes CGI responses for every body kind") {
  Env env;
  env.set("REQUEST_METHOD", "GET");
  SECTION("complete body gets Status and Content-Length") {
    MemOutput out;
    CHECK(csgi::cgi::send_response(csgi::Response::text(201, "hi"), env, out));
    CHECK(out.data == "Status: 201 Created\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nhi");
  }
  SECTION("a header with CR LF becomes a 500 before anything is sent") {
    MemOutput out;
    auto r = csgi::Response::text(200, "x");
    r.headers.add("X-Evil", "a\r\nSet-Cookie: b");
    csgi::StringErrorStream errors;
    env.set_object<csgi::ErrorStream>("csgi.errors", &errors);
    CHECK(csgi::cgi::send_response(std::move(r), env, out));
    CHECK(out.data.rfind("Status: 500 ", 0) == 0);
    CHECK(errors.text().find("X-Evil") != std::string::npos);
  }
  SECTION("HEAD and 304 send no body") {
    MemOutput out;
    env.set("REQUEST_METHOD", "HEAD");
    CHECK(csgi::cgi::send_response(csgi::Response::text(200, "body"), env, out));
    CHECK(out.data.find("body") == std::string::npos);
    CHECK(out.data.find("Content-Length: 4") != std::string::npos);
  }
  SECTION("stream: flushed per chunk, closed") {
    MemOutput out;
    int n = 0;
    bool closed = false;
    csgi::Response r;
    r.headers.add("Content-Type", "text/plain");
    r.body = csgi::make_stream([&]() -> std::optional<std::string> { return n < 3 ? std::optional(std::to_string(n++)) : std::nullopt; },
                               [&] { closed = true; });
    CHECK(csgi::cgi::send_response(std::move(r), env, out));
    CHECK(out.data.ends_with("\r\n\r\n012"));
    CHECK(out.flushes >= 3);
    CHECK(closed);
  }
  SECTION("delayed + writer from another thread; gone client makes write return false") {
    MemOutput out;
    bool second_write = true;
    auto r = csgi::Response::delayed([&](csgi::Responder resp) {
      std::thread([&, resp] {
        auto w = resp.start(200, {{"Content-Type", "text/plain"}});
        w->write("one");
        out.gone = true;
        second_write = w->write("two");
        w->close();
      }).detach();
    });
    CHECK_FALSE(csgi::cgi::send_response(std::move(r), env, out));
    CHECK_FALSE(second_write);
    CHECK(out.data.ends_with("one"));
  }
  SECTION("a responder dropped without an answer gives 500") {
    MemOutput out;
    csgi::StringErrorStream errors;
    env.set_object<csgi::ErrorStream>("csgi.errors", &errors);
    auto r = csgi::Response::delayed([](csgi::Responder) {});
    CHECK(csgi::cgi::send_response(std::move(r), env, out));
    CHECK(out.data.rfind("Status: 500 ", 0) == 0);
  }
  SECTION("call_app turns exceptions into 500 and HttpError into its status") {
    csgi::StringErrorStream errors;
    env.set_object<csgi::ErrorStream>("csgi.errors", &errors);
    auto res = csgi::cgi::call_app([](Env&) -> csgi::Response { throw std::runtime_error("boom"); }, env);
    CHECK(res.status == 500);
    CHECK(errors.text().find("boom") != std::string::npos);
    CHECK(csgi::cgi::call_app([](Env&) -> csgi::Response { throw csgi::HttpError(418, "tea"); }, env).status == 418);
  }
}
