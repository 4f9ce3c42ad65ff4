#include "csgi/middleware/url_map.hpp"

#include <catch2/catch.hpp>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
App where(std::string tag) {
  return lint([tag](Env& env) {
    return Response::text(200, tag + " " + std::string(env.get("SCRIPT_NAME")) + " " + std::string(env.get("PATH_INFO")));
  });
}
}  // namespace

TEST_CASE("url_map: longest prefix on '/' boundaries; SCRIPT_NAME/PATH_INFO moved and restored; 404") {
  App app = lint(mw::UrlMap{{"/", where("root")}, {"/foo", where("foo")}, {"/foo/bar", where("bar")},
                            {"http://example.com/foo", where("host")}});
  CHECK(testing::call(app, "GET /foo/bar/baz").body == "bar /foo/bar /baz");
  CHECK(testing::call(app, "GET /foo").body == "foo /foo ");
  CHECK(testing::call(app, "GET /foobar").body == "root  /foobar");
  CHECK(testing::call(app, "GET /foo/x", {{"Host", "example.com"}}).body == "host /foo /x");
  App none = lint(mw::UrlMap{{"/a", where("a")}});
  CHECK(testing::call(none, "GET /b").status == 404);
  CHECK_THROWS_AS(mw::UrlMap({{"nope", where("x")}}), std::invalid_argument);
  CHECK_THROWS_AS(mw::UrlMap({{"/x", App{}}}), std::invalid_argument);
}
