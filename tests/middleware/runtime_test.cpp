#include "csgi/middleware/runtime.hpp"

#include <catch2/catch.hpp>
#include <thread>
#include <regex>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

TEST_CASE("runtime: X-Runtime on every body kind, body untouched") {
  for (Kind k : all_kinds) {
    INFO(name(k));
    App app = lint(wrap<mw::Runtime>(answer(k, 200, "hello world")));
    auto res = testing::call(app, "GET /");
    CHECK(res.status == 200);
    CHECK(res.body == "hello world");
    CHECK(std::regex_match(res.header("X-Runtime"), std::regex(R"(\d+\.\d{6})")));
  }
}

TEST_CASE("runtime: custom header name replaces an inner one; empty name refused") {
  App inner = answer(Kind::complete, 200, "x", {{"X-Took", "old"}});
  App app = lint(wrap<mw::Runtime>(inner, mw::RuntimeOptions{"X-Took"}));
  auto res = testing::call(app, "GET /");
  CHECK(res.headers.get_all("X-Took").size() == 1);
  CHECK(res.header("X-Took") != "old");
  CHECK_THROWS_AS(mw::Runtime(inner, mw::RuntimeOptions{""}), std::invalid_argument);
}

TEST_CASE("runtime: measures the app's time") {
  App slow = lint([](Env&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return Response::text(200, "ok");
  });
  auto res = testing::call(wrap<mw::Runtime>(slow), "GET /");
  CHECK(std::stod(res.header("X-Runtime")) >= 0.019);
}
