#include "csgi/middleware/access.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/builder.hpp"
#include "csgi/core/http_error.hpp"
#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;
using mw::AccessRule;

namespace {
testing::Options from(std::string addr) {
  testing::Options o;
  o.remote_addr = std::move(addr);
  return o;
}
}  // namespace

TEST_CASE("access: first match wins; default; 403") {
  mw::AccessOptions o;
  o.rules = {AccessRule::allow_from({"127.0.0.1", "::1"}), AccessRule::deny_from({"10.0.0.0/8"}),
             AccessRule::allow_from({"10.0.0.0/8"})};  // never reached for 10/8
  o.default_allow = false;
  App app = lint(wrap<mw::Access>(answer(Kind::complete, 200, "in"), o));
  CHECK(testing::call(app, "GET /", {}, {}, from("127.0.0.1")).status == 200);
  CHECK(testing::call(app, "GET /", {}, {}, from("::1")).status == 200);
  auto res = testing::call(app, "GET /", {}, {}, from("10.1.1.1"));
  CHECK(res.status == 403);
  CHECK(res.body == "Forbidden\n");
  CHECK(testing::call(app, "GET /", {}, {}, from("8.8.8.8")).status == 403);
  CHECK(testing::call(app, "GET /", {}, {}, from("")).status == 403);
}

TEST_CASE("access: an address that is not an IP fails closed (deny-lists too)") {
  mw::AccessOptions deny_list;  // default allow, one blocked network
  deny_list.rules = {AccessRule::deny_from({"203.0.113.0/24"})};
  App denying = lint(wrap<mw::Access>(answer(Kind::complete, 200, "in"), deny_list));
  CHECK(testing::call(denying, "GET /", {}, {}, from("198.51.100.1")).status == 200);
  CHECK(testing::call(denying, "GET /", {}, {}, from("203.0.113.9")).status == 403);
  // reverse_proxy's "unknown" (a forwarding header that named no client) could be the blocked network.
  CHECK(testing::call(denying, "GET /", {}, {}, from("unknown")).status == 403);
  CHECK(testing::call(denying, "GET /", {}, {}, from("")).status == 403);

  mw::AccessOptions allow_list;
  allow_list.rules = {AccessRule::allow_from({"127.0.0.1"})};
  allow_list.default_allow = false;
  App allowing = lint(wrap<mw::Access>(answer(Kind::complete, 200, "in"), allow_list));
  CHECK(testing::call(allowing, "GET /", {}, {}, from("127.0.0.1")).status == 200);
  CHECK(testing::call(allowing, "GET /", {}, {}, from("unknown")).status == 403);

  mw::AccessOptions any_address;  // rules without addresses still apply to everyone
  any_address.rules = {AccessRule::deny_from({}, {}, "/admin")};
  App paths = lint(wrap<mw::Access>(answer(Kind::complete, 200, "in"), any_address));
  CHECK(testing::call(paths, "GET /", {}, {}, from("unknown")).status == 200);
  CHECK(testing::call(paths, "GET /admin", {}, {}, from("unknown")).status == 403);
}

TEST_CASE("access: method and path-prefix conditions, path normalised") {
  mw::AccessOptions o;
  o.rules = {AccessRule::allow_from({"192.168.0.0/16"}, {}, "/admin"), AccessRule::deny_from({}, {}, "/admin"),
             AccessRule::deny_from({}, {"DELETE", "PUT"})};
  App app = lint(wrap<mw::Access>(answer(Kind::stream, 200, "ok"), o));
  auto st = [&](std::string req, std::string addr) { return testing::call(app, req, {}, {}, from(addr)).status; };
  CHECK(st("GET /admin", "192.168.3.4") == 200);
  CHECK(st("GET /admin/users", "1.2.3.4") == 403);
  CHECK(st("GET /admin", "1.2.3.4") == 403);
  CHECK(st("GET //admin", "1.2.3.4") == 403);
  CHECK(st("GET /x/../admin/", "1.2.3.4") == 403);
  CHECK(st("GET /./admin", "1.2.3.4") == 403);
  CHECK(st("GET /administrator", "1.2.3.4") == 200);
  CHECK(st("DELETE /thing", "192.168.3.4") == 403);
  CHECK(st("GET /thing", "1.2.3.4") == 200);
  testing::Options mounted = from("1.2.3.4");
  mounted.script_name = "/admin";
  CHECK(testing::call(app, "GET /admin/page", {}, {}, mounted).status == 403);
}

TEST_CASE("access: a mounted admin app is not reached through dot segments", "[access][dot_segments]") {
  mw::AccessOptions o;
  o.rules = {AccessRule::deny_from({}, {}, "/admin")};
  App inner = Builder()
                  .use<mw::Access>(o)
                  .mount("/admin", [](Env&) { return Response::text(200, "ADMIN"); })
                  .mount("/", [](Env& env) { return Response::text(200, "site " + std::string(env.get(keys::PATH_INFO))); })
                  .build();
  App app = lint(inner);
  auto body = [&](std::string req) {
    try {
      auto r = testing::call(app, req);
      return std::to_string(r.status) + " " + r.body;
    } catch (const HttpError& e) {
      return std::to_string(e.status());
    }
  };
  CHECK(body("GET /admin") == "403 Forbidden\n");
  CHECK(body("GET /admin/users/../..") == "200 site /");
  CHECK(body("GET /admin/%2e%2e") == "200 site /");
  CHECK(body("GET /admin/%2E%2E/") == "200 site /");
  CHECK(body("GET /admin%2f..") == "200 site /");
  CHECK(body("GET /x/../admin/users") == "403 Forbidden\n");
  CHECK(body("GET /x/%2e%2e/admin") == "403 Forbidden\n");
  CHECK(body("GET /./admin") == "403 Forbidden\n");
  CHECK(body("GET /admin//..") == "400");  // nginx (merging slashes) would say "/", RFC 3986 "/admin/"
  CHECK(body("GET /admin/%2e%2e/%2e%2e") == "400");
  // A layer above that sets PATH_INFO itself is held to the same rule (and Lint names it).
  testing::Options set;
  set.setup = [](Env& env) { env.set(keys::PATH_INFO, "/admin//../x"); };
  CHECK_THROWS_AS(testing::call(inner, "GET /", {}, {}, set), BadRequest);
  set.setup = [](Env& env) { env.set(keys::PATH_INFO, "/x/../admin"); };
  CHECK(testing::call(inner, "GET /", {}, {}, set).status == 403);
  CHECK_THROWS_WITH(testing::call(app, "GET /", {}, {}, set), Catch::Contains("[ENV-5]"));
}

TEST_CASE("access: bad configuration throws") {
  App a = answer(Kind::complete, 200, "x");
  CHECK_THROWS_AS(mw::Access(a, {{AccessRule::allow_from({"300.1.1.1"})}}), std::invalid_argument);
  CHECK_THROWS_AS(mw::Access(a, {{AccessRule::allow_from({}, {"get"})}}), std::invalid_argument);
  CHECK_THROWS_AS(mw::Access(a, {{AccessRule::allow_from({}, {}, "admin")}}), std::invalid_argument);
}
