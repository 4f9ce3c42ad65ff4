#include "csgi/core/json.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/http_error.hpp"
#include "csgi/core/request.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
using nlohmann::json;

namespace {

// Calls read_json on a POST with `body` and `content_type`; returns the value or the HttpError's status.
struct Outcome {
  json value;
  int status = 200;
  std::string reason;
};

Outcome post(std::string body, std::string content_type, JsonLimits limits = {}) {
  Outcome out;
  App app = [&](Env& env) {
    try {
      out.value = read_json(env, limits);
    } catch (const HttpError& e) {
      out.status = e.status();
      out.reason = e.what();
    }
    return Response::text(200, "");
  };
  std::vector<std::pair<std::string, std::string>> headers;
  if (!content_type.empty()) headers.emplace_back("Content-Type", content_type);
  testing::call(app, "POST /x", headers, std::move(body));
  return out;
}

}  // namespace

TEST_CASE("read_json parses a JSON body") {
  auto r = post(R"({"name":"ada","tags":["x",1,true,null]})", "application/json");
  REQUIRE(r.status == 200);
  CHECK(r.value["name"] == "ada");
  CHECK(r.value["tags"].size() == 4);
  CHECK(post("[1,2]", "Application/JSON; charset=utf-8").value == json::array({1, 2}));
  CHECK(post(R"({"op":"x"})", "application/merge-patch+json").status == 200);
}

TEST_CASE("read_json answers 415 for a body that is not declared as JSON") {
  auto r = post("{}", "text/plain");
  CHECK(r.status == 415);
  CHECK_THAT(r.reason, Catch::Contains("text/plain"));
  CHECK(post("{}", "").status == 415);
  CHECK(post("{}", "application/x-www-form-urlencoded").status == 415);
  CHECK(post("{}", "application/jsonx").status == 415);
  CHECK(post("{}", "application/+json").status == 415);
}

TEST_CASE("read_json answers 400 with the parser's reason for malformed JSON") {
  for (const char* bad : {"", "{", "{x:1}", "[1,]", "{\"a\":1}{", "nul", "\"\\x\""}) {
    INFO(bad);
    auto r = post(bad, "application/json");
    CHECK(r.status == 400);
    CHECK_THAT(r.reason, Catch::StartsWith("malformed JSON: "));
    CHECK_THAT(r.reason, !Catch::Contains("[json.exception"));
  }
  // JSON text is UTF-8: an invalid byte in a string is malformed.
  CHECK(post("[\"a\xff\"]", "application/json").status == 400);
}

TEST_CASE("read_json answers 400 with the reason for a number too large for a double") {
  for (const char* big : {"[1e999999999]", "1e400", "{\"n\":-1e309}"}) {
    INFO(big);
    auto r = post(big, "application/json");
    CHECK(r.status == 400);
    CHECK_THAT(r.reason, Catch::StartsWith("malformed JSON: "));
    CHECK_THAT(r.reason, Catch::Contains("number overflow"));
    CHECK_THAT(r.reason, !Catch::Contains("[json.exception"));
  }
  // Large but finite numbers and big integers still parse.
  CHECK(post("[1e308, 18446744073709551615, 99999999999999999999999]", "application/json").status == 200);
}

TEST_CASE("read_json refuses a body over its size limit with 413") {
  JsonLimits small;
  small.max_bytes = 8;
  CHECK(post("[1,2,3]", "application/json", small).status == 200);
  auto r = post("[1,2,3,4,5]", "application/json", small);
  CHECK(r.status == 413);
  // csgix.body_limit caps it too.
  App app = [](Env& env) {
    env.set_int(keys::x::request_body_limit, 4);
    return json_response(200, read_json(env));
  };
  try {
    testing::call(app, "POST /", {{"Content-Type", "application/json"}}, "[1,2,3]");
    FAIL("no 413");
  } catch (const HttpError& e) {
    CHECK(e.status() == 413);
  }
}

