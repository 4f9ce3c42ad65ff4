#include "csgi/middleware/http_exceptions.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

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

TEST_CASE("http_exceptions: a client that prefers JSON gets an RFC 9457 problem document") {
  App nf = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw HttpError(404, "no such \"page\""); }));
  for (const char* accept : {"application/json", "application/problem+json", "application/json, */*;q=0.5",
                             "text/plain;q=0.2, application/json"}) {
    INFO(accept);
    auto res = testing::call(nf, "GET /", {{"Accept", accept}});
    CHECK(res.status == 404);
    CHECK(res.header("Content-Type") == "application/problem+json");
    auto doc = nlohmann::json::parse(res.body);
    CHECK(doc == nlohmann::json{{"type", "about:blank"}, {"title", "Not Found"}, {"status", 404},
                                {"detail", "no such \"page\""}});
  }
  // No Accept, */*, a browser's list, text first: text/plain as before.
  for (const char* accept : {"", "*/*", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
                             "text/plain, application/json;q=0.5", "application/json;q=0"}) {
    INFO(accept);
    std::vector<std::pair<std::string, std::string>> h;
    if (*accept) h.emplace_back("Accept", accept);
    auto res = testing::call(nf, "GET /", h);
    CHECK(res.status == 404);
    CHECK(res.header("Content-Type") == "text/plain; charset=utf-8");
    CHECK(res.body == "404 Not Found: no such \"page\"\n");
  }
  // 5xx: the message stays in csgi.errors, the document has no detail.
  App se = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw HttpError(503, "db down at 10.0.0.5"); }));
  auto res = testing::call(se, "GET /", {{"Accept", "application/json"}});
  CHECK(res.status == 503);
  CHECK(nlohmann::json::parse(res.body) ==
        nlohmann::json{{"type", "about:blank"}, {"title", "Service Unavailable"}, {"status", 503}});
  CHECK(res.errors.find("db down at 10.0.0.5") != std::string::npos);
  // A body of the exception's own is kept; a bodiless status stays bodiless.
  App own = lint(wrap<mw::HttpExceptions>([](Env&) -> Response {
    throw mw::HttpException(409, "", {{"Content-Type", "application/json"}}, std::string(R"({"error":"busy"})"));
  }));
  res = testing::call(own, "GET /", {{"Accept", "application/json"}});
  CHECK(res.body == R"({"error":"busy"})");
  CHECK(res.header("Content-Type") == "application/json");
  App nm = lint(wrap<mw::HttpExceptions>([](Env&) -> Response { throw mw::HttpException(304, "", {{"ETag", "\"a\""}}); }));
  res = testing::call(nm, "GET /", {{"Accept", "application/json"}});
  CHECK(res.status == 304);
  CHECK(res.body.empty());
  CHECK_FALSE(res.headers.has("Content-Type"));
}

TEST_CASE("http_exceptions: the format option overrides Accept, for delayed responses too") {
  auto thrower = [](Env&) -> Response { throw BadRequest("bad query"); };
  mw::HttpExceptionsOptions json;
  json.format = mw::ErrorFormat::problem_json;
  auto res = testing::call(lint(wrap<mw::HttpExceptions>(thrower, json)), "GET /", {{"Accept", "text/plain"}});
  CHECK(res.status == 400);
  CHECK(res.header("Content-Type") == "application/problem+json");
  CHECK(nlohmann::json::parse(res.body).at("detail") == "bad query");
  mw::HttpExceptionsOptions text;
  text.format = mw::ErrorFormat::text;
  res = testing::call(lint(wrap<mw::HttpExceptions>(thrower, text)), "GET /", {{"Accept", "application/json"}});
  CHECK(res.header("Content-Type") == "text/plain; charset=utf-8");
  CHECK(res.body == "400 Bad Request: bad query\n");
  App delayed = lint(wrap<mw::HttpExceptions>([](Env&) {
    return Response::delayed([](Responder) { throw HttpError(403, "nope"); });
  }));
  res = testing::call(delayed, "GET /", {{"Accept", "application/problem+json"}});
  CHECK(res.status == 403);
  CHECK(res.header("Content-Type") == "application/problem+json");
  CHECK(nlohmann::json::parse(res.body).at("title") == "Forbidden");
}
