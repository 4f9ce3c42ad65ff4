#include "csgi/middleware/sessions.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
constexpr const char* secret1 = "0123456789abcdef0123456789abcdef-one";

/// GET /set?k=v stores k=v; /login rotates the id; /logout expires; anything else echoes "k=v;…" and the id.
App session_app() {
  return lint([](Env& env) {
    Session* s = mw::Sessions::of(env);
    REQUIRE(s);
    std::string_view path = env.get(keys::PATH_INFO);
    if (path == "/set") {
      std::string_view q = env.get(keys::QUERY_STRING);
      auto eq = q.find('=');
      s->data[std::string(q.substr(0, eq))] = std::string(q.substr(eq + 1));
    } else if (path == "/login") {
      s->data["user"] = "ann";
      mw::Sessions::rotate(env);
    } else if (path == "/logout") {
      mw::Sessions::expire(env);
    }
    std::string out;
    for (const auto& [k, v] : s->data) out += k + "=" + v + ";";
    return Response::text(200, out + "|" + env.object<SessionOptions>(keys::x::session_options)->id);
  });
}

mw::SessionsOptions with(std::shared_ptr<mw::SessionStore> store) {
  mw::SessionsOptions o;
  o.store = std::move(store);
  return o;
}

/// "csgi_session=<value>" from a Set-Cookie header.
std::string cookie_of(const testing::TestResponse& r) {
  std::string sc = r.header("Set-Cookie");
  return sc.substr(0, sc.find(';'));
}

std::shared_ptr<mw::SessionStore> cookie_store(std::vector<std::string> secrets, bool encrypt = false) {
  mw::CookieSessionStoreOptions o;
  o.secrets = std::move(secrets);
  o.encrypt = encrypt;
  return std::make_shared<mw::CookieSessionStore>(o);
}

class FailingStore final : public mw::SessionStore {
public:
  bool fail_load = false;
  std::optional<mw::LoadedSession> load(std::string_view) override {
    if (fail_load) throw std::runtime_error("connection refused");
    return mw::LoadedSession{"id1", {{"a", "1"}}, std::chrono::system_clock::now() + std::chrono::hours(1)};
  }
  std::string save(const std::string&, const mw::SessionData&, std::chrono::system_clock::time_point) override {
    throw std::runtime_error("connection refused");
  }
  void erase(const std::string&) override {}
};
}  // namespace

TEST_CASE("sessions: an untouched new session sets no cookie; a written one sets it with safe defaults") {
  for (bool memory : {true, false}) {
    INFO((memory ? "memory" : "cookie"));
    auto store = memory ? std::shared_ptr<mw::SessionStore>(std::make_shared<mw::MemorySessionStore>()) : cookie_store({secret1});
    App app = lint(wrap<mw::Sessions>(session_app(), with(store)));
    auto first = testing::call(app, "GET /");
    CHECK(first.status == 200);
    CHECK_FALSE(first.headers.has("Set-Cookie"));

    auto set = testing::call(app, "GET /set?color=blue");
    std::string sc = set.header("Set-Cookie");
    CHECK(sc.find("csgi_session=") == 0);
    CHECK(sc.find("; Path=/") != std::string::npos);
    CHECK(sc.find("; HttpOnly") != std::string::npos);
    CHECK(sc.find("; SameSite=Lax") != std::string::npos);
    CHECK(sc.find("; Max-Age=1209600") != std::string::npos);
    CHECK(sc.find("Secure") == std::string::npos);
    CHECK(set.header("Cache-Control") == "private, no-store");
    std::string id = set.body.substr(set.body.find('|') + 1);

    auto back = testing::call(app, "GET /", {{"Cookie", "x=1; " + cookie_of(set)}});
    CHECK(back.body == "color=blue;|" + id);
    CHECK_FALSE(back.headers.has("Set-Cookie"));  // unchanged and far from expiry: nothing to save

    testing::Options https;
    https.url_scheme = "https";
    CHECK(testing::call(app, "GET /set?a=b", {}, "", https).header("Set-Cookie").find("; Secure") != std::string::npos);
  }
}

