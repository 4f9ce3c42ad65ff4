#include "csgi/middleware/reverse_proxy.hpp"

#include <catch2/catch.hpp>

#include "csgi/middleware/access.hpp"
#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

namespace {
App show() {
  return lint([](Env& env) {
    std::string s;
    for (auto k : {"REMOTE_ADDR", "csgi.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT"}) {
      s += env.get(k);
      s += '|';
    }
    return Response::text(200, s);
  });
}
using H = std::vector<std::pair<std::string, std::string>>;
std::string run(const App& app, std::string remote, H headers) {
  testing::Options o;
  o.remote_addr = std::move(remote);
  return testing::call(app, "GET /", std::move(headers), {}, o).body;
}
}  // namespace

TEST_CASE("reverse_proxy: untrusted peers are ignored") {
  App app = lint(wrap<mw::ReverseProxy>(show()));
  CHECK(run(app, "8.8.8.8", {{"X-Forwarded-For", "1.2.3.4"}, {"X-Forwarded-Proto", "https"}}) ==
        "8.8.8.8|http||localhost|80|");
}

TEST_CASE("reverse_proxy: X-Forwarded-* from a trusted proxy; right-most untrusted wins") {
  mw::ReverseProxyOptions o;
  o.trusted = {"127.0.0.1", "10.0.0.0/8"};
  o.use_host = o.use_port = true;
  App app = lint(wrap<mw::ReverseProxy>(show(), o));
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-Proto", "https"},
                               {"X-Forwarded-Host", "example.org"}}) == "203.0.113.9|https|example.org|example.org|443|");
  // The client forged the left-most entry; 198.51.100.7 is what our trusted edge saw.
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.2"}}).substr(0, 13) == "198.51.100.7|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}}).substr(0, 9) == "10.0.0.3|");
  // Garbage left of the client is never read.
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "garbage, 198.51.100.7"}}).substr(0, 13) == "198.51.100.7|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "example.org:8443"}}) ==
        "127.0.0.1|http|example.org:8443|example.org|8443|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Proto", "javascript"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "evil.com/path"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "a.com:99999"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Proto", "https"}, {"X-Forwarded-Port", "8443"}}) ==
        "127.0.0.1|https||localhost|8443|");
}

TEST_CASE("reverse_proxy: a header that names no client never leaves the trusted proxy as the client") {
  mw::ReverseProxyOptions o;
  o.trusted = {"127.0.0.1", "10.0.0.0/8"};
  App app = lint(wrap<mw::ReverseProxy>(show(), o));
  auto addr = [&](H headers) {
    std::string body = run(app, "127.0.0.1", std::move(headers));
    return body.substr(0, body.find('|'));
  };
  // A trusted hop reported something that is not an address: the client is unknown.
  CHECK(addr({{"X-Forwarded-For", "1.1.1.1, garbage, 10.0.0.2"}}) == "unknown");
  CHECK(addr({{"X-Forwarded-For", "garbage"}}) == "unknown");
  CHECK(addr({{"X-Forwarded-For", ""}}) == "unknown");
  CHECK(addr({{"X-Forwarded-For", " , ,"}}) == "unknown");
  // No address header at all: the peer itself is the client.
  CHECK(addr({}) == "127.0.0.1");
  CHECK(addr({{"X-Forwarded-Proto", "https"}}) == "127.0.0.1");

  mw::ReverseProxyOptions f = o;
  f.header = mw::ProxyHeader::forwarded;
  App fwd = lint(wrap<mw::ReverseProxy>(show(), f));
  for (std::string bad : {";", "for=\"1.2.3.4", "for=1.2.3.4;;", "", "for=", "proto=https", "for=unknown",
                          "for=_hidden", "for=6.6.6.6, for=10.0.0.9;proto=https x"}) {
    INFO(bad);
    testing::Options to;
    auto res = testing::call(fwd, "GET /", {{"Forwarded", bad}, {"X-Forwarded-For", "5.6.7.8"}}, {}, to);
    CHECK(res.body.substr(0, 8) == "unknown|");
  }
  // The trusted hop's scheme still applies when its for= is "unknown".
  CHECK(run(fwd, "127.0.0.1", {{"Forwarded", "for=unknown;proto=https"}}) == "unknown|https||localhost|443|");
}

