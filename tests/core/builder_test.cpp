#include "csgi/core/builder.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "csgi/core/on_response.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

namespace {
/// Appends its tag to "trace" on the way in and to X-Trace on the way out.
class Tag {
public:
  Tag(App next, std::string tag) : next_(std::move(next)), tag_(std::move(tag)) {}
  Response operator()(Env& env) {
    env.set("trace", std::string(env.get("trace")) + tag_);
    Response r = next_(env);
    r.headers.set("X-Trace", std::string(r.headers.get("X-Trace").value_or("")) + tag_);
    return r;
  }

private:
  App next_;
  std::string tag_;
};

App trace_app = [](Env& env) { return Response::text(200, std::string(env.get("trace"))); };
}  // namespace

TEST_CASE("Builder: the first use() is the outermost layer", "[builder][order]") {
  App app = Builder().use<Tag>("A").use<Tag>("B").use<Tag>("C").run(trace_app).build();
  auto res = testing::call(app, "GET /");
  CHECK(res.body == "ABC");                // request passes A, then B, then C
  CHECK(res.header("X-Trace") == "CBA");   // response passes C, then B, then A
}

TEST_CASE("Builder: layers given as functions compose in the same order", "[builder][order]") {
  Layer l = [](App next) -> App {
    return [next](Env& env) {
      env.set("trace", std::string(env.get("trace")) + "L");
      return next(env);
    };
  };
  App app = Builder().use(l).use<Tag>("T").run(trace_app).build();
  CHECK(testing::call(app, "GET /").body == "LT");
}

TEST_CASE("Builder: a layer written as a function of the env and the next app", "[builder][order]") {
  auto fn = [](std::string tag) {
    return [tag](Env& env, const App& next) {
      env.set("trace", std::string(env.get("trace")) + tag);
      return on_headers(next(env), [tag](Response& r) {
        r.headers.set("X-Trace", std::string(r.headers.get("X-Trace").value_or("")) + tag);
      });
    };
  };
  App app = Builder().use(fn("F")).use<Tag>("T").use(fn("G")).run(trace_app).build();
  auto res = testing::call(app, "GET /");
  CHECK(res.body == "FTG");                // the first use() is the outermost, function or class
  CHECK(res.header("X-Trace") == "GTF");
  CHECK(testing::call(app, "GET /").body == "FTG");  // the function is shared, its layer rebuilt per build()
  CHECK_THROWS_AS(Builder().use(LayerFunction{}), std::invalid_argument);
}

TEST_CASE("Builder: enable_if runs the middleware only where the condition holds", "[builder]") {
  App app = Builder()
                .enable_if<Tag>([](const Env& env) { return env.get(keys::PATH_INFO) == "/yes"; }, "X")
                .run(trace_app)
                .build();
  CHECK(testing::call(app, "GET /yes").body == "X");
  CHECK(testing::call(app, "GET /no").body == "");
  CHECK(testing::call(app, "GET /yes").body == "X");  // evaluated per request
}

TEST_CASE("Builder: misuse throws from build()", "[builder]") {
  CHECK_THROWS_WITH(Builder().use<Tag>("A").build(), Catch::Contains("no app"));
  Builder both;
  both.run(trace_app).mount("/x", trace_app);
  CHECK_THROWS_AS(both.build(), std::logic_error);
  CHECK_THROWS_AS(Builder().run(App{}), std::invalid_argument);
  CHECK_THROWS_AS(Builder().mount("relative", trace_app).build(), std::invalid_argument);
}

TEST_CASE("Builder: mount routes and middleware wrap the map", "[builder]") {
  App a = [](Env& env) { return Response::text(200, "a:" + std::string(env.get(keys::SCRIPT_NAME)) + "|" + std::string(env.get(keys::PATH_INFO))); };
  App b = [](Env&) { return Response::text(200, "b"); };
  App app = Builder().use<Tag>("M").mount("/a", a).mount("/", b).build();
  auto r = testing::call(app, "GET /a/x");
  CHECK(r.body == "a:/a|/x");
  CHECK(r.header("X-Trace") == "M");
  CHECK(testing::call(app, "GET /other").body == "b");
}

TEST_CASE("Builder: one builder can build several independent apps", "[builder]") {
  Builder b;
  b.use<Tag>("A").run(trace_app);
  App one = b.build(), two = b.build();
  CHECK(testing::call(one, "GET /").body == "A");
  CHECK(testing::call(two, "GET /").body == "A");
}
