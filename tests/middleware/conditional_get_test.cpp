#include "csgi/middleware/conditional_get.hpp"

#include <catch2/catch.hpp>

#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;

namespace {

const std::string lm = "Wed, 21 Oct 2015 07:28:00 GMT";

Headers validators() {
  return {{"Content-Type", "text/plain"}, {"ETag", "\"v1\""}, {"Last-Modified", lm}, {"Cache-Control", "max-age=60"}};
}

App stack(Kind kind, const mwtest::TempDir& dir, int status = 200) {
  auto file = dir.write("body.txt", "hello world");
  return mwtest::linted(mwtest::body_app(kind, status, validators(), "hello world", file.string()),
                        [](App a) { return wrap<ConditionalGet>(a); });
}

}  // namespace

TEST_CASE("etag_matches: weak and strong comparison over lists", "[conditional_get]") {
  CHECK(etag_matches("\"a\"", "\"a\"", true));
  CHECK(etag_matches("\"x\", W/\"a\"", "\"a\"", true));
  CHECK(etag_matches("\"a\"", "W/\"a\"", true));
  CHECK_FALSE(etag_matches("W/\"a\"", "\"a\"", false));
  CHECK_FALSE(etag_matches("\"a\"", "W/\"a\"", false));
  CHECK(etag_matches("\"a\"", "\"a\"", false));
  CHECK(etag_matches("*", "\"a\"", true));
  CHECK(etag_matches("\"a,b\", \"c\"", "\"a,b\"", true));
  CHECK_FALSE(etag_matches("\"ab\"", "\"a\"", true));
  CHECK_FALSE(etag_matches("\"a\"", "", true));
}

TEST_CASE("conditional_get: 304 for every body kind, body dropped, entity headers removed", "[conditional_get]") {
  mwtest::TempDir dir;
  for (Kind k : mwtest::all_kinds()) {
    INFO("body kind " << mwtest::kind_name(k));
    auto app = stack(k, dir);
    for (auto h : std::vector<std::pair<std::string, std::string>>{
             {"If-None-Match", "\"v1\""}, {"If-None-Match", "\"zz\", W/\"v1\""}, {"If-Modified-Since", lm},
             {"If-Modified-Since", "Thu, 22 Oct 2015 07:28:00 GMT"}}) {
      auto r = testing::call(app, "GET /", {h});
      CHECK(r.status == 304);
      CHECK(r.body.empty());
      CHECK_FALSE(r.headers.has("Content-Type"));
      CHECK_FALSE(r.headers.has("Content-Length"));
      CHECK(r.header("ETag") == "\"v1\"");
      CHECK(r.header("Cache-Control") == "max-age=60");
    }
    CHECK(testing::call(app, "HEAD /", {{"If-None-Match", "\"v1\""}}).status == 304);
    auto miss = testing::call(app, "GET /", {{"If-None-Match", "\"v2\""}});
    CHECK(miss.status == 200);
    CHECK(miss.body == "hello world");
    auto older = testing::call(app, "GET /", {{"If-Modified-Since", "Tue, 20 Oct 2015 07:28:00 GMT"}});
    CHECK(older.status == 200);
    CHECK(testing::call(app, "POST /", {{"If-None-Match", "\"v1\""}}).status == 200);
    CHECK(testing::call(app, "GET /", {{"If-None-Match", "\"v2\""}, {"If-Modified-Since", lm}}).status == 200);
    CHECK(testing::call(stack(k, dir, 404), "GET /", {{"If-None-Match", "\"v1\""}}).status == 404);
  }
}

TEST_CASE("conditional_get closes a pull stream without reading it", "[conditional_get]") {
  auto reads = std::make_shared<int>(0);
  auto closed = std::make_shared<bool>(false);
  App app = [=](Env&) {
    Response r;
    r.headers = validators();
    r.body = make_stream(
        [=]() -> std::optional<std::string> {
          ++*reads;
          return std::nullopt;
        },
        [=] { *closed = true; });
    return r;
  };
  auto r = testing::call(mwtest::linted(app, [](App a) { return wrap<ConditionalGet>(a); }), "GET /",
                         {{"If-None-Match", "\"v1\""}});
  CHECK(r.status == 304);
  CHECK(*reads == 0);
  CHECK(*closed);
}
