#include "csgi/core/access_log_line.hpp"

#include <catch2/catch.hpp>


TEST_CASE("access_log_line: text is escaped as nginx does: quotes, backslashes, controls, bytes >= 0x7f") {
  std::string out;
  const std::string in = std::string("a\"b\\c\n") + '\0' + "\x01\x7f\xff plain tail long enough";
  csgi::append_log_escaped(out, in);
  CHECK(out == R"(a\x22b\x5Cc\x0A\x00\x01\x7F\xFF plain tail long enough)");
  CHECK(csgi::log_escaped("") == "-");
  CHECK(csgi::log_escaped("plain") == "plain");
}
