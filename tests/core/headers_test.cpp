// Headers: an ordinary list, and a sealed one (Headers::seal) that copies share and that turns back into
// an ordinary list in the copy that changes it; readers see the same fields either way.
#include <catch2/catch.hpp>

#include "csgi/core/response.hpp"

using csgi::Header;
using csgi::Headers;

namespace {
Headers sample() {
  return Headers{{"Content-Length", "5"}, {"Content-Type", "text/plain"}, {"Set-Cookie", "a=1"}, {"set-cookie", "b=2"}};
}
}  // namespace

TEST_CASE("Headers: a sealed list reads as the same fields", "[headers][seal]") {
  Headers plain = sample();
  Headers sealed = sample();
  sealed.seal();
  REQUIRE(sealed.sealed() != nullptr);
  CHECK(plain.sealed() == nullptr);
  CHECK(sealed == plain);
  CHECK(sealed.size() == 4);
  CHECK_FALSE(sealed.empty());
  CHECK(sealed.get("content-type") == "text/plain");
  CHECK(sealed.has("SET-COOKIE"));
  CHECK_FALSE(sealed.has("ETag"));
  CHECK(sealed.get_all("set-cookie") == std::vector<std::string_view>{"a=1", "b=2"});
  CHECK(sealed[1].name == "Content-Type");
  const Headers& c = sealed;
  std::vector<Header> seen(c.begin(), c.end());
  CHECK(seen == std::vector<Header>(plain.begin(), plain.end()));
  CHECK(sealed.sealed() != nullptr);  // reading left it sealed
}

TEST_CASE("Headers: copies of a sealed list share it; changing one copy leaves the others", "[headers][seal]") {
  Headers a = sample();
  a.seal();
  Headers b = a;
  CHECK(b.sealed() == a.sealed());

  SECTION("add") {
    b.add("ETag", "\"x\"");
    CHECK(b.sealed() == nullptr);
    CHECK(b.size() == 5);
    CHECK(b.get("etag") == "\"x\"");
  }
  SECTION("set") {
    b.set("content-type", "text/html");
    CHECK(b.sealed() == nullptr);
    CHECK(b.get("Content-Type") == "text/html");
  }
  SECTION("remove") {
    CHECK(b.remove("set-cookie") == 2);
    CHECK(b.sealed() == nullptr);
    CHECK(b.size() == 2);
  }
  SECTION("a mutable iterator") {
    for (Header& h : b)
      if (h.name == "Content-Type") h.value = "text/css";
    CHECK(b.sealed() == nullptr);
    CHECK(b.get("content-type") == "text/css");
  }
  SECTION("assignment from an ordinary list") {
    b = Headers{{"X", "1"}};
    CHECK(b.sealed() == nullptr);
    CHECK(b.size() == 1);
  }
  // The original is untouched, still sealed.
  REQUIRE(a.sealed() != nullptr);
  CHECK(a == sample());
}

TEST_CASE("Headers: removing a field a sealed list lacks keeps it sealed", "[headers][seal]") {
  Headers a = sample();
  a.seal();
  CHECK(a.remove("ETag") == 0);
  CHECK(a.sealed() != nullptr);
  Headers e;
  e.seal();
  CHECK(e.empty());
  CHECK(e.sealed() != nullptr);
  CHECK(e.sealed()->wire.empty());
  CHECK(e.sealed()->wire_ok);
}

TEST_CASE("Headers::seal: the HTTP/1 form and what an adapter needs to know", "[headers][seal]") {
  Headers a = sample();
  a.add("Date", "Tue, 01 Dec 2026 10:00:00 GMT");
  a.seal();
  const csgi::HeaderBlock& b = *a.sealed();
  CHECK(b.wire_ok);
  CHECK(b.wire ==
        "Content-Length: 5\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
        "Date: Tue, 01 Dec 2026 10:00:00 GMT\r\n");
  CHECK(b.content_length == 5u);
  CHECK(b.has_date);

  Headers n{{"Content-Type", "text/plain"}};
  n.seal();
  CHECK(n.sealed()->wire_ok);
  CHECK_FALSE(n.sealed()->content_length);
  CHECK_FALSE(n.sealed()->has_date);
}

TEST_CASE("Headers::seal: a list the adapter must check field by field is not wire-ready", "[headers][seal]") {
  auto ready = [](Headers h) {
    h.seal();
    return h.sealed()->wire_ok;
  };
  CHECK(ready(Headers{{"X-Tab", "a\tb"}}));
  CHECK_FALSE(ready(Headers{{"Bad Name", "1"}}));
  CHECK_FALSE(ready(Headers{{"X", "a\r\nInjected: 1"}}));
  CHECK_FALSE(ready(Headers{{"Transfer-Encoding", "chunked"}}));
  CHECK_FALSE(ready(Headers{{"connection", "close"}}));
  CHECK_FALSE(ready(Headers{{"Keep-Alive", "timeout=5"}}));
  CHECK_FALSE(ready(Headers{{"Content-Length", "5"}, {"content-length", "5"}}));
  CHECK_FALSE(ready(Headers{{"Content-Length", "5x"}}));
  CHECK_FALSE(ready(Headers{{"Content-Length", ""}}));
  CHECK_FALSE(ready(Headers{{"Content-Length", "-1"}}));
  Headers bad{{"Content-Length", "5"}, {"X", "a\nb"}};
  bad.seal();
  CHECK(bad.sealed()->wire.empty());
  CHECK_FALSE(bad.sealed()->content_length);
  CHECK(bad.get("content-length") == "5");  // the fields are all still there for the adapter to check
}

TEST_CASE("Headers: up to eight fields, added or set, stay where the first one was put", "[headers]") {
  Headers h;
  h.add("Content-Type", "text/plain");
  const Header* first = &h[0];
  h.add("Content-Length", "5");
  for (int i = 0; i < 5; ++i) h.set("X-Field-" + std::to_string(i), "v");
  h.set("X-Runtime", "0.000100");
  REQUIRE(h.size() == 8);
  CHECK(&h[0] == first);  // the list was not reallocated (and its fields moved) as it grew
  CHECK(h.get("X-Runtime") == "0.000100");
}

TEST_CASE("add_vary: adds a field once, keeps what is there, leaves Vary: * alone", "[headers]") {
  Headers h;
  csgi::add_vary(h, "Origin");
  CHECK(h.get("Vary") == "Origin");
  csgi::add_vary(h, "Accept-Encoding");
  csgi::add_vary(h, "origin");
  CHECK(h.get("Vary") == "Origin, Accept-Encoding");
  Headers star{{"Vary", "*"}};
  csgi::add_vary(star, "Origin");
  CHECK(star.get("Vary") == "*");
}
