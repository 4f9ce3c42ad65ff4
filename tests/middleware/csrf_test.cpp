#include "csgi/middleware/csrf.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/request.hpp"
#include "csgi/middleware/sessions.hpp"
#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
using Hdrs = std::vector<std::pair<std::string, std::string>>;

/// GET /token answers the session's token; POST /login rotates the session id and answers the token
/// then; any other request answers "ok <note>" (the form field "note").
App stack(mw::CsrfOptions o = {}) {
  App app = lint([](Env& env) {
    if (env.get(keys::PATH_INFO) == "/token") return Response::text(200, mw::Csrf::token(env));
    if (env.get(keys::PATH_INFO) == "/tokens")  // two pages of one session
      return Response::text(200, mw::Csrf::token(env) + " " + mw::Csrf::token(env));
    if (env.get(keys::PATH_INFO) == "/secret") {  // what the session keeps: "<session id> <token>"
      std::string kept = mw::Sessions::of(env)->data[std::string(mw::Csrf::session_key)];
      return Response::text(200, kept.substr(kept.rfind(' ') + 1));
    }
    if (env.get(keys::PATH_INFO) == "/login") {
      mw::Sessions::rotate(env);
      return Response::text(200, mw::Csrf::token(env));
    }
    return Response::text(200, "ok " + std::string(Request(env).body_parameters().get("note").value_or("")));
  });
  mw::SessionsOptions s;
  s.store = std::make_shared<mw::MemorySessionStore>();
  return lint(wrap<mw::Sessions>(lint(wrap<mw::Csrf>(app, o)), s));
}

struct Client {
  std::string cookie, token;
};

Client login(const App& app) {
  auto r = testing::call(app, "GET /token", {{"Host", "app.test"}});
  std::string sc = r.header("Set-Cookie");
  return {sc.substr(0, sc.find(';')), r.body};
}
}  // namespace

TEST_CASE("csrf: safe methods pass; an unsafe one needs the session's token in the header or form") {
  App app = stack();
  CHECK(testing::call(app, "GET /page").body == "ok ");
  Client c = login(app);
  REQUIRE(c.token.size() == 64);
  Hdrs base = {{"Host", "app.test"}, {"Cookie", c.cookie}};

  Hdrs with_header = base;
  with_header.emplace_back("X-CSRF-Token", c.token);
  CHECK(testing::call(app, "POST /say", with_header).body == "ok ");

  Hdrs form = base;
  form.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  auto f = testing::call(app, "POST /say", form, "note=hi&csrf_token=" + c.token);
  CHECK(f.status == 200);
  CHECK(f.body == "ok hi");  // the app still reads the form

  auto missing = testing::call(app, "POST /say", base);
  CHECK(missing.status == 403);
  CHECK(missing.body == "Forbidden: CSRF token missing\n");

  Hdrs wrong = base;
  wrong.emplace_back("X-CSRF-Token", std::string(32, '0'));
  auto w = testing::call(app, "DELETE /say", wrong);
  CHECK(w.status == 403);
  CHECK(w.body == "Forbidden: CSRF token invalid\n");
  Hdrs shorter = base;
  shorter.emplace_back("X-CSRF-Token", c.token.substr(0, 63));
  CHECK(testing::call(app, "PUT /say", shorter).status == 403);

  auto no_session = testing::call(app, "POST /say", {{"X-CSRF-Token", c.token}});
  CHECK(no_session.status == 403);
  CHECK(no_session.body == "Forbidden: CSRF token missing from the session\n");
}