TEST_CASE("read_json refuses nesting deeper than max_depth without deep recursion") {
  JsonLimits lim;
  lim.max_depth = 3;
  CHECK(post("[[[1]]]", "application/json", lim).status == 200);
  CHECK(post(R"({"a":{"b":[1]}})", "application/json", lim).status == 200);
  auto r = post("[[[[1]]]]", "application/json", lim);
  CHECK(r.status == 400);
  CHECK_THAT(r.reason, Catch::Contains("deeper than 3"));
  CHECK(post(R"({"a":{"b":{"c":{}}}})", "application/json", lim).status == 400);
  // The default limit: half a million '[' is refused, not parsed into a tree.
  CHECK(post(std::string(500000, '['), "application/json").status == 400);
  CHECK(post(std::string(128, '[') + std::string(128, ']'), "application/json").status == 200);
  CHECK(post(std::string(129, '[') + std::string(129, ']'), "application/json").status == 400);
}

TEST_CASE("read_json leaves the body readable through Request::content") {
  App app = [](Env& env) {
    json j = read_json(env);
    return Response::text(200, std::string(Request(env).content()) + "|" + j["a"].dump());
  };
  auto res = testing::call(app, "POST /", {{"Content-Type", "application/json"}}, R"({"a": 5})");
  CHECK(res.body == R"({"a": 5}|5)");
}

TEST_CASE("json_response serialises with the library: escapes, UTF-8, Content-Type") {
  auto res = testing::drain(json_response(201, {{"q", "say \"hi\"\\\n\x01"}, {"n", 1.5}, {"u", "é"}}));
  CHECK(res.status == 201);
  CHECK(res.header("Content-Type") == "application/json");
  CHECK(json::parse(res.body) == json({{"q", "say \"hi\"\\\n\x01"}, {"n", 1.5}, {"u", "é"}}));
  CHECK_THAT(res.body, Catch::Contains(R"(say \"hi\"\\\n\u0001)"));
  // Bytes that are not UTF-8 become U+FFFD: the output is always valid JSON.
  auto bad = testing::drain(json_response(200, json::array({std::string("a\xff" "b")})));
  CHECK(bad.body == "[\"a\xEF\xBF\xBD" "b\"]");
  CHECK_NOTHROW(json::parse(bad.body));
}

TEST_CASE("problem_response: an RFC 9457 document with the reason phrase as title") {
  Response r = problem_response(422, "name: required");
  CHECK(r.status == 422);
  CHECK(r.headers.get("Content-Type") == "application/problem+json");
  CHECK(json::parse(std::get<std::string>(r.body)) ==
        json{{"type", "about:blank"}, {"title", "Unprocessable Content"}, {"status", 422}, {"detail", "name: required"}});
  CHECK(json::parse(std::get<std::string>(problem_response(404).body)) ==
        json{{"type", "about:blank"}, {"title", "Not Found"}, {"status", 404}});
  // Invalid UTF-8 in a detail still makes valid JSON.
  CHECK_NOTHROW(json::parse(std::get<std::string>(problem_response(400, "bad \xff byte").body)));
  Response none = problem_response(304);
  CHECK(none.status == 304);
  CHECK_FALSE(none.headers.has("Content-Type"));
}

TEST_CASE("prefers_problem_json and error_response follow Accept") {
  CHECK(prefers_problem_json("application/json"));
  CHECK(prefers_problem_json("application/problem+json"));
  CHECK(prefers_problem_json("Application/JSON; charset=utf-8"));
  CHECK(prefers_problem_json("text/plain;q=0.5, application/json"));
  CHECK(prefers_problem_json("application/*"));
  CHECK_FALSE(prefers_problem_json(""));
  CHECK_FALSE(prefers_problem_json("*/*"));
  CHECK_FALSE(prefers_problem_json("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"));
  CHECK_FALSE(prefers_problem_json("application/json;q=0"));
  CHECK_FALSE(prefers_problem_json("application/json;q=0.5, text/*"));
  CHECK_FALSE(prefers_problem_json("application/json;q=bogus"));
  Env env;
  CHECK(error_response(env, 404, "x").headers.get("Content-Type") == "text/plain; charset=utf-8");
  env.set(keys::HTTP_ACCEPT, "application/json");
  CHECK(error_response(env, 404, "x").headers.get("Content-Type") == "application/problem+json");
}
