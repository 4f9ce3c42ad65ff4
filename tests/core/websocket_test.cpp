#include "csgi/core/websocket.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "csgi/core/keys.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
namespace ws = csgi::websocket;

namespace {

/// An adapter's csgix.websocket in memory: keeps what it was handed, refuses a second handler.
struct FakeHandshake final : ws::Handshake {
  int taken = 0;
  ws::Handler handler;
  std::vector<std::string> origins;  // the server's allowed origins
  const std::vector<std::string>& allowed_origins() const override { return origins; }
  bool take(ws::Handler h) override {
    if (taken++ > 0) return false;
    handler = std::move(h);
    return true;
  }
};

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields handshake() {
  return {{"Upgrade", "websocket"},
          {"Connection", "keep-alive, Upgrade"},
          {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
          {"Sec-WebSocket-Version", "13"}};
}

Fields without(Fields f, std::string_view name) {
  std::erase_if(f, [&](const auto& p) { return p.first == name; });
  return f;
}

Fields with(Fields f, std::string name, std::string value) {
  f = without(std::move(f), name);
  f.emplace_back(std::move(name), std::move(value));
  return f;
}

/// Calls an app answering with accept() where `up` is the adapter's csgix.websocket (nullptr: none).
testing::TestResponse call_accept(FakeHandshake* up, Fields fields, std::string request = "GET /ws HTTP/1.1",
                                  std::string body = {}) {
  testing::Options o;
  o.setup = [up](Env& env) {
    if (up) env.set_object<ws::Handshake>(keys::x::websocket, up);
  };
  App app = [](Env& env) { return ws::accept(env, ws::Handler{}); };
  return testing::call(wrap<Lint>(app), request, std::move(fields), std::move(body), o);
}

std::string lint_rule(const std::function<void()>& f) {
  try {
    f();
  } catch (const LintError& e) {
    return e.rule();
  }
  return "";
}

}  // namespace

TEST_CASE("websocket::accept: 501 where the adapter offers no WebSocket", "[websocket][EXT-8]") {
  auto r = call_accept(nullptr, handshake());
  CHECK(r.status == 501);
  CHECK(r.body.find("csgix.websocket") != std::string::npos);
}

TEST_CASE("websocket::accept: a valid handshake gives the handler to the adapter and answers 101", "[websocket][EXT-9]") {
  FakeHandshake up;
  auto r = call_accept(&up, handshake());
  CHECK(r.status == 101);
  CHECK(r.header("Upgrade") == "websocket");
  CHECK(r.body.empty());
  CHECK(up.taken == 1);
  // Header names and tokens compare case-insensitively; the Connection list may hold other tokens.
  FakeHandshake up2;
  CHECK(call_accept(&up2, with(with(handshake(), "Upgrade", "WebSocket"), "Connection", "upgrade")).status == 101);
}

TEST_CASE("websocket::accept: 426 with Upgrade for a request that is not a valid handshake", "[websocket][EXT-9]") {
  struct Case {
    const char* what;
    Fields fields;
    std::string request = "GET /ws HTTP/1.1";
  };
  std::vector<Case> cases = {
      {"no Upgrade", without(handshake(), "Upgrade")},
      {"Upgrade of another protocol", with(handshake(), "Upgrade", "h2c")},
      {"no Connection: Upgrade", with(handshake(), "Connection", "keep-alive")},
      {"no key", without(handshake(), "Sec-WebSocket-Key")},
      {"a key of 15 bytes", with(handshake(), "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ")},
      {"a key with a bad character", with(handshake(), "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25j*Q==")},
      {"no version", without(handshake(), "Sec-WebSocket-Version")},
      {"POST", handshake(), "POST /ws HTTP/1.1"},
      {"HTTP/1.0", handshake(), "GET /ws HTTP/1.0"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakeHandshake up;
    auto r = call_accept(&up, c.fields, c.request);
    CHECK(r.status == 426);
    CHECK(r.header("Upgrade") == "websocket");
    CHECK(up.taken == 0);
  }
  FakeHandshake up;
  auto r = call_accept(&up, with(handshake(), "Sec-WebSocket-Version", "8"));
  CHECK(r.status == 426);
  CHECK(r.header("Sec-WebSocket-Version") == "13");
  CHECK(up.taken == 0);
}

TEST_CASE("websocket::accept: an HTTP/2 stream presented as the GET handshake is upgraded", "[websocket][EXT-11]") {
  FakeHandshake up;
  CHECK(call_accept(&up, with(handshake(), "Host", "example.org"), "GET /ws HTTP/2").status == 101);
  CHECK(up.taken == 1);
  FakeHandshake up2;
  CHECK(call_accept(&up2, with(handshake(), "Host", "example.org"), "CONNECT /ws HTTP/2").status == 426);
  CHECK(up2.taken == 0);
}

TEST_CASE("websocket::accept: a handshake with a body is a 400", "[websocket][EXT-9]") {
  FakeHandshake up;
  auto r = call_accept(&up, with(handshake(), "Content-Length", "3"), "GET /ws HTTP/1.1", "abc");
  CHECK(r.status == 400);
  CHECK(up.taken == 0);
}

TEST_CASE("websocket::accept: an adapter refusing the handler is a 500, not a 101", "[websocket][EXT-8]") {
  FakeHandshake up;
  up.taken = 1;  // as if a handler had been taken already
  auto r = call_accept(&up, handshake());
  CHECK(r.status == 500);
}

TEST_CASE("Lint: a taken handler answered other than 101, and a WebSocket 101 without one", "[websocket][lint][EXT-9]") {
  FakeHandshake up;
  testing::Options o;
  o.setup = [&up](Env& env) { env.set_object<ws::Handshake>(keys::x::websocket, &up); };
  App forgets = [](Env& env) {
    (void)ws::accept(env, ws::Handler{});
    return Response::text(200, "ok");
  };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(forgets), "GET /", handshake(), "", o); }) == "EXT-9");
  FakeHandshake up2;
  o.setup = [&up2](Env& env) { env.set_object<ws::Handshake>(keys::x::websocket, &up2); };
  App handmade = [](Env&) {
    Response r;
    r.status = 101;
    r.headers.add("Upgrade", "websocket");
    return r;
  };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(handmade), "GET /", handshake(), "", o); }) == "EXT-9");
  FakeHandshake up3;
  o.setup = [&up3](Env& env) { env.set_object<ws::Handshake>(keys::x::websocket, &up3); };
  App twice = [](Env& env) {
    auto* u = env.object<ws::Handshake>(keys::x::websocket);
    u->take({});
    u->take({});
    Response r;
    r.status = 101;
    r.headers.add("Upgrade", "websocket");
    return r;
  };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(twice), "GET /", handshake(), "", o); }) == "EXT-9");
}

