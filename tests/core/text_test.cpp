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

namespace {

bool reference_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    auto lower = [](unsigned char c) { return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c; };
    if (lower(x) != lower(y)) return false;
  }
  return true;
}

bool reference_has_ctl(std::string_view s, bool allow_tab) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 || u == 0x7f) && !(allow_tab && c == '\t')) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("iequals agrees with a byte-by-byte comparison for every pair of bytes at every position", "[text]") {
  // Words of 8 bytes are compared at once: each position of a 1-, 8- and 13-byte string, in the first word
  // and the tail, with the other bytes letters in either case.
  for (std::size_t len : {1u, 8u, 13u}) {
    for (std::size_t at = 0; at < len; ++at) {
      std::string a(len, 'k'), b(len, 'K');
      for (int x = 0; x < 256; ++x) {
        for (int y = 0; y < 256; ++y) {
          a[at] = static_cast<char>(x);
          b[at] = static_cast<char>(y);
          if (csgi::iequals(a, b) != reference_iequals(a, b)) {
            INFO("len " << len << " at " << at << " bytes " << x << " " << y);
            CHECK(csgi::iequals(a, b) == reference_iequals(a, b));
          }
        }
      }
    }
  }
  CHECK(csgi::iequals("Transfer-Encoding", "TRANSFER-ENCODING"));
  CHECK_FALSE(csgi::iequals("Transfer-Encoding", "Transfer-Encodinf"));
  CHECK_FALSE(csgi::iequals("[\\]^_", "{|}~\x7f"));  // each pair differs by 0x20 only: not letters
  CHECK(csgi::iequals("", ""));
}

TEST_CASE("has_ctl agrees with a byte-by-byte scan for every byte at every position", "[text]") {
  for (std::size_t len : {1u, 7u, 8u, 9u, 17u}) {
    for (std::size_t at = 0; at < len; ++at) {
      std::string s(len, 'v');
      for (int c = 0; c < 256; ++c) {
        s[at] = static_cast<char>(c);
        for (bool tab : {false, true}) {
          if (csgi::has_ctl(s, tab) != reference_has_ctl(s, tab)) {
            INFO("len " << len << " at " << at << " byte " << c << " allow_tab " << tab);
            CHECK(csgi::has_ctl(s, tab) == reference_has_ctl(s, tab));
          }
        }
      }
    }
  }
  static_assert(csgi::has_ctl("a\x01", false) && !csgi::has_ctl("a\tb", true));  // still constexpr
}

TEST_CASE("hex_value and the hex digit tables agree", "[text]") {
  for (int v = 0; v < 16; ++v) {
    CHECK(csgi::hex_value(csgi::hex_upper[v]) == v);
    CHECK(csgi::hex_value(csgi::hex_lower[v]) == v);
  }
  int digits = 0;
  for (int c = 0; c < 256; ++c) digits += csgi::hex_value(static_cast<char>(c)) >= 0;
  CHECK(digits == 22);
  CHECK(csgi::hex_value('g') == -1);
  CHECK(csgi::hex_value('/') == -1);
  CHECK(csgi::hex_value(':') == -1);
}

TEST_CASE("trim_ows: spaces and tabs at both ends only", "[text]") {
  CHECK(csgi::trim_ows(" \t a b \t") == "a b");
  CHECK(csgi::trim_ows("\t\t") == "");
  CHECK(csgi::trim_ows("") == "");
  CHECK(csgi::trim_ows("\r\na\n") == "\r\na\n");  // only OWS
}

TEST_CASE("list_has_token: a comma-separated list holds a token, case-insensitively", "[text]") {
  CHECK(csgi::list_has_token("Accept-Encoding, Origin", "origin"));
  CHECK(csgi::list_has_token(" a ,\tb ", "b"));
  CHECK(csgi::list_has_token("*", "*"));
  CHECK_FALSE(csgi::list_has_token("Origins, XOrigin", "Origin"));
  CHECK_FALSE(csgi::list_has_token("", "a"));
}
