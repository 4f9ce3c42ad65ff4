#include "csgi/core/request_env.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"

using namespace csgi;

TEST_CASE("populate_env: path, query and raw URI", "[request_env]") {
  Env env;
  populate_env(env, {"GET", "/foo/bar%20baz%73?x=a&y=%2c"}, {});
  CHECK(env.get(keys::REQUEST_METHOD) == "GET");
  CHECK(env.get(keys::REQUEST_URI) == "/foo/bar%20baz%73?x=a&y=%2c");
  CHECK(env.get(keys::PATH_INFO) == "/foo/bar bazs");
  CHECK(env.get(keys::QUERY_STRING) == "x=a&y=%2c");
  CHECK(env.contains(keys::SCRIPT_NAME));
  CHECK(env.get(keys::SCRIPT_NAME) == "");
  CHECK(env.get(keys::version) == "1.0");
}

TEST_CASE("populate_env: decodes once, keeps slashes, strips a mount prefix", "[request_env]") {
  Env env;
  populate_env(env, {"GET", "/foo/%252c//x///y"}, {});
  CHECK(env.get(keys::PATH_INFO) == "/foo/%2c//x///y");
  Env e2;
  ConnectionInfo c;
  c.script_name = "/app";
  populate_env(e2, {"GET", "/app/x?q"}, c);
  CHECK(e2.get(keys::SCRIPT_NAME) == "/app");
  CHECK(e2.get(keys::PATH_INFO) == "/x");
  Env e3;
  populate_env(e3, {"GET", "/application"}, c);
  CHECK(e3.get(keys::SCRIPT_NAME) == "");
  CHECK(e3.get(keys::PATH_INFO) == "/application");
}

TEST_CASE("populate_env: absolute-form and bad targets", "[request_env]") {
  Env env;
  populate_env(env, {"GET", "http://example.com/p?q=1"}, {});
  CHECK(env.get(keys::PATH_INFO) == "/p");
  CHECK(env.get(keys::QUERY_STRING) == "q=1");
  Env bad;
  CHECK_THROWS_AS(populate_env(bad, {"GET", "/a%zzb"}, {}), BadRequest);
  Env nul;
  CHECK_THROWS_AS(populate_env(nul, {"GET", "/a%00b"}, {}), BadRequest);
  Env rel;
  CHECK_THROWS_AS(populate_env(rel, {"GET", "foo"}, {}), BadRequest);
}

TEST_CASE("add_header: naming, joining, content keys and dropped fields", "[request_env]") {
  Env env;
  CHECK(add_header(env, "X-Foo", "bar"));
  CHECK(add_header(env, "x-foo", "baz"));
  CHECK(add_header(env, "Content-Type", "text/plain"));
  CHECK(add_header(env, "Content-Length", "3"));
  CHECK_FALSE(add_header(env, "Proxy", "http://evil"));
  CHECK_FALSE(add_header(env, "X_Foo", "smuggled"));
  CHECK(env.get("HTTP_X_FOO") == "bar, baz");
  CHECK(env.get(keys::CONTENT_TYPE) == "text/plain");
  CHECK(env.get(keys::CONTENT_LENGTH) == "3");
  CHECK_FALSE(env.contains("HTTP_CONTENT_TYPE"));
  CHECK_FALSE(env.contains("HTTP_CONTENT_LENGTH"));
  CHECK_FALSE(env.contains("HTTP_PROXY"));
  add_header(env, "Host", "example.com:8080");
  set_server_from_host(env);
  CHECK(env.get(keys::SERVER_NAME) == "example.com");
}

