#include "csgi/middleware/router.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/builder.hpp"
#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {

// An app answering "<tag> <router.route> name=value..." for the placeholders it was given.
App named(std::string tag, std::vector<std::string> params = {}) {
  return [tag, params](Env& env) {
    std::string body = tag + " " + std::string(env.get(keys::router::route));
    for (const auto& p : params) body += " " + p + "=" + std::string(mw::route_param(env, p));
    return Response::text(200, body);
  };
}

App users() {
  return lint(mw::Router()
                  .get("/", named("root"))
                  .get("/users", named("list"))
                  .post("/users", named("create"))
                  .get("/users/{id:int}", named("show", {"id"}))
                  .route({"PUT", "PATCH"}, "/users/{id:int}", named("update", {"id"}))
                  .del("/users/{id:int}", named("delete", {"id"}))
                  .get("/users/{name}", named("by-name", {"name"}))
                  .get("/users/{id:int}/posts/{post}", named("post", {"id", "post"}))
                  .get("/files/{rest:path}", named("file", {"rest"}))
                  .any("/any", named("any")));
}

}  // namespace

TEST_CASE("router: dispatches on method and path, placeholders into router.param.<name>") {
  App app = users();
  CHECK(testing::call(app, "GET /").body == "root /");
  CHECK(testing::call(app, "GET /users").body == "list /users");
  CHECK(testing::call(app, "POST /users").body == "create /users");
  CHECK(testing::call(app, "GET /users/42").body == "show /users/{id:int} id=42");
  CHECK(testing::call(app, "PATCH /users/42").body == "update /users/{id:int} id=42");
  CHECK(testing::call(app, "DELETE /users/7").body == "delete /users/{id:int} id=7");
  CHECK(testing::call(app, "GET /users/ada").body == "by-name /users/{name} name=ada");
  CHECK(testing::call(app, "GET /users/42/posts/hello%20world").body ==
        "post /users/{id:int}/posts/{post} id=42 post=hello world");
  CHECK(testing::call(app, "GET /files/a/b/c.txt").body == "file /files/{rest:path} rest=a/b/c.txt");
  CHECK(testing::call(app, "GET /files/").body == "file /files/{rest:path} rest=");
  CHECK(testing::call(app, "BREW /any").body == "any /any");
  // The placeholder keys are in the env for the app and stay after it returns.
  testing::Options o;
  std::string seen;
  o.inspect = [&](const Env& env) {
    seen = std::string(env.get("router.param.id")) + "|" + std::string(env.get("router.route"));
  };
  testing::call(app, "GET /users/5", {}, "", o);
  CHECK(seen == "5|/users/{id:int}");
}

TEST_CASE("router: 404 when no pattern matches; segments match whole, int is digits only") {
  App app = users();
  for (const char* miss : {"GET /nope", "GET /users/", "GET /users/42/", "GET /users/42/posts", "GET /files",
                           "GET /userss", "GET //users"}) {
    INFO(miss);
    CHECK(testing::call(app, miss).status == 404);
  }
  // "-1", "1.5" and 19 digits are not {id:int}: they fall to {name}.
  CHECK(testing::call(app, "GET /users/-1").body == "by-name /users/{name} name=-1");
  CHECK(testing::call(app, "GET /users/1234567890123456789").body == "by-name /users/{name} name=1234567890123456789");
  CHECK(testing::call(app, "GET /users/123456789012345678").body == "show /users/{id:int} id=123456789012345678");
}

TEST_CASE("router: 405 with Allow listing the methods of the matching routes; HEAD served by GET") {
  App app = users();
  auto res = testing::call(app, "POST /users/42");
  CHECK(res.status == 405);
  CHECK(res.header("Allow") == "GET, HEAD, PUT, PATCH, DELETE");
  auto del = testing::call(app, "DELETE /users");
  CHECK(del.status == 405);
  CHECK(del.header("Allow") == "GET, HEAD, POST");
  // /users/ada matches only {name} (GET): the int routes do not count.
  CHECK(testing::call(app, "PUT /users/ada").header("Allow") == "GET, HEAD");
  CHECK(testing::call(app, "POST /users/42/posts/x").header("Allow") == "GET, HEAD");
  auto head = testing::call(app, "HEAD /users/42");
  CHECK(head.status == 200);
  CHECK(head.header("Content-Type") == "text/plain; charset=utf-8");
  // Methods compare case-sensitively.
  CHECK(testing::call(app, "get /users").status == 405);
  // An explicit HEAD route added first answers HEAD itself.
  App own = mw::Router()
                .route({"HEAD"}, "/x", [](Env&) { return Response{204, {}, std::string()}; })
                .get("/x", named("get"));
  CHECK(testing::call(own, "HEAD /x").status == 204);
  CHECK(testing::call(own, "GET /x").body == "get /x");
}

TEST_CASE("router: an empty PATH_INFO is /; mounted under a prefix, SCRIPT_NAME and PATH_INFO untouched") {
  mw::Router api;
  api.get("/", named("index")).get("/items/{id}", [](Env& env) {
    return Response::text(200, std::string(env.get(keys::SCRIPT_NAME)) + "|" + std::string(env.get(keys::PATH_INFO)) +
                                   "|" + std::string(mw::route_param(env, "id")));
  });
  App app = lint(Builder().mount("/api", api).build());
  CHECK(testing::call(app, "GET /api").body == "index /");
  CHECK(testing::call(app, "GET /api/").body == "index /");
  CHECK(testing::call(app, "GET /api/items/9").body == "/api|/items/9|9");
  CHECK(testing::call(app, "GET /other").status == 404);
}

TEST_CASE("router: bad routes throw at configuration time") {
  App ok = named("x");
  auto bad = [&](std::string_view pattern) {
    INFO(pattern);
    CHECK_THROWS_AS(mw::Router().get(pattern, ok), std::invalid_argument);
  };
  for (const char* p : {"", "users", "/users/{id", "/users/{}", "/users/{1d}", "/users/x{id}", "/users/{id}x",
                        "/a/{id:float}", "/a/{rest:path}/b", "/a/{x}/{x}", "/a/{x}/{x:int}", "/a}"})
    bad(p);
  CHECK_THROWS_AS(mw::Router().get("/", App{}), std::invalid_argument);
  CHECK_THROWS_AS(mw::Router().route({"GE T"}, "/", ok), std::invalid_argument);
  CHECK_THROWS_AS(mw::Router().route(std::vector<std::string>{}, "/", ok), std::invalid_argument);
  CHECK_THROWS_AS(mw::Router().get("/a", ok).route({"POST", "GET"}, "/a", ok), std::invalid_argument);
  CHECK_NOTHROW(mw::Router().get("/a", ok).post("/a", ok).get("/a/", ok).get("/{name}", ok));
}