TEST_CASE("sessions: a tampered, unknown or malformed cookie gives an empty session, never an error") {
  for (bool memory : {true, false}) {
    INFO((memory ? "memory" : "cookie"));
    auto store = memory ? std::shared_ptr<mw::SessionStore>(std::make_shared<mw::MemorySessionStore>()) : cookie_store({secret1});
    App app = lint(wrap<mw::Sessions>(session_app(), with(store)));
    std::string good = cookie_of(testing::call(app, "GET /set?user=ann")).substr(std::string("csgi_session=").size());
    std::vector<std::string> bad = {"", "x", "s.", "s..", "e.AAAA", "s.%%%.%%%", good + "A", good.substr(0, good.size() - 1)};
    std::string flipped = good;
    flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
    bad.push_back(flipped);
    for (const auto& v : bad) {
      INFO(v);
      auto res = testing::call(app, "GET /", {{"Cookie", "csgi_session=" + v}});
      CHECK(res.status == 200);
      CHECK(res.body.substr(0, res.body.find('|')).empty());
    }
  }
}

TEST_CASE("sessions: rotate gives a new id and forgets the old; expire removes the session and the cookie") {
  auto store = std::make_shared<mw::MemorySessionStore>();
  App app = lint(wrap<mw::Sessions>(session_app(), with(store)));
  auto anon = testing::call(app, "GET /set?cart=3");
  std::string old_cookie = cookie_of(anon);
  std::string old_id = anon.body.substr(anon.body.find('|') + 1);
  auto login = testing::call(app, "POST /login", {{"Cookie", old_cookie}});
  std::string new_id = login.body.substr(login.body.find('|') + 1);
  CHECK(new_id != old_id);
  CHECK(new_id.size() == 32);
  std::string new_cookie = cookie_of(login);
  CHECK(new_cookie != old_cookie);
  CHECK(testing::call(app, "GET /", {{"Cookie", new_cookie}}).body == "cart=3;user=ann;|" + new_id);
  CHECK(testing::call(app, "GET /", {{"Cookie", old_cookie}}).body.find("user=ann") == std::string::npos);

  auto out = testing::call(app, "POST /logout", {{"Cookie", new_cookie}});
  CHECK(out.header("Set-Cookie").find("csgi_session=;") == 0);
  CHECK(out.header("Set-Cookie").find("Max-Age=0") != std::string::npos);
  CHECK(store->size() == 0);
  CHECK(testing::call(app, "GET /", {{"Cookie", new_cookie}}).body.find("user=ann") == std::string::npos);
  // Logging out with a cookie the store no longer knows still removes it; without a cookie nothing is sent.
  CHECK(testing::call(app, "POST /logout", {{"Cookie", new_cookie}}).header("Set-Cookie").find("Max-Age=0") != std::string::npos);
  CHECK_FALSE(testing::call(app, "POST /logout").headers.has("Set-Cookie"));
}

TEST_CASE("sessions: rotate in the cookie store changes the id inside the cookie") {
  App app = lint(wrap<mw::Sessions>(session_app(), with(cookie_store({secret1}, true))));
  auto anon = testing::call(app, "GET /set?cart=3");
  auto login = testing::call(app, "POST /login", {{"Cookie", cookie_of(anon)}});
  CHECK(login.body.substr(login.body.find('|')) != anon.body.substr(anon.body.find('|')));
  auto me = testing::call(app, "GET /", {{"Cookie", cookie_of(login)}});
  CHECK(me.body == login.body);
}

TEST_CASE("sessions: a failing store answers 503 with the reason; every body kind gets the cookie") {
  auto failing = std::make_shared<FailingStore>();
  App app = lint(wrap<mw::Sessions>(session_app(), with(failing)));
  for (Kind k : all_kinds) {
    INFO(name(k));
    App writer = lint(wrap<mw::Sessions>(
        lint([inner = answer(k, 200, "body")](Env& env) {
          mw::Sessions::of(env)->data["k"] = "v";
          return inner(env);
        }),
        with(failing)));
    auto res = testing::call(writer, "GET /", {{"Cookie", "csgi_session=x"}});
    CHECK(res.status == 503);
    CHECK(res.body == "Session store unavailable: connection refused\n");
    App ok = lint(wrap<mw::Sessions>(
        lint([inner = answer(k, 200, "body")](Env& env) {
          mw::Sessions::of(env)->data["k"] = "v";
          return inner(env);
        }),
        with(std::make_shared<mw::MemorySessionStore>())));
    auto good = testing::call(ok, "GET /");
    CHECK(good.body == "body");
    CHECK(good.header("Set-Cookie").find("csgi_session=") == 0);
  }
  failing->fail_load = true;
  auto down = testing::call(app, "GET /", {{"Cookie", "csgi_session=x"}});
  CHECK(down.status == 503);
  CHECK(down.body == "Session store unavailable: connection refused\n");

  mw::SessionsOptions none;
  CHECK_THROWS_AS(mw::Sessions(session_app(), none), std::invalid_argument);
}
