#include "csgi/middleware/cascade.hpp"

#include <catch2/catch.hpp>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

TEST_CASE("cascade: first non-404/405 answer wins, for every body kind of the skipped apps") {
  for (Kind k : all_kinds) {
    INFO(name(k));
    App app = lint(mw::Cascade{answer(k, 404, "nf"), answer(k, 405, "nm"), answer(k, 200, "third"),
                               answer(Kind::complete, 200, "fourth")});
    auto res = testing::call(app, "GET /");
    CHECK(res.status == 200);
    CHECK(res.body == "third");
  }
}

TEST_CASE("cascade: last answer returned as is; configurable statuses; input rewound") {
  App app = lint(mw::Cascade{answer(Kind::complete, 404, "a"), answer(Kind::delayed_writer, 404, "last")});
  auto res = testing::call(app, "GET /");
  CHECK(res.status == 404);
  CHECK(res.body == "last");
  mw::CascadeOptions o;
  o.catch_statuses = {403};
  App c = lint(mw::Cascade({answer(Kind::complete, 403, "no"), answer(Kind::complete, 404, "nf"),
                            answer(Kind::complete, 200, "never")}, o));
  CHECK(testing::call(c, "GET /").body == "nf");
  App reader = [](Env& env) {
    std::string body = env.input().read_all();
    return Response::text(404, body);
  };
  App echo = [](Env& env) { return Response::text(200, env.input().read_all()); };
  CHECK(testing::call(lint(mw::Cascade{reader, echo}), "POST /", {}, "payload").body == "payload");
  CHECK_THROWS_AS(mw::Cascade(std::vector<App>{}), std::invalid_argument);
}

TEST_CASE("cascade: a skipped stream is closed") {
  auto closed = std::make_shared<bool>(false);
  App streamy = [closed](Env&) {
    return Response{404, {{"Content-Type", "text/plain"}},
                    make_stream([]() -> std::optional<std::string> { return std::nullopt; }, [closed] { *closed = true; })};
  };
  testing::call(mw::Cascade{streamy, answer(Kind::complete, 200, "ok")}, "GET /");
  CHECK(*closed);
}
