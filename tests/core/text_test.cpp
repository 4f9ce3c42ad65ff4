// The shared text helpers: RFC 9110 token characters and case-insensitive comparison.
#include "csgi/core/text.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "csgi/core/cookie.hpp"

TEST_CASE("is_tchar is exactly RFC 9110's tchar set", "[text]") {
  std::string expected = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  for (int c = 0; c < 256; ++c) {
    INFO(c);
    CHECK(csgi::is_tchar(static_cast<char>(c)) == (c != 0 && expected.find(static_cast<char>(c)) != std::string::npos));
  }
}

TEST_CASE("is_token: non-empty and tchar only; NUL is not a token character", "[text]") {
  CHECK(csgi::is_token("GET"));
  CHECK(csgi::is_token("X-Custom_Header.1~"));
  CHECK_FALSE(csgi::is_token(""));
  CHECK_FALSE(csgi::is_token("Bad Name"));
  CHECK_FALSE(csgi::is_token("a:b"));
  CHECK_FALSE(csgi::is_token(std::string_view("a\0b", 3)));
  CHECK_FALSE(csgi::is_token("caf\xc3\xa9"));
  CHECK(csgi::is_cookie_name("session_id"));
  CHECK_FALSE(csgi::is_cookie_name("a=b"));
}

TEST_CASE("iequals, istarts_with, iends_with compare ASCII case-insensitively", "[text]") {
  CHECK(csgi::iequals("Content-Length", "content-length"));
  CHECK_FALSE(csgi::iequals("a", "ab"));
  CHECK_FALSE(csgi::iequals("@", "`"));  // differ by 0x20 but are not letters
  CHECK(csgi::istarts_with("Multipart/Form-Data; boundary=x", "multipart/"));
  CHECK_FALSE(csgi::istarts_with("multi", "multipart/"));
  CHECK(csgi::iends_with("application/LD+JSON", "+json"));
  CHECK_FALSE(csgi::iends_with("json", "+json"));
}
