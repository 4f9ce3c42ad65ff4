#include "csgi/core/query.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/http_error.hpp"

using namespace csgi;
using V = std::vector<std::string_view>;

TEST_CASE("parse_query: repeated keys keep every value in order", "[query]") {
  Params p = parse_query("a=1&b=2&a=3&c=&a=4");
  CHECK(p.size() == 5);
  CHECK(p.get("a") == "1");
  CHECK(p.get_all("a") == V{"1", "3", "4"});
  CHECK(p.get("b") == "2");
  CHECK(p.keys() == V{"a", "b", "c"});
  CHECK(p[3].first == "c");
  CHECK(p[3].second == "");
}

TEST_CASE("parse_query: empty values, empty pairs, keys without '='", "[query]") {
  Params p = parse_query("&&x=&y&=v&&z=1&");
  REQUIRE(p.size() == 4);
  CHECK(p.contains("x"));
  CHECK(p.get("x") == "");
  CHECK(p.contains("y"));
  CHECK(p.get("y") == "");
  CHECK(p.get("") == "v");
  CHECK(p.get("z") == "1");
  CHECK_FALSE(p.get("missing").has_value());
  CHECK(p.value_or("missing", "dflt") == "dflt");
  CHECK(parse_query("").empty());
  CHECK(parse_query("&&&").empty());
}

TEST_CASE("parse_query: '+' is a space and %XX decodes once", "[query]") {
  Params p = parse_query("q=hello+world&e=%41%2b%2B%25&k%20ey=caf%C3%A9&twice=%2541&semi=a;b");
  CHECK(p.get("q") == "hello world");
  CHECK(p.get("e") == "A++%");
  CHECK(p.get("k ey") == "caf\xC3\xA9");
  CHECK(p.get("twice") == "%41");
  CHECK(p.get("semi") == "a;b");  // ';' is not a separator
  CHECK(parse_query("nul=%00").get("nul") == std::string_view("\0", 1));
  CHECK(parse_query("eq=a=b=c").get("eq") == "a=b=c");
}

TEST_CASE("parse_query: bad percent escapes throw BadRequest", "[query]") {
  for (std::string_view bad : {"a=%", "a=%4", "a=%G1", "a=%1G", "%zz=1", "ok=1&b=%%", "x=abc%"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_query(bad), BadRequest);
  }
  try {
    parse_query("a=%ZZ");
    FAIL("no exception");
  } catch (const BadRequest& e) {
    CHECK(e.status() == 400);
    CHECK(std::string(e.what()).find("percent-escape") != std::string::npos);
  }
}

TEST_CASE("parse_query_into: a failure leaves the earlier pairs intact", "[query]") {
  Params p{{"keep", "me"}};
  CHECK_THROWS_AS(parse_query_into("a=1&b=%X", p), BadRequest);
  CHECK(p.size() == 1);
  CHECK(p.get("keep") == "me");
  parse_query_into("c=3", p);
  CHECK(p.size() == 2);
  CHECK(p.get("c") == "3");
}

TEST_CASE("parse_query: too many parameters is 413", "[query]") {
  QueryLimits lim;
  lim.max_params = 3;
  CHECK(parse_query("a&b&c", lim).size() == 3);
  CHECK_THROWS_AS(parse_query("a&b&c&d", lim), PayloadTooLarge);
}

TEST_CASE("Params: add, set, remove, append, equality", "[query]") {
  Params p;
  p.add("a", "1");
  p.add("b", "2");
  p.add("a", "3");
  CHECK(p.remove("a") == 2);
  CHECK(p.size() == 1);
  CHECK(p.get("b") == "2");
  p.set("b", "x");
  p.set("c", "y");
  CHECK(p == Params{{"b", "x"}, {"c", "y"}});
  // set() with a view into the map itself.
  std::string_view self = *p.get("c");
  p.set("b", self);
  CHECK(p.get("b") == "y");
  Params q{{"z", "9"}};
  q.append(p);
  q.append(q);
  CHECK(q.size() == 6);
  CHECK(q.get_all("z") == V{"9", "9"});
  std::size_t n = 0;
  for (auto [k, v] : q) n += k.size() + v.size();
  CHECK(n == 12);
}

TEST_CASE("build_query round-trips through parse_query", "[query]") {
  Params p{{"a b", "c&d=e"}, {"x", ""}, {"\xC3\xA9", "+%"}};
  std::string s = build_query(p);
  CHECK(s == "a%20b=c%26d%3De&x=&%C3%A9=%2B%25");
  CHECK(parse_query(s) == p);
}
