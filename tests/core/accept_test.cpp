#include "csgi/core/accept.hpp"

#include <catch2/catch.hpp>

using csgi::accept_q;

TEST_CASE("accept_q: the most specific matching range decides") {
  CHECK(accept_q("application/json", "application/json") == 1);
  CHECK(accept_q("text/html;q=0.8, application/json;q=0.5", "application/json") == Approx(0.5));
  CHECK(accept_q("application/*;q=0.3, */*;q=0.1", "application/json") == Approx(0.3));
  CHECK(accept_q("*/*;q=0.1, application/json", "application/json") == 1);
  CHECK(accept_q("text/*;q=0.7, text/plain;q=0.2", "text/plain") == Approx(0.2));
  CHECK(accept_q("*/*", "text/plain") == 1);
  CHECK(accept_q("APPLICATION/JSON ; charset=utf-8 ; Q=0.25", "application/json") == Approx(0.25));
}

TEST_CASE("accept_q: absent or malformed gives 0") {
  CHECK(accept_q("", "application/json") == 0);
  CHECK(accept_q("text/html", "application/json") == 0);
  CHECK(accept_q("application/jsonx, application/json5", "application/json") == 0);
  for (const char* bad : {"application/json;q=", "application/json;q=2", "application/json;q=0.5x",
                          "application/json;q=1.5", "application/json;q=-1", "application/json;q=0.12345"})
    CHECK(accept_q(bad, "application/json") == 0);
  CHECK(accept_q(",,, ;", "application/json") == 0);
}
