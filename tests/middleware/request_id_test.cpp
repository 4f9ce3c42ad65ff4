#include "csgi/middleware/request_id.hpp"

#include <catch2/catch.hpp>
#include <set>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
App echo_id() {
  return lint([](Env& env) {
    return Response::text(200, std::string(env.get(mw::RequestId::env_key)) + "|" +
                                   std::string(env.get("HTTP_X_REQUEST_ID")));
  });
}
}  // namespace

TEST_CASE("request_id: generates 32 hex digits when absent, same in env, header and response") {
  App app = lint(wrap<mw::RequestId>(echo_id()));
  auto res = testing::call(app, "GET /");
  std::string id = res.header("X-Request-Id");
  REQUIRE(id.size() == 32);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(res.body == id + "|" + id);
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) seen.insert(testing::call(app, "GET /").header("X-Request-Id"));
  CHECK(seen.size() == 200);
}

TEST_CASE("request_id: a valid incoming id is kept; an invalid one replaced") {
  App app = lint(wrap<mw::RequestId>(echo_id()));
  CHECK(testing::call(app, "GET /", {{"X-Request-Id", "abc-123_x.y"}}).header("X-Request-Id") == "abc-123_x.y");
  for (std::string bad : {std::string("has space"), std::string("<script>"), std::string(201, 'a'), std::string("a\"b")}) {
    auto res = testing::call(app, "GET /", {{"X-Request-Id", bad}});
    CHECK(res.header("X-Request-Id") != bad);
    CHECK(res.header("X-Request-Id").size() == 32);
  }
}

TEST_CASE("request_id: trust_incoming=false always generates; custom generator; every body kind") {
  mw::RequestIdOptions o;
  o.trust_incoming = false;
  App app = wrap<mw::RequestId>(echo_id(), o);
  CHECK(testing::call(app, "GET /", {{"X-Request-Id", "abc"}}).header("X-Request-Id") != "abc");
  mw::RequestIdOptions g;
  g.generate = [] { return std::string("fixed-id"); };
  for (Kind k : all_kinds) {
    INFO(name(k));
    auto res = testing::call(lint(wrap<mw::RequestId>(answer(k, 200, "body"), g)), "GET /");
    CHECK(res.header("X-Request-Id") == "fixed-id");
    CHECK(res.body == "body");
  }
  mw::RequestIdOptions bad;
  bad.header = "X Request";
  CHECK_THROWS_AS(mw::RequestId(echo_id(), bad), std::invalid_argument);
}
