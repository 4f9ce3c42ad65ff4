#include "csgi/core/cookie.hpp"

#include <catch2/catch.hpp>

using namespace csgi;

TEST_CASE("parse_cookies: simple pairs, spaces around them", "[cookie]") {
  Params c = parse_cookies("  a=1;b=2 ;   c = 3  ;d=hello world");
  REQUIRE(c.size() == 4);
  CHECK(c.get("a") == "1");
  CHECK(c.get("b") == "2");
  CHECK(c.get("c") == "3");
  CHECK(c.get("d") == "hello world");
  CHECK(parse_cookies("").empty());
  CHECK(parse_cookies(" ; ;; ").empty());
}

TEST_CASE("parse_cookies: quoted values lose their quotes", "[cookie]") {
  Params c = parse_cookies(R"(q="quoted value"; e=""; s="a;b"; esc="x\"y"; after="v" junk; n=1)");
  CHECK(c.get("q") == "quoted value");
  CHECK(c.get("e") == "");
  CHECK(c.get("s") == "a;b");
  CHECK(c.get("esc") == "x\"y");
  CHECK_FALSE(c.contains("after"));  // text after the closing quote: bad pair
  CHECK(c.get("n") == "1");
  // An unterminated quote is kept as text up to the next ';'.
  Params u = parse_cookies(R"(u="open; v=2)");
  CHECK(u.get("u") == "\"open");
  CHECK(u.get("v") == "2");
}

TEST_CASE("parse_cookies: bad pairs are ignored, never thrown", "[cookie]") {
  Params c = parse_cookies("novalue; =empty; good=1; bad name=x; a\"b=2; ok=%41%zz%; also_good=yes");
  CHECK_FALSE(c.contains("novalue"));
  CHECK_FALSE(c.contains(""));
  CHECK_FALSE(c.contains("bad name"));
  CHECK_FALSE(c.contains("a\"b"));
  CHECK(c.get("good") == "1");
  CHECK(c.get("ok") == "A%zz%");  // valid escapes decoded, invalid ones kept
  CHECK(c.get("also_good") == "yes");
  CHECK(c.size() == 3);
  CHECK_NOTHROW(parse_cookies(std::string("a=\0\x01\xff;b", 8)));
}

TEST_CASE("parse_cookies: only ';' separates pairs; a ',' is part of the value", "[cookie]") {
  Params c = parse_cookies("a=1; b=2, c=3,d=\"x,y\"");
  CHECK(c.get("a") == "1");
  CHECK(c.get("b") == "2, c=3,d=\"x,y\"");
  CHECK_FALSE(c.contains("c"));
  CHECK_FALSE(c.contains("d"));
  CHECK(c.size() == 2);
  // A value cannot plant a pair that comes before the real one.
  Params h = parse_cookies("x=a,__Host-sid=evil; __Host-sid=real");
  CHECK(h.get("__Host-sid") == "real");
  CHECK(h.get_all("__Host-sid").size() == 1);
  CHECK(h.get("x") == "a,__Host-sid=evil");
  // A quoted value keeps its ','; text after the closing quote up to ';' still spoils the pair.
  Params q = parse_cookies(R"(q="x,y"; r="v",s=1; t=2)");
  CHECK(q.get("q") == "x,y");
  CHECK_FALSE(q.contains("r"));
  CHECK_FALSE(q.contains("s"));
  CHECK(q.get("t") == "2");
}

TEST_CASE("parse_cookies: the first of repeated names wins", "[cookie]") {
  Params c = parse_cookies("sid=specific; sid=general");
  CHECK(c.get("sid") == "specific");
  CHECK(c.get_all("sid").size() == 2);
}

TEST_CASE("SetCookie: attributes in order", "[cookie]") {
  SetCookie sc;
  sc.name = "sid";
  sc.value = "abc";
  sc.path = "/";
  sc.domain = "example.com";
  sc.expires = std::chrono::system_clock::time_point{std::chrono::seconds{784111777}};
  sc.max_age = 3600;
  sc.secure = true;
  sc.http_only = true;
  sc.same_site = SameSite::strict;
  sc.partitioned = true;
  CHECK(sc.to_string() ==
        "sid=abc; Path=/; Domain=example.com; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=3600; Secure; "
        "HttpOnly; SameSite=Strict; Partitioned");
  SetCookie plain{"n", "v"};
  CHECK(plain.to_string() == "n=v");
  plain.same_site = SameSite::lax;
  CHECK(plain.to_string() == "n=v; SameSite=Lax");
}

TEST_CASE("SetCookie: values are encoded and round-trip through parse_cookies", "[cookie]") {
  SetCookie sc{"data", "a b;c,\"d\"\\%é"};
  std::string s = sc.to_string();
  CHECK(s == "data=a%20b%3Bc%2C%22d%22%5C%25%C3%A9");
  CHECK(parse_cookies(s).get("data") == "a b;c,\"d\"\\%é");
}

TEST_CASE("SetCookie: invalid names and attributes throw", "[cookie]") {
  CHECK_THROWS_AS((SetCookie{"bad name", "v"}.to_string()), std::invalid_argument);
  CHECK_THROWS_AS((SetCookie{"", "v"}.to_string()), std::invalid_argument);
  CHECK_THROWS_AS((SetCookie{"a;b", "v"}.to_string()), std::invalid_argument);
  SetCookie p{"n", "v"};
  p.path = "/x;Secure";
  CHECK_THROWS_AS(p.to_string(), std::invalid_argument);
  SetCookie d{"n", "v"};
  d.domain = "a\r\nb";
  CHECK_THROWS_AS(d.to_string(), std::invalid_argument);
  SetCookie none{"n", "v"};
  none.same_site = SameSite::none;
  CHECK_THROWS_AS(none.to_string(), std::invalid_argument);
  none.secure = true;
  CHECK(none.to_string() == "n=v; Secure; SameSite=None");
}

TEST_CASE("expire_cookie", "[cookie]") {
  CHECK(expire_cookie("sid").to_string() == "sid=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0");
}
