#include "csgi/core/response_builder.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/request.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

TEST_CASE("ResponseBuilder: status, headers, body", "[response_builder]") {
  ResponseBuilder rb(201);
  rb.content_type("application/json").header("X-A", "1").header("X-A", "2").set_header("X-B", "b");
  rb.body("{\"ok\":");
  rb.write("true}");
  CHECK(rb.status() == 201);
  Response r = rb.finalize();
  CHECK(r.status == 201);
  CHECK(r.headers.get("Content-Type") == "application/json");
  CHECK(r.headers.get_all("X-A") == std::vector<std::string_view>{"1", "2"});
  CHECK(r.headers.get("x-b") == "b");
  REQUIRE(std::holds_alternative<std::string>(r.body));
  CHECK(std::get<std::string>(r.body) == "{\"ok\":true}");
  // The builder is reset.
  CHECK(rb.status() == 200);
  CHECK(rb.headers().empty());
}

TEST_CASE("ResponseBuilder: default Content-Type only where a body is allowed", "[response_builder]") {
  CHECK(ResponseBuilder().body("x").finalize().headers.get("Content-Type") == "text/plain; charset=utf-8");
  CHECK_FALSE(ResponseBuilder(204).finalize().headers.has("Content-Type"));
  CHECK_FALSE(ResponseBuilder(304).finalize().headers.has("Content-Type"));
  CHECK(ResponseBuilder().content_type("text/html").finalize().headers.get_all("Content-Type").size() == 1);
}

TEST_CASE("ResponseBuilder: other body kinds pass through; write() refuses them", "[response_builder]") {
  ResponseBuilder rb;
  rb.body(Body(make_stream([n = 0]() mutable -> std::optional<std::string> {
    return n++ < 2 ? std::optional<std::string>("c") : std::nullopt;
  })));
  CHECK_THROWS_AS(rb.write("x"), std::logic_error);
  auto res = testing::drain(rb.content_type("text/plain").finalize());
  CHECK(res.body == "cc");
  CHECK(res.streamed);
  ResponseBuilder shared;
  shared.body(Body(std::make_shared<const std::string>("ab")));
  shared.write("c");
  CHECK(std::get<std::string>(shared.finalize().body) == "abc");
}

TEST_CASE("ResponseBuilder: cookies become Set-Cookie fields, in order", "[response_builder]") {
  ResponseBuilder rb;
  SetCookie sid("sid", "a b");
  sid.path = "/";
  sid.http_only = true;
  sid.same_site = SameSite::lax;
  rb.cookie(sid).cookie("theme", "dark").expire_cookie("old");
  Response r = rb.finalize();
  auto all = r.headers.get_all("Set-Cookie");
  REQUIRE(all.size() == 3);
  CHECK(all[0] == "sid=a%20b; Path=/; HttpOnly; SameSite=Lax");
  CHECK(all[1] == "theme=dark");
  CHECK(all[2] == "old=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0");
  CHECK_THROWS_AS(ResponseBuilder().cookie("bad name", "v"), std::invalid_argument);
}

TEST_CASE("ResponseBuilder: redirects", "[response_builder]") {
  Response r = ResponseBuilder().redirect("/login?next=%2F").finalize();
  CHECK(r.status == 302);
  CHECK(r.headers.get("Location") == "/login?next=%2F");
  for (int code : {301, 302, 303, 307, 308}) {
    Response x = ResponseBuilder().location("/old").redirect("https://example.com/new", code).finalize();
    CHECK(x.status == code);
    CHECK(x.headers.get_all("Location").size() == 1);
    CHECK(x.headers.get("Location") == "https://example.com/new");
  }
  CHECK_THROWS_AS(ResponseBuilder().redirect("/x", 200), std::invalid_argument);
  CHECK_THROWS_AS(ResponseBuilder().redirect("/x", 304), std::invalid_argument);
  CHECK_THROWS_AS(ResponseBuilder().redirect("/x\r\nSet-Cookie: evil=1"), std::invalid_argument);
  CHECK_THROWS_AS(ResponseBuilder().redirect(""), std::invalid_argument);
  CHECK_THROWS_AS(ResponseBuilder().redirect("/a b"), std::invalid_argument);
}

TEST_CASE("ResponseBuilder: header injection and bad names are refused", "[response_builder]") {
  ResponseBuilder rb;
  CHECK_THROWS_AS(rb.header("X-A", "v\r\nX-Evil: 1"), std::invalid_argument);
  CHECK_THROWS_AS(rb.header("X-A", std::string("v\0w", 3)), std::invalid_argument);
  CHECK_THROWS_AS(rb.header("Bad Name", "v"), std::invalid_argument);
  CHECK_THROWS_AS(rb.header("", "v"), std::invalid_argument);
  CHECK_THROWS_AS(rb.set_header("X:Y", "v"), std::invalid_argument);
  CHECK_THROWS_AS(ResponseBuilder(99), std::invalid_argument);
  CHECK_THROWS_AS(rb.status(1000), std::invalid_argument);
  CHECK(rb.headers().empty());
}

TEST_CASE("ResponseBuilder and Request in an app: a login round trip", "[response_builder]") {
  App app = [](Env& env) {
    Request req(env);
    ResponseBuilder rb;
    if (req.method() == "POST") {
      SetCookie c("user", std::string(req.param("name").value_or("")));
      c.path = "/";
      return rb.cookie(c).redirect(req.base() + "welcome", 303).finalize();
    }
    rb.content_type("text/plain").body("hello " + std::string(req.cookie("user").value_or("nobody")));
    return rb.finalize();
  };
  auto post = testing::call(app, "POST /login", {{"Content-Type", "application/x-www-form-urlencoded"}}, "name=J%C3%B6+D");
  CHECK(post.status == 303);
  CHECK(post.header("Location") == "http://localhost/welcome");
  std::string set = post.header("Set-Cookie");
  CHECK(set == "user=J%C3%B6%20D; Path=/");
  auto get = testing::call(app, "GET /welcome", {{"Cookie", set.substr(0, set.find(';'))}});
  CHECK(get.body == "hello J\xC3\xB6 D");
}