TEST_CASE("header_key and header_meta_variable: one rule for names and for keys a host made", "[request_env][ENV-10]") {
  Env env;
  CHECK(header_key(env, "x-remote-user") == "HTTP_X_REMOTE_USER");
  CHECK(header_key(env, "Content-Length") == keys::CONTENT_LENGTH);
  CHECK(header_key(env, "content-type") == keys::CONTENT_TYPE);
  for (std::string_view dropped : {"X_Remote_User", "Content_Length", "content_type", "Proxy", "PROXY", "", "a.b", "a b"})
    CHECK(header_key(env, dropped).empty());
  CHECK(header_meta_variable("HTTP_X_REMOTE_USER"));
  CHECK(header_meta_variable("HTTP_COOKIE"));
  for (std::string_view dropped : {"HTTP_PROXY", "HTTP_CONTENT_LENGTH", "HTTP_CONTENT_TYPE", "HTTP_", "HTTP_x_foo",
                                   "HTTP_X.FOO", "HTTP_X-FOO", "CONTENT_LENGTH", "SERVER_NAME"})
    CHECK_FALSE(header_meta_variable(dropped));
}

TEST_CASE("add_header: repeated Cookie fields are joined with \"; \"", "[request_env][ENV-9]") {
  Env env;
  CHECK(add_header(env, "Cookie", "a=1"));
  CHECK(add_header(env, "cookie", "b=2"));
  CHECK(env.get(keys::HTTP_COOKIE) == "a=1; b=2");
}

TEST_CASE("add_header: every name length and byte maps as the per-byte rule says", "[request_env][ENV-9]") {
  // Reference: letters upper-cased, '-' → '_'; a name holding any byte other than a letter, a digit or
  // '-' is dropped (so every key is HTTP_ + [A-Z0-9_], as Lint checks).
  auto valid = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  };
  auto expected = [](std::string_view name) {
    std::string key = "HTTP_";
    for (char c : name) key += c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c == '-' ? '_' : c;
    return key;
  };
  std::uint32_t seed = 12345;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u; };
  const std::string_view alphabet = "abcxyzABCXYZ-09";
  const std::string_view refused = "_.~!`{@[\x7f\x80\xe9\xff: \t";
  Env env;
  for (std::size_t len = 1; len <= 70; ++len) {
    for (int round = 0; round < 8; ++round) {
      env.clear();
      std::string name;
      for (std::size_t i = 0; i < len; ++i) name += alphabet[(next() >> 8) % alphabet.size()];
      std::string key = expected(name);
      if (key == "HTTP_CONTENT_TYPE" || key == "HTTP_CONTENT_LENGTH" || key == "HTTP_PROXY") continue;
      INFO("name: " << name);
      REQUIRE(add_header(env, name, "v"));
      REQUIRE(env.size() == 1);
      CHECK(env.entries()[0].key == key);
      // The same name with a refused byte at any one position is dropped.
      std::string smuggled = name;
      smuggled[(next() >> 8) % len] = refused[(next() >> 8) % refused.size()];
      REQUIRE_FALSE(std::all_of(smuggled.begin(), smuggled.end(), valid));
      CHECK_FALSE(add_header(env, smuggled, "w"));
      CHECK(env.size() == 1);
    }
  }
  CHECK(add_header(env, "cOnTeNt-TyPe", "a/b"));
  CHECK(env.get(keys::CONTENT_TYPE) == "a/b");
  CHECK_FALSE(add_header(env, "pRoXy", "x"));
  CHECK_FALSE(add_header(env, "Content_Type", "x"));
  CHECK_FALSE(add_header(env, "x-lo.-", "x"));  // found by fuzz_h2_session: "HTTP_X_LO._" failed Lint
  CHECK_FALSE(add_header(env, std::string(257, 'a'), "x"));
}

TEST_CASE("valid_host: RFC 9110 uri-host and port", "[request_env]") {
  for (const char* ok : {"a", "example.com", "a:8080", "127.0.0.1", "[::1]", "[::1]:80", "EXAMPLE.com", "a.", "xn--bcher-kva.ch", "a:"})
    CHECK(valid_host(ok));
  for (const char* bad : {"", "a b", "user@a", "a/b", "a:port", "[::1", "a, b", "a\\b", ":80", "a:123456", "[zz]", "a\x01"})
    CHECK_FALSE(valid_host(bad));
}

TEST_CASE("populate_env: absolute-form needs an http(s) scheme", "[request_env]") {
  Env env;
  CHECK_THROWS_AS(populate_env(env, {"GET", "{}://a/"}, {}), BadRequest);
  Env ftp;
  CHECK_THROWS_AS(populate_env(ftp, {"GET", "ftp://a/x"}, {}), BadRequest);
  Env https;
  populate_env(https, {"GET", "HTTPS://a/x"}, {});
  CHECK(https.get(keys::PATH_INFO) == "/x");
}

