#include "csgi/core/range.hpp"

#include <catch2/catch.hpp>

using csgi::parse_range;
using K = csgi::RangeResult::Kind;

TEST_CASE("parse_range: single ranges", "[range]") {
  auto r = parse_range("bytes=0-99", 1000);
  REQUIRE(r.kind == K::satisfiable);
  CHECK(r.ranges.size() == 1);
  CHECK(r.ranges[0].first == 0);
  CHECK(r.ranges[0].last == 99);
  r = parse_range("bytes=900-", 1000);
  CHECK(r.ranges[0].first == 900);
  CHECK(r.ranges[0].last == 999);
  r = parse_range("bytes=-100", 1000);
  CHECK(r.ranges[0].first == 900);
  r = parse_range("bytes=-5000", 1000);
  CHECK(r.ranges[0].first == 0);
  r = parse_range("bytes=990-5000", 1000);
  CHECK(r.ranges[0].last == 999);
}

TEST_CASE("parse_range: unsatisfiable and ignored", "[range]") {
  CHECK(parse_range("bytes=1000-", 1000).kind == K::unsatisfiable);
  CHECK(parse_range("bytes=-0", 1000).kind == K::unsatisfiable);
  CHECK(parse_range("bytes=5-1", 1000).kind == K::ignore);
  CHECK(parse_range("items=0-1", 1000).kind == K::ignore);
  CHECK(parse_range("bytes=a-b", 1000).kind == K::ignore);
  CHECK(parse_range("bytes=", 1000).kind == K::ignore);
  CHECK(parse_range("bytes=99999999999999999999-", 1000).kind == K::ignore);
  CHECK(parse_range("bytes=0-0", 0).kind == K::unsatisfiable);
}

TEST_CASE("parse_range: several ranges merge; absurd lists are ignored", "[range]") {
  auto r = parse_range("bytes=0-9, 5-19, 50-59,20-29", 1000);
  REQUIRE(r.kind == K::satisfiable);
  REQUIRE(r.ranges.size() == 2);
  CHECK(r.ranges[0].first == 0);
  CHECK(r.ranges[0].last == 29);
  CHECK(r.ranges[1].first == 50);
  std::string many = "bytes=";
  for (int i = 0; i < 100; ++i) many += "0-10,";
  CHECK(parse_range(many, 1000).kind == K::ignore);
  CHECK(parse_range("bytes=0-999,0-999", 1000).kind == K::ignore);
}