TEST_CASE("csrf: Sec-Fetch-Site and Origin refuse cross-site requests even with a valid token") {
  mw::CsrfOptions o;
  o.trusted_origins = {"https://partner.test"};
  App app = stack(o);
  Client c = login(app);
  auto post = [&](Hdrs extra) {
    Hdrs h = {{"Host", "app.test"}, {"Cookie", c.cookie}, {"X-CSRF-Token", c.token}};
    h.insert(h.end(), extra.begin(), extra.end());
    return testing::call(app, "POST /say", h);
  };
  CHECK(post({{"Sec-Fetch-Site", "same-origin"}}).status == 200);
  CHECK(post({{"Sec-Fetch-Site", "none"}}).status == 200);
  for (std::string site : {"cross-site", "same-site"}) {
    auto r = post({{"Sec-Fetch-Site", site}, {"Origin", "https://evil.test"}});
    CHECK(r.status == 403);
    CHECK(r.body == "Forbidden: cross-site request (Sec-Fetch-Site)\n");
  }
  CHECK(post({{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://partner.test"}}).status == 200);
  CHECK(post({{"Origin", "http://app.test"}}).status == 200);
  CHECK(post({{"Origin", "HTTP://APP.TEST"}}).status == 200);
  for (std::string origin : {"https://app.test", "http://app.test:8080", "http://evil.test", "null"}) {
    INFO(origin);
    auto r = post({{"Origin", origin}});
    CHECK(r.status == 403);
    CHECK(r.body == "Forbidden: cross-origin request (Origin)\n");
  }
}

TEST_CASE("csrf: a new session id (login) retires the old token") {
  App app = stack();
  Client c = login(app);
  auto r = testing::call(app, "POST /login", {{"Host", "app.test"}, {"Cookie", c.cookie}, {"X-CSRF-Token", c.token}});
  REQUIRE(r.status == 200);
  std::string sc = r.header("Set-Cookie");
  Client after{sc.substr(0, sc.find(';')), r.body};
  CHECK(after.token.size() == 64);
  CHECK(after.token != c.token);
  auto old = testing::call(app, "POST /say", {{"Cookie", after.cookie}, {"X-CSRF-Token", c.token}});
  CHECK(old.status == 403);
  CHECK(old.body == "Forbidden: CSRF token invalid\n");
  CHECK(testing::call(app, "POST /say", {{"Cookie", after.cookie}, {"X-CSRF-Token", after.token}}).status == 200);
}

TEST_CASE("csrf: the token is masked anew for every page; masked and unmasked forms pass, others fail") {
  // A page compressed with a secret of its own (BREACH) must not carry the same token bytes twice.
  App app = stack();
  Client c = login(app);
  Hdrs base = {{"Host", "app.test"}, {"Cookie", c.cookie}};
  std::string two = testing::call(app, "GET /tokens", base).body;
  std::string t1 = two.substr(0, two.find(' ')), t2 = two.substr(two.find(' ') + 1);
  std::string secret = testing::call(app, "GET /secret", base).body;
  REQUIRE(secret.size() == 32);
  CHECK(t1.size() == 64);
  CHECK(t1 != t2);
  CHECK(t1 != c.token);
  CHECK(t1.find(secret) == std::string::npos);
  auto post = [&](std::string token) {
    Hdrs h = base;
    h.emplace_back("X-CSRF-Token", std::move(token));
    return testing::call(app, "POST /say", h);
  };
  for (const std::string& t : {c.token, t1, t2, secret}) CHECK(post(t).status == 200);
  std::string flipped = t1;
  flipped[40] = flipped[40] == '0' ? '1' : '0';
  CHECK(post(flipped).body == "Forbidden: CSRF token invalid\n");
  CHECK(post(std::string(64, 'z')).status == 403);   // not hex
  CHECK(post(t1 + "00").status == 403);              // neither length
  Client other = login(app);                         // another session's masked token
  CHECK(post(other.token).body == "Forbidden: CSRF token invalid\n");
}

TEST_CASE("csrf: without a Sessions middleware in front it is a configuration error") {
  App bare = wrap<mw::Csrf>(lint([](Env&) { return Response::text(200, "x"); }));
  CHECK_THROWS_AS(testing::call(bare, "POST /"), std::logic_error);
  Env env;
  CHECK_THROWS_AS(mw::Csrf::token(env), std::logic_error);
  mw::CsrfOptions bad;
  bad.header = "X Token";
  CHECK_THROWS_AS(mw::Csrf(lint([](Env&) { return Response::text(200, "x"); }), bad), std::invalid_argument);
}
