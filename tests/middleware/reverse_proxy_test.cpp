#include "csgi/middleware/reverse_proxy.hpp"

#include <catch2/catch.hpp>

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
  App app = lint(wrap<mw::ReverseProxy>(show(), o));
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-Proto", "https"},
                               {"X-Forwarded-Host", "example.org"}}) == "203.0.113.9|https|example.org|example.org|443|");
  // The client forged the left-most entry; 198.51.100.7 is what our trusted edge saw.
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.2"}}).substr(0, 13) == "198.51.100.7|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}}).substr(0, 9) == "10.0.0.3|");
  // Garbage stops the walk at the last trusted hop.
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-For", "1.1.1.1, garbage, 10.0.0.2"}}).substr(0, 9) == "10.0.0.2|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "example.org:8443"}}) ==
        "127.0.0.1|http|example.org:8443|example.org|8443|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Proto", "javascript"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "evil.com/path"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Host", "a.com:99999"}}) == "127.0.0.1|http||localhost|80|");
  CHECK(run(app, "127.0.0.1", {{"X-Forwarded-Proto", "https"}, {"X-Forwarded-Port", "8443"}}) ==
        "127.0.0.1|https||localhost|8443|");
}

TEST_CASE("reverse_proxy: RFC 7239 Forwarded, quoted IPv6 with port; wins over X-Forwarded-For") {
  App app = lint(wrap<mw::ReverseProxy>(show()));
  CHECK(run(app, "::1", {{"Forwarded", "for=\"[2001:db8:cafe::17]:4711\";proto=https;host=a.example"},
                         {"X-Forwarded-For", "9.9.9.9"}}) == "2001:db8:cafe::17|https|a.example|a.example|443|");
  CHECK(run(app, "127.0.0.1", {{"Forwarded", "for=192.0.2.43, for=127.0.0.5;proto=https"}}).substr(0, 16) ==
        "192.0.2.43|http|");
  CHECK(run(app, "127.0.0.1", {{"Forwarded", "for=unknown;proto=https"}}) == "127.0.0.1|https||localhost|443|");
  // Malformed: ignored entirely (and the X-Forwarded-For is not used instead).
  App strict = lint(wrap<mw::ReverseProxy>(show()));
  testing::Options o;
  auto res = testing::call(strict, "GET /", {{"Forwarded", "for=\"1.2.3.4"}, {"X-Forwarded-For", "5.6.7.8"}}, {}, o);
  CHECK(res.body.substr(0, 10) == "127.0.0.1|");
  CHECK(res.errors.find("malformed Forwarded") != std::string::npos);
}

TEST_CASE("reverse_proxy: configuration errors") {
  CHECK_THROWS_AS(mw::ReverseProxy(show(), {{"10.0.0.0/40"}}), std::invalid_argument);
  mw::ReverseProxyOptions none;
  none.use_forwarded = none.use_x_forwarded = false;
  CHECK_THROWS_AS(mw::ReverseProxy(show(), none), std::invalid_argument);
}
