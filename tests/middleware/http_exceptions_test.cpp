#include "csgi/middleware/http_exceptions.hpp"

#include <catch2/catch.hpp>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

TEST_CASE("http_exceptions: HttpError becomes a response; 4xx message shown, 5xx hidden and logged") {
  App nf = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw HttpError(404, "no such page"); }));
  auto res = testing::call(nf, "GET /");
  CHECK(res.status == 404);
  CHECK(res.body.find("no such page") != std::string::npos);
  App se = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw HttpError(503, "db down at 10.0.0.5"); }));
  res = testing::call(se, "GET /");
  CHECK(res.status == 503);
  CHECK(res.body.find("10.0.0.5") == std::string::npos);
  CHECK(res.errors.find("db down at 10.0.0.5") != std::string::npos);
  App br = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw BadRequest("bad query"); }));
  CHECK(testing::call(br, "GET /").status == 400);
}

TEST_CASE("http_exceptions: HttpException carries headers and body; redirect") {
  App r = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw mw::HttpException::redirect("/login", 303); }));
  auto res = testing::call(r, "GET /");
  CHECK(res.status == 303);
  CHECK(res.header("Location") == "/login");
  App m = lint(wrap<mw::HttpExceptions>([](Env&) -> Response {
    throw mw::HttpException(405, "", {{"Allow", "GET, HEAD"}}, std::string("{\"e\":1}"));
  }));
  res = testing::call(m, "POST /", {}, "x");
  CHECK(res.status == 405);
  CHECK(res.header("Allow") == "GET, HEAD");
  CHECK(res.body == "{\"e\":1}");
  App nm = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw mw::HttpException(304, "", {{"ETag", "\"a\""}}); }));
  res = testing::call(nm, "GET /");
  CHECK(res.status == 304);
  CHECK(res.body.empty());
  CHECK_FALSE(res.headers.has("Content-Type"));
  CHECK_THROWS_AS(mw::HttpException::redirect("/x", 200), std::invalid_argument);
  CHECK_THROWS_AS(mw::HttpException::redirect("/x\r\nSet-Cookie: a=b"), std::invalid_argument);
}

TEST_CASE("http_exceptions: other exceptions pass up; responses of every kind pass through") {
  App boom = wrap<mw::HttpExceptions>([](Env&) -> Response { throw std::runtime_error("boom"); });
  CHECK_THROWS_AS(testing::call(boom, "GET /"), std::runtime_error);
  for (Kind k : all_kinds) {
    INFO(name(k));
    auto res = testing::call(lint(wrap<mw::HttpExceptions>(answer(k, 201, "made"))), "GET /");
    CHECK(res.status == 201);
    CHECK(res.body == "made");
  }
}

TEST_CASE("http_exceptions: thrown from a delayed response before it answers; after start it passes up") {
  App before = lint(wrap<mw::HttpExceptions>([](Env&) {
    return Response::delayed([](Responder) { throw HttpError(403, "nope"); });
  }));
  auto res = testing::call(before, "GET /");
  CHECK(res.status == 403);
  App after = wrap<mw::HttpExceptions>([](Env&) {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      w->write("partial");
      throw HttpError(500, "late");
    });
  });
  CHECK_THROWS_AS(testing::call(after, "GET /"), HttpError);
}
