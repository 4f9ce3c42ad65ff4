#include "csgi/middleware/content_length.hpp"

#include <catch2/catch.hpp>

#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;

TEST_CASE("content_length: added when the size is known, for every body kind", "[content_length]") {
  mwtest::TempDir dir;
  auto file = dir.write("body.txt", "twelve bytes");
  for (Kind k : mwtest::all_kinds()) {
    INFO("body kind " << mwtest::kind_name(k));
    auto app = mwtest::linted(mwtest::body_app(k, 200, {{"Content-Type", "text/plain"}}, "twelve bytes", file.string()),
                              [](App a) { return wrap<ContentLength>(a); });
    auto r = testing::call(app, "GET /");
    CHECK(r.body == "twelve bytes");
    bool known = k == Kind::string || k == Kind::shared || k == Kind::file || k == Kind::delayed_complete;
    CHECK(r.headers.has("Content-Length") == known);
    if (known) CHECK(r.header("Content-Length") == "12");
  }
}

TEST_CASE("content_length: leaves existing lengths and bodiless statuses alone", "[content_length]") {
  App given = [](Env&) {
    Response r = Response::text(200, "abc");
    r.headers.add("Content-Length", "3");
    return r;
  };
  auto r = testing::call(mwtest::linted(given, [](App a) { return wrap<ContentLength>(a); }), "GET /");
  CHECK(r.headers.get_all("Content-Length").size() == 1);
  App nobody = [](Env&) {
    Response r;
    r.status = 204;
    return r;
  };
  CHECK_FALSE(testing::call(mwtest::linted(nobody, [](App a) { return wrap<ContentLength>(a); }), "GET /").headers.has("Content-Length"));
  App empty = [](Env&) { return Response::text(200, ""); };
  CHECK(testing::call(mwtest::linted(empty, [](App a) { return wrap<ContentLength>(a); }), "GET /").header("Content-Length") == "0");
}
