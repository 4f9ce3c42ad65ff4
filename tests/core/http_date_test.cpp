#include "csgi/core/http_date.hpp"

#include <catch2/catch.hpp>

TEST_CASE("http_date: formats and parses all three forms", "[http_date]") {
  CHECK(csgi::http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT");
  CHECK(csgi::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
  CHECK(csgi::parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777);
  CHECK(csgi::parse_http_date("Sun Nov  6 08:49:37 1994") == 784111777);
  CHECK_FALSE(csgi::parse_http_date("yesterday"));
  CHECK_FALSE(csgi::parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"));
  CHECK(csgi::http_date_now().size() == 29);
}