TEST_CASE("reverse_proxy: RFC 7239 Forwarded, quoted IPv6 with port, when chosen") {
  mw::ReverseProxyOptions o;
  o.header = mw::ProxyHeader::forwarded;
  o.use_host = true;
  App app = lint(wrap<mw::ReverseProxy>(show(), o));
  CHECK(run(app, "::1", {{"Forwarded", "for=\"[2001:db8:cafe::17]:4711\";proto=https;host=a.example"},
                         {"X-Forwarded-For", "9.9.9.9"}}) == "2001:db8:cafe::17|https|a.example|a.example|443|");
  CHECK(run(app, "127.0.0.1", {{"Forwarded", "for=192.0.2.43, for=127.0.0.5;proto=https"}}).substr(0, 16) ==
        "192.0.2.43|http|");
  // A client's own element on the left is not believed.
  CHECK(run(app, "127.0.0.1", {{"Forwarded", "for=127.0.0.1, for=203.0.113.9"}}).substr(0, 12) == "203.0.113.9|");
  // Forwarded mode ignores X-Forwarded-For entirely.
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "9.9.9.9"}}).substr(0, 10) == "127.0.0.1|");
}

TEST_CASE("reverse_proxy: the default reads X-Forwarded-For only; a client's Forwarded is ignored") {
  App app = lint(wrap<mw::ReverseProxy>(show()));
  // What nginx sends with proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for and
  // X-Forwarded-Proto $scheme, the client's own Forwarded (and X-Forwarded-Host) passed through.
  CHECK(run(app, "127.0.0.1", {{"Forwarded", "for=127.0.0.1;host=evil.example;proto=https"},
                               {"X-Forwarded-For", "203.0.113.9"},
                               {"X-Forwarded-Proto", "http"},
                               {"X-Forwarded-Host", "evil.example"},
                               {"X-Forwarded-Port", "1"},
                               {"Host", "app.example"}}) == "203.0.113.9|http|app.example|localhost|80|");
  // A malformed Forwarded does not matter either.
  CHECK(run(app, "127.0.0.1", {{"Forwarded", ";"}, {"X-Forwarded-For", "203.0.113.9"}}).substr(0, 12) ==
        "203.0.113.9|");
}

TEST_CASE("reverse_proxy + access: a client cannot claim an allowed address through a trusted proxy") {
  mw::AccessOptions ao;
  ao.rules = {mw::AccessRule::allow_from({"127.0.0.1"})};
  ao.default_allow = false;
  auto stack = [&](mw::ReverseProxyOptions rp) {
    return lint(wrap<mw::ReverseProxy>(wrap<mw::Access>(show(), ao), rp));
  };
  auto status = [](const App& app, H headers) {
    testing::Options o;
    o.remote_addr = "127.0.0.1";
    return testing::call(app, "GET /", std::move(headers), {}, o).status;
  };
  App xff = stack({});
  // nginx in front: the client's Forwarded passed through, its address appended to X-Forwarded-For.
  CHECK(status(xff, {{"Forwarded", "for=127.0.0.1"}, {"X-Forwarded-For", "203.0.113.9"}}) == 403);
  CHECK(status(xff, {{"Forwarded", ";"}, {"X-Forwarded-For", "203.0.113.9"}}) == 403);
  CHECK(status(xff, {{"X-Forwarded-For", "127.0.0.1, 203.0.113.9"}}) == 403);
  CHECK(status(xff, {{"X-Forwarded-For", "garbage"}}) == 403);
  CHECK(status(xff, {{"X-Forwarded-For", ""}}) == 403);
  CHECK(status(xff, {}) == 200);  // the proxy host itself
  mw::ReverseProxyOptions f;
  f.header = mw::ProxyHeader::forwarded;
  App fwd = stack(f);
  CHECK(status(fwd, {{"Forwarded", ";"}}) == 403);
  CHECK(status(fwd, {{"Forwarded", "for=127.0.0.1, for=203.0.113.9"}}) == 403);
  CHECK(status(fwd, {{"Forwarded", "for=127.0.0.1;proto=https x, for=203.0.113.9"}}) == 403);
}

TEST_CASE("reverse_proxy: host and port are taken only when enabled") {
  App app = lint(wrap<mw::ReverseProxy>(show()));
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-Host", "evil.example"},
                               {"X-Forwarded-Port", "8443"}}) == "203.0.113.9|http||localhost|80|");
  mw::ReverseProxyOptions o;
  o.use_proto = false;
  App noproto = lint(wrap<mw::ReverseProxy>(show(), o));
  CHECK(run(noproto, "127.0.0.1", {{"X-Forwarded-Proto", "https"}}) == "127.0.0.1|http||localhost|80|");
}

TEST_CASE("reverse_proxy: configuration errors") {
  CHECK_THROWS_AS(mw::ReverseProxy(show(), {{"10.0.0.0/40"}}), std::invalid_argument);
}