TEST_CASE("Lint: csgix.websocket must hold a csgi::websocket::Handshake", "[websocket][lint][EXT-8]") {
  testing::Options o;
  o.setup = [](Env& env) { env.set_bool(keys::x::websocket, true); };
  App app = [](Env&) { return Response::text(200, "ok"); };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(app), "GET /", {}, "", o); }) == "EXT-8");
}

TEST_CASE("Lint: Upgrade is allowed on a 426 as RFC 9110 asks, still refused on a 200", "[websocket][lint][RES-14]") {
  App a426 = [](Env&) {
    Response r = Response::error(426);
    r.headers.add("Upgrade", "websocket");
    return r;
  };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(a426), "GET /"); }) == "");
  App a200 = [](Env&) {
    Response r = Response::text(200, "ok");
    r.headers.add("Upgrade", "websocket");
    return r;
  };
  CHECK(lint_rule([&] { testing::call(wrap<Lint>(a200), "GET /"); }) == "RES-14");
}

TEST_CASE("websocket::valid_utf8", "[websocket]") {
  CHECK(ws::valid_utf8(""));
  CHECK(ws::valid_utf8("plain ascii"));
  CHECK(ws::valid_utf8("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80"));
  CHECK(ws::valid_utf8("\xf4\x8f\xbf\xbf"));         // U+10FFFF
  CHECK_FALSE(ws::valid_utf8("\xff"));
  CHECK_FALSE(ws::valid_utf8("\xc3"));               // cut short
  CHECK_FALSE(ws::valid_utf8("\xc0\xaf"));           // overlong '/'
  CHECK_FALSE(ws::valid_utf8("\xe0\x80\xaf"));       // overlong
  CHECK_FALSE(ws::valid_utf8("\xed\xa0\x80"));       // surrogate U+D800
  CHECK_FALSE(ws::valid_utf8("\xf4\x90\x80\x80"));   // above U+10FFFF
  CHECK_FALSE(ws::valid_utf8("\xe2\x9c"));           // cut short
  CHECK_FALSE(ws::valid_utf8("a\x80z"));             // lone continuation byte
}

TEST_CASE("websocket::sendable_close_code", "[websocket]") {
  for (int c : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999}) CHECK(ws::sendable_close_code(c));
  for (int c : {0, 999, 1004, 1005, 1006, 1015, 2000, 2999, 5000}) CHECK_FALSE(ws::sendable_close_code(c));
}

TEST_CASE("websocket::accept: a browser's Origin must be the same origin or an allowed one, else 403", "[websocket]") {
  auto status = [](Fields f, std::vector<std::string> server = {}) {
    FakeHandshake up;
    up.origins = std::move(server);
    auto r = call_accept(&up, with(std::move(f), "Host", "a.example:8080"));
    if (r.status == 403) CHECK(r.body.find("Origin") != std::string::npos);
    CHECK((r.status == 101) == (up.taken == 1));
    return r.status;
  };
  CHECK(status(handshake()) == 101);  // no Origin: not a browser
  CHECK(status(with(handshake(), "Origin", "http://a.example:8080")) == 101);
  CHECK(status(with(handshake(), "Origin", "HTTP://A.EXAMPLE:8080")) == 101);
  CHECK(status(with(handshake(), "Origin", "http://evil.example")) == 403);
  CHECK(status(with(handshake(), "Origin", "http://a.example:8081")) == 403);
  CHECK(status(with(handshake(), "Origin", "http://a.example")) == 403);
  CHECK(status(with(handshake(), "Origin", "null")) == 403);
  CHECK(status(with(handshake(), "Origin", "http://evil.example"), {"http://evil.example"}) == 101);
  CHECK(status(with(handshake(), "Origin", "http://evil.example"), {"*"}) == 101);
  CHECK(status(with(handshake(), "Origin", "http://other.example"), {"http://evil.example"}) == 403);
}

TEST_CASE("websocket::origin_problem: the default port of the Origin's scheme is left out", "[websocket]") {
  Env env;
  env.set(keys::HTTP_HOST, "a.example");
  env.set(keys::url_scheme, "http");
  env.set("HTTP_ORIGIN", "https://a.example");  // behind a TLS-terminating proxy
  CHECK(ws::origin_problem(env, {}).empty());
  env.set("HTTP_ORIGIN", "https://a.example:443");
  CHECK(ws::origin_problem(env, {}).empty());
  env.set("HTTP_ORIGIN", "https://a.example:8443");
  CHECK_FALSE(ws::origin_problem(env, {}).empty());
  env.set("HTTP_ORIGIN", "https://a.example/path");
  CHECK_FALSE(ws::origin_problem(env, {}).empty());
}