TEST_CASE("populate_env: absolute-form without a path, and fragments", "[request_env]") {
  Env env;
  populate_env(env, {"GET", "http://example.com"}, {});
  CHECK(env.get(keys::PATH_INFO) == "/");
  Env q;
  populate_env(q, {"GET", "http://example.com?x=1"}, {});
  CHECK(q.get(keys::PATH_INFO) == "/");
  CHECK(q.get(keys::QUERY_STRING) == "x=1");
  Env frag;
  CHECK_THROWS_AS(populate_env(frag, {"GET", "/a?b#frag"}, {}), BadRequest);
  Env star;
  populate_env(star, {"OPTIONS", "*"}, {});
  CHECK(star.get(keys::PATH_INFO) == "");
}

TEST_CASE("populate_env: dot segments are removed once, after decoding", "[request_env][dot_segments]") {
  auto path = [](std::string_view target, std::string_view script_name = {}) {
    Env env;
    ConnectionInfo c;
    c.script_name = script_name;
    populate_env(env, {"GET", target}, c);
    return std::string(env.get(keys::SCRIPT_NAME)) + "|" + std::string(env.get(keys::PATH_INFO));
  };
  CHECK(path("/admin/users/../..") == "|/");
  CHECK(path("/admin/%2e%2e") == "|/");
  CHECK(path("/admin/%2E%2e/x") == "|/x");
  CHECK(path("/admin%2F..%2Fx") == "|/x");
  CHECK(path("/a/./b") == "|/a/b");
  CHECK(path("/a/b/.") == "|/a/b/");
  CHECK(path("/a/b/..") == "|/a/");
  CHECK(path("/a/b/../c/./d") == "|/a/c/d");
  CHECK(path("/a/.../..b/.c") == "|/a/.../..b/.c");  // not dot segments
  CHECK(path("/.") == "|/");
  CHECK(path("//a//b/./c") == "|//a//b/c");          // repeated slashes stay
  CHECK(path("/app/x/../y", "/app") == "/app|/y");
  CHECK(path("/app/../admin", "/app") == "|/admin");  // left the mount: not under /app any more
  CHECK(path("/a/b%2f..?q=/..") == "|/a/");
  Env env;
  populate_env(env, {"GET", "/admin/%2e%2e?x=/.."}, {});
  CHECK(env.get(keys::REQUEST_URI) == "/admin/%2e%2e?x=/..");  // the raw target, unchanged
  CHECK(env.get(keys::QUERY_STRING) == "x=/..");
}

TEST_CASE("populate_env: a '..' above the root or after an empty segment is a 400", "[request_env][dot_segments]") {
  for (const char* target : {"/..", "/../etc/passwd", "/a/../..", "/a/%2e%2e/%2e%2e", "/%2e%2e", "/a/..%2f..",
                             "//..", "/a//..", "/a//../b", "http://h/../x"}) {
    Env env;
    INFO(target);
    CHECK_THROWS_AS(populate_env(env, {"GET", target}, {}), BadRequest);
  }
}

