#include "csgi/core/access_log_line.hpp"

#include <catch2/catch.hpp>
#include <regex>

#include "csgi/core/keys.hpp"

using csgi::Env;

TEST_CASE("access_log_line: text is escaped as nginx does: quotes, backslashes, controls, bytes >= 0x7f") {
  std::string out;
  const std::string in = std::string("a\"b\\c\n") + '\0' + "\x01\x7f\xff plain tail long enough";
  csgi::append_log_escaped(out, in);
  CHECK(out == R"(a\x22b\x5Cc\x0A\x00\x01\x7F\xFF plain tail long enough)");
  CHECK(csgi::log_escaped("") == "-");
  CHECK(csgi::log_escaped("plain") == "plain");
}

TEST_CASE("access_log_line: a combined line's quoted fields cannot be closed by the client") {
  Env env;
  env.set(csgi::keys::REQUEST_METHOD, "GET");
  env.set(csgi::keys::REQUEST_URI, "/x\" 200 1 \"-\" \"forged");
  env.set(csgi::keys::SERVER_PROTOCOL, "HTTP/2");
  env.set(csgi::keys::HTTP_USER_AGENT, "ua\"\n127.0.0.1 - - [forged]");
  std::string line = csgi::combined_log_line("127.0.0.1", env, 200, 5, 0);
  INFO(line);
  static const std::regex shape(
      R"re(^127\.0\.0\.1 - - \[[^\]]+\] "GET /x\\x22 200 1 \\x22-\\x22 \\x22forged HTTP/2" 200 5 "-" "ua\\x22\\x0A127\.0\.0\.1 - - \[forged\]"\n$)re");
  CHECK(std::regex_match(line, shape));
}
