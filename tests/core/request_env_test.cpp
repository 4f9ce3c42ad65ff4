#include "csgi/core/request_env.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/http_error.hpp"

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
  Connection c;
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
