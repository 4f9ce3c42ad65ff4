#include "csgi/middleware/cors.hpp"

#include <catch2/catch.hpp>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
mw::CorsOptions site() {
  mw::CorsOptions o;
  o.origins = {"https://app.example.com", "https://*.example.org"};
  o.methods = {"GET", "POST", "DELETE"};
  o.headers = {"X-CSRF-Token"};
  o.expose_headers = {"X-Total"};
  return o;
}

App counting(int& calls) {
  return lint([&calls](Env&) {
    ++calls;
    return Response{200, {{"Content-Type", "text/plain"}, {"Vary", "Accept-Encoding"}}, "app"};
  });
}

testing::TestResponse preflight(const App& app, std::string origin, std::string method, std::string headers = {}) {
  std::vector<std::pair<std::string, std::string>> h = {{"Origin", origin}, {"Access-Control-Request-Method", method}};
  if (!headers.empty()) h.emplace_back("Access-Control-Request-Headers", headers);
  return testing::call(app, "OPTIONS /api", h);
}
}  // namespace

TEST_CASE("cors: an allowed origin gets Allow-Origin, Expose-Headers and Vary: Origin; the app answers") {
  int calls = 0;
  App app = lint(wrap<mw::Cors>(counting(calls), site()));
  auto res = testing::call(app, "GET /api", {{"Origin", "https://app.example.com"}});
  CHECK(res.status == 200);
  CHECK(res.body == "app");
  CHECK(res.header("Access-Control-Allow-Origin") == "https://app.example.com");
  CHECK(res.header("Access-Control-Expose-Headers") == "X-Total");
  CHECK(res.header("Vary") == "Accept-Encoding, Origin");
  CHECK_FALSE(res.headers.has("Access-Control-Allow-Credentials"));
  CHECK(calls == 1);
}

TEST_CASE("cors: a disallowed origin, or none, gets no CORS headers but still Vary: Origin") {
  int calls = 0;
  App app = lint(wrap<mw::Cors>(counting(calls), site()));
  for (std::string origin : {"https://evil.com", "https://app.example.com.evil.com", "https://example.org",
                             "https://x.example.org.evil", "https://a/b.example.org", "null", ""}) {
    INFO(origin);
    auto res = origin.empty() ? testing::call(app, "GET /api") : testing::call(app, "GET /api", {{"Origin", origin}});
    CHECK(res.status == 200);
    CHECK_FALSE(res.headers.has("Access-Control-Allow-Origin"));
    CHECK_FALSE(res.headers.has("Access-Control-Expose-Headers"));
    CHECK(res.header("Vary") == "Accept-Encoding, Origin");
  }
  CHECK(calls == 7);
}

TEST_CASE("cors: a pattern matches one or more labels in place of its '*'") {
  mw::Cors cors(lint([](Env&) { return Response::text(200, "x"); }), site());
  CHECK(cors.allowed_origin("https://a.example.org"));
  CHECK(cors.allowed_origin("https://a.b-c.example.org"));
  CHECK(cors.allowed_origin("HTTPS://A.EXAMPLE.ORG"));
  CHECK_FALSE(cors.allowed_origin("https://.example.org"));
  CHECK_FALSE(cors.allowed_origin("http://a.example.org"));
  CHECK_FALSE(cors.allowed_origin("https://a.example.org:8443"));
  CHECK_FALSE(cors.allowed_origin("https://a:b@x.example.org"));
}

TEST_CASE("cors: a preflight is answered without the app, with methods, headers and Max-Age") {
  int calls = 0;
  App app = lint(wrap<mw::Cors>(counting(calls), site()));
  auto res = preflight(app, "https://x.example.org", "DELETE", "x-csrf-token, content-type");
  CHECK(res.status == 200);
  CHECK(res.header("Access-Control-Allow-Origin") == "https://x.example.org");
  CHECK(res.header("Access-Control-Allow-Methods") == "GET, POST, DELETE");
  CHECK(res.header("Access-Control-Allow-Headers") ==
        "Accept, Accept-Language, Content-Language, Content-Type, X-CSRF-Token");
  CHECK(res.header("Access-Control-Max-Age") == "600");
  CHECK(res.header("Vary") == "Origin");
  CHECK(calls == 0);
}

TEST_CASE("cors: a preflight for a disallowed origin, method or header is 400 with the reason, no CORS headers") {
  int calls = 0;
  App app = lint(wrap<mw::Cors>(counting(calls), site()));
  struct Case {
    std::string origin, method, headers, reason;
  };
  for (const Case& c : {Case{"https://evil.com", "GET", "", "origin"}, Case{"https://app.example.com", "PUT", "", "method"},
                        Case{"https://app.example.com", "POST", "X-CSRF-Token, X-Other", "header"}}) {
    INFO(c.reason);
    auto res = preflight(app, c.origin, c.method, c.headers);
    CHECK(res.status == 400);
    CHECK(res.body == "Disallowed CORS " + c.reason + "\n");
    for (const auto& h : res.headers) CHECK_FALSE(istarts_with(h.name, "Access-Control-"));
  }
  CHECK(calls == 0);
  // An OPTIONS without Access-Control-Request-Method is not a preflight: the app answers it.
  auto plain = testing::call(app, "OPTIONS /api", {{"Origin", "https://app.example.com"}});
  CHECK(plain.body == "app");
  CHECK(calls == 1);
}

TEST_CASE("cors: any origin gets '*' without credentials; with credentials the origin is echoed") {
  mw::CorsOptions any;
  any.origins = {"*"};
  any.methods = {"*"};
  any.headers = {"*"};
  App app = lint(wrap<mw::Cors>(lint([](Env&) { return Response::text(200, "x"); }), any));
  auto res = testing::call(app, "GET /", {{"Origin", "https://a.test"}});
  CHECK(res.header("Access-Control-Allow-Origin") == "*");
  CHECK_FALSE(res.headers.has("Vary"));
  auto pre = preflight(app, "https://a.test", "PATCH", "X-A, X-B");
  CHECK(pre.header("Access-Control-Allow-Methods") == "PATCH");
  CHECK(pre.header("Access-Control-Allow-Headers") == "X-A, X-B");

  any.credentials = true;
  any.max_age = -1;
  App cred = lint(wrap<mw::Cors>(lint([](Env&) { return Response::text(200, "x"); }), any));
  auto c = testing::call(cred, "GET /", {{"Origin", "https://a.test"}});
  CHECK(c.header("Access-Control-Allow-Origin") == "https://a.test");
  CHECK(c.header("Access-Control-Allow-Credentials") == "true");
  CHECK(c.header("Vary") == "Origin");
  CHECK_FALSE(preflight(cred, "https://a.test", "GET").headers.has("Access-Control-Max-Age"));
}

TEST_CASE("cors: every body kind gets the headers; bad options throw") {
  for (Kind k : all_kinds) {
    INFO(name(k));
    auto res = testing::call(lint(wrap<mw::Cors>(answer(k, 200, "body"), site())), "GET /", {{"Origin", "https://app.example.com"}});
    CHECK(res.header("Access-Control-Allow-Origin") == "https://app.example.com");
    CHECK(res.body == "body");
  }
  App a = [](Env&) { return Response::text(200, "x"); };
  mw::CorsOptions bad;
  bad.origins = {"https://*.*.example.com"};
  CHECK_THROWS_AS(mw::Cors(a, bad), std::invalid_argument);
  bad.origins = {"https://a.test"};
  bad.headers = {"X Bad"};
  CHECK_THROWS_AS(mw::Cors(a, bad), std::invalid_argument);
}
