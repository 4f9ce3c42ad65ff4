#include "csgi/core/url_map.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "csgi/core/http_error.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

namespace {
App named(std::string name) {
  return [name](Env& env) {
    return Response::text(200, name + " " + std::string(env.get(keys::SCRIPT_NAME)) + " " + std::string(env.get(keys::PATH_INFO)));
  };
}
App make_map() {
  auto m = std::make_shared<UrlMap>();
  m->map("/", named("root"));
  m->map("/foo", named("foo"));
  m->map("/foo/bar", named("foobar"));
  m->map("/baz/", named("baz"));
  m->map("http://example.com/", named("host"));
  m->map("http://api.example.com/v1", named("apihost"));
  return [m](Env& env) { return (*m)(env); };
}
}  // namespace

TEST_CASE("UrlMap: longest path first, prefix only on a / boundary", "[url_map]") {
  App app = make_map();
  CHECK(testing::call(app, "GET /foo").body == "foo /foo ");
  CHECK(testing::call(app, "GET /foo/").body == "foo /foo /");
  CHECK(testing::call(app, "GET /foo/x").body == "foo /foo /x");
  CHECK(testing::call(app, "GET /foo/bar/x").body == "foobar /foo/bar /x");
  CHECK(testing::call(app, "GET /foobar").body == "root  /foobar");
  CHECK(testing::call(app, "GET /baz").body == "baz /baz ");
  CHECK(testing::call(app, "GET /").body == "root  /");
}

TEST_CASE("UrlMap: host entries win, longest host first, port ignored", "[url_map]") {
  App app = make_map();
  CHECK(testing::call(app, "GET /foo", {{"Host", "example.com"}}).body == "host  /foo");
  CHECK(testing::call(app, "GET /v1/users", {{"Host", "API.example.com:8080"}}).body == "apihost /v1 /users");
  CHECK(testing::call(app, "GET /v2", {{"Host", "api.example.com"}}).body == "root  /v2");
  CHECK(testing::call(app, "GET /foo", {{"Host", "other.org"}}).body == "foo /foo ");
}

TEST_CASE("UrlMap: existing SCRIPT_NAME is extended, and both keys are restored", "[url_map]") {
  App app = make_map();
  testing::Options opt;
  opt.script_name = "/app";
  std::string after;
  opt.inspect = [&](const Env& env) { after = std::string(env.get(keys::SCRIPT_NAME)) + "|" + std::string(env.get(keys::PATH_INFO)); };
  CHECK(testing::call(app, "GET /app/foo/x", {}, "", opt).body == "foo /app/foo /x");
  CHECK(after == "/app|/foo/x");
}

TEST_CASE("UrlMap: no match is a 404", "[url_map]") {
  UrlMap m;
  m.map("/only", named("only"));
  App app = [&](Env& env) { return m(env); };
  CHECK(testing::call(app, "GET /other").status == 404);
  CHECK(testing::call(app, "GET /onlyx").status == 404);
  CHECK(testing::call(app, "GET /only").status == 200);
}

TEST_CASE("UrlMap: bad locations are rejected", "[url_map]") {
  UrlMap m;
  CHECK_THROWS_AS(m.map("foo", named("x")), std::invalid_argument);
  CHECK_THROWS_AS(m.map("ftp://x/", named("x")), std::invalid_argument);
}

TEST_CASE("UrlMap: dot segments never reach a mounted app", "[url_map][dot_segments]") {
  App app = make_map();
  CHECK(testing::call(app, "GET /foo/bar/../..").body == "root  /");
  CHECK(testing::call(app, "GET /foo/%2e%2e").body == "root  /");
  CHECK(testing::call(app, "GET /foo/%2e%2e/baz").body == "baz /baz ");
  CHECK(testing::call(app, "GET /x/../foo/./x").body == "foo /foo /x");
  CHECK_THROWS_AS(testing::call(app, "GET /foo/%2e%2e/%2e%2e"), BadRequest);
  // A PATH_INFO that a layer above set with dot segments is routed on its canonical form, and restored.
  testing::Options o;
  o.setup = [](Env& env) { env.set(keys::PATH_INFO, "/foo/x/../.."); };
  std::string after;
  o.inspect = [&](const Env& env) { after = std::string(env.get(keys::PATH_INFO)); };
  CHECK(testing::call(app, "GET /", {}, "", o).body == "root  /");
  CHECK(after == "/foo/x/../..");
  o.setup = [](Env& env) { env.set(keys::PATH_INFO, "/baz/../foo/bar/./y"); };
  CHECK(testing::call(app, "GET /", {}, "", o).body == "foobar /foo/bar /y");
  o.setup = [](Env& env) { env.set(keys::PATH_INFO, "/foo/../../foo"); };
  CHECK_THROWS_AS(testing::call(app, "GET /", {}, "", o), BadRequest);
}