TEST_CASE("remove_dot_segments and without_dot_segments", "[request_env][dot_segments]") {
  auto rds = [](std::string s) {
    s.resize(remove_dot_segments(s.data(), s.size()));
    return s;
  };
  CHECK(rds("") == "");
  CHECK(rds("/") == "/");
  CHECK(rds("/a/b/c/./../../g") == "/a/g");  // RFC 3986 §5.2.4's example
  CHECK(rds("/a/..") == "/");
  CHECK(rds("/a/../") == "/");
  CHECK(rds("relative/../x") == "relative/../x");  // only paths from the root
  CHECK_THROWS_AS(rds("/a/../../b"), BadRequest);
  CHECK(has_dot_segment("/a/."));
  CHECK(has_dot_segment("/a/../b"));
  CHECK_FALSE(has_dot_segment("/a/.b/..c/b."));
  CHECK_FALSE(has_dot_segment(""));
  Env env;
  std::string_view plain = "/x/y";
  CHECK(without_dot_segments(env, plain).data() == plain.data());  // nothing to do: the same view
  CHECK(without_dot_segments(env, "/x/%2e%2e/../y") == "/x/y");     // decoded input: '%' is a byte
  CHECK(canonical_path(env, "/x/%2e%2e/y") == "/y");
  CHECK_THROWS_AS(canonical_path(env, "/x/%00/y"), BadRequest);
  // A plain path (no '%', NUL or "/.") comes back as the same view; every other kind still goes through
  // decoding and dot-segment removal.
  for (std::string_view p : {"/", "/1k.html", "/a.b/c.", "/a/.b/..c", "", "a./b"})
    CHECK(canonical_path(env, p).data() == p.data());
  CHECK(canonical_path(env, "/a/./b") == "/a/b");
  CHECK(canonical_path(env, "/a/b/..") == "/a/");
  CHECK(canonical_path(env, "/a/%62") == "/a/b");
  CHECK(canonical_path(env, "/a/.") == "/a/");
  CHECK_THROWS_AS(canonical_path(env, std::string_view("/a\0b", 4)), BadRequest);
  CHECK_THROWS_AS(canonical_path(env, "/a/../../b"), BadRequest);
}

TEST_CASE("set_server_from_host: the name of Host; a Host without a name leaves SERVER_NAME", "[request_env]") {
  struct Case {
    std::string_view host, name;
  };
  for (Case c : {Case{"example.com:8080", "example.com"}, Case{"example.com", "example.com"},
                 Case{"[::1]:8080", "[::1]"}, Case{"[2001:db8::1]", "[2001:db8::1]"}, Case{":8080", "before"},
                 Case{"[::1", "before"}, Case{"", "before"}}) {
    INFO(c.host);
    Env env;
    env.set_view(keys::SERVER_NAME, "before");
    env.set_view(keys::SERVER_PORT, "81");
    if (!c.host.empty()) env.set_view(keys::HTTP_HOST, c.host);
    set_server_from_host(env);
    CHECK(env.get(keys::SERVER_NAME) == c.name);
    CHECK(env.get(keys::SERVER_PORT) == "81");
  }
}

TEST_CASE("set_server_from_host with a default port: SERVER_PORT from Host, else the default", "[request_env]") {
  struct Case {
    std::string_view host, name, port;
  };
  for (Case c : {Case{"example.com:8080", "example.com", "8080"}, Case{"example.com", "example.com", "443"},
                 Case{"example.com:", "example.com", "443"}, Case{"[::1]:8080", "[::1]", "8080"},
                 Case{"[::1]", "[::1]", "443"}, Case{"", "localhost", "443"}}) {
    INFO(c.host);
    Env env;
    env.set_view(keys::SERVER_NAME, "localhost");
    if (!c.host.empty()) env.set_view(keys::HTTP_HOST, c.host);
    set_server_from_host(env, "443");
    CHECK(env.get(keys::SERVER_NAME) == c.name);
    CHECK(env.get(keys::SERVER_PORT) == c.port);
  }
}

TEST_CASE("set_server_flags: the fixed boolean keys, set or replaced", "[request_env][CORE-6]") {
  Env env;
  set_server_flags(env, {.multithread = true, .run_once = true});
  for (auto [key, value] : {std::pair{keys::multithread, true}, std::pair{keys::multiprocess, false},
                            std::pair{keys::run_once, true}, std::pair{keys::nonblocking, false},
                            std::pair{keys::streaming, true}}) {
    INFO(key);
    REQUIRE(env.find(key) != nullptr);
    CHECK(env.find(key)->type() == Value::Type::boolean);
    CHECK(env.flag(key) == value);
  }
  set_server_flags(env, {.multiprocess = true});
  CHECK_FALSE(env.flag(keys::multithread));
  CHECK(env.flag(keys::multiprocess));
  CHECK_FALSE(env.flag(keys::run_once));
  CHECK(env.size() == 5);
}
