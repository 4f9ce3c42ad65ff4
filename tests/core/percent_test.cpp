// Percent-encoding and decoding: the one encoder and decoder every layer uses, with the byte sets each
// use keeps.
#include "csgi/core/percent.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "csgi/core/http_error.hpp"

using namespace csgi;
using namespace std::string_literals;

TEST_CASE("escape_at: a '%' and two hex digits, any case; nothing else", "[percent]") {
  CHECK(escape_at("%41", 0) == 0x41);
  CHECK(escape_at("a%fFb", 1) == 0xff);
  CHECK(escape_at("%00", 0) == 0);
  CHECK(escape_at("%4", 0) == -1);      // cut short
  CHECK(escape_at("%4g", 0) == -1);
  CHECK(escape_at("%%41", 0) == -1);
  CHECK(escape_at("x41", 0) == -1);     // no '%'
  CHECK(escape_at("%41", 3) == -1);     // past the end
  CHECK(has_bad_escape("a%2"));
  CHECK(has_bad_escape("%zz%41"));
  CHECK_FALSE(has_bad_escape("a%20b%2F"));
  CHECK_FALSE(has_bad_escape(""));
}

TEST_CASE("percent_decode: strict; percent_decode_lenient keeps what is no escape", "[percent]") {
  CHECK(percent_decode("a%20b%2f") == "a b/");
  CHECK(percent_decode("a+b", true) == "a b");
  CHECK(percent_decode("a+b") == "a+b");
  CHECK(percent_decode("%00") == "\0"s);
  CHECK_THROWS_AS(percent_decode("100%"), BadRequest);
  CHECK_THROWS_AS(percent_decode("%g1"), BadRequest);
  CHECK(percent_decode_lenient("100%") == "100%");
  CHECK(percent_decode_lenient("%g1%41%") == "%g1A%");
  CHECK(percent_decode_lenient("a+b%3Bc") == "a+b;c");  // no form encoding: '+' stays
  CHECK(percent_decode_lenient("%25%32%35") == "%25");  // decoded once
}

TEST_CASE("percent_encode: each set keeps its bytes, everything else as upper-case %XX", "[percent]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (const ByteSet* keep : {&uri::unreserved, &uri::unreserved_slash, &uri::path, &uri::query}) {
    std::string out = percent_encode(all, *keep);
    CHECK(percent_decode(out) == all);
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto c = static_cast<unsigned char>(out[i]);
      INFO(i);
      if (c == '%') {
        REQUIRE(i + 2 < out.size());
        CHECK(escape_at(out, i) >= 0);
        CHECK_FALSE((*keep)[escape_at(out, i)]);
        CHECK(std::string("0123456789ABCDEF").find(out[i + 1]) != std::string::npos);
        CHECK(std::string("0123456789ABCDEF").find(out[i + 2]) != std::string::npos);
        i += 2;
      } else {
        CHECK((*keep)[c]);
      }
    }
  }
  CHECK(percent_encode("a b/c~") == "a%20b%2Fc~");
  CHECK(percent_encode("a b/c~", uri::unreserved_slash) == "a%20b/c~");
  CHECK(percent_encode("/a b;x=1:@!", uri::path) == "/a%20b;x=1:@!");
  CHECK(percent_encode("q?a=1&b", uri::query) == "q?a=1&b");
  CHECK(percent_encode("%41", uri::path) == "%2541");
  CHECK(percent_encode("") == "");
}

TEST_CASE("percent_encode_to: appends; with keep_escapes a valid escape passes as it is", "[percent]") {
  std::string out = "/x?";
  percent_encode_to(out, "a=%41 b%zz%", uri::query, true);
  CHECK(out == "/x?a=%41%20b%25zz%25");
  out.clear();
  percent_encode_to(out, "a=%41", uri::query);
  CHECK(out == "a=%2541");
}

TEST_CASE("alnum_and: letters, digits and the extra bytes only", "[percent]") {
  constexpr ByteSet s = alnum_and("-");
  static_assert(s['a'] && s['Z'] && s['0'] && s['9'] && s['-'] && !s['_'] && !s['/'] && !s[0] && !s[0xff]);
  int n = 0;
  for (bool b : s) n += b;
  CHECK(n == 63);
}
