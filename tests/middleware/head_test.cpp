#include "csgi/middleware/head.hpp"

#include <catch2/catch.hpp>

#include "csgi/middleware/content_length.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;

TEST_CASE("head: drops the body of every kind and keeps the headers", "[head]") {
  mwtest::TempDir dir;
  auto file = dir.write("body.txt", "the body");
  for (Kind k : mwtest::all_kinds()) {
    INFO("body kind " << mwtest::kind_name(k));
    auto inner = mwtest::body_app(k, 200, {{"Content-Type", "text/plain"}, {"X-Kept", "yes"}}, "the body", file.string());
    // head outside content_length: HEAD reports the GET length.
    auto app = mwtest::lint(wrap<Head>(mwtest::lint(wrap<ContentLength>(mwtest::lint(inner)))));
    auto r = testing::call(app, "HEAD /");
    CHECK(r.status == 200);
    CHECK(r.body.empty());
    CHECK(r.header("X-Kept") == "yes");
    bool known = k == Kind::string || k == Kind::shared || k == Kind::file || k == Kind::delayed_complete;
    if (known) CHECK(r.header("Content-Length") == "8");
    CHECK(testing::call(app, "GET /").body == "the body");
  }
}

TEST_CASE("head closes a pull stream without reading it", "[head]") {
  auto reads = std::make_shared<int>(0);
  auto closed = std::make_shared<bool>(false);
  App app = [=](Env&) {
    Response r;
    r.headers.add("Content-Type", "text/plain");
    r.body = make_stream(
        [=]() -> std::optional<std::string> {
          ++*reads;
          return std::string("chunk");
        },
        [=] { *closed = true; });
    return r;
  };
  auto r = testing::call(mwtest::linted(app, [](App a) { return wrap<Head>(a); }), "HEAD /");
  CHECK(r.body.empty());
  CHECK(*reads == 0);
  CHECK(*closed);
}
