// Percent-decoding (core/percent.hpp): throws only BadRequest, and encode → decode is the identity.
// Dot-segment removal: never grows a path, leaves no dot segment, is idempotent, refuses only a "..".
#include <string>
#include <string_view>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  bool bad = csgi::has_bad_escape(in);
  try {
    std::string out = csgi::percent_decode(in, size % 2 == 0);
    csgi::fuzz::check(!bad, "decoded input that has_bad_escape rejects");
    csgi::fuzz::check(out.size() <= in.size(), "decoding never grows");
  } catch (const csgi::BadRequest&) {
    csgi::fuzz::check(bad, "threw on input has_bad_escape accepts");
  }
  if (!in.empty() && in.front() == '/') {  // dot-segment removal: shrinks, leaves none, changes nothing more
    std::string path(in);
    try {
      path.resize(csgi::remove_dot_segments(path.data(), path.size()));
      csgi::fuzz::check(path.size() <= in.size() && !path.empty() && path.front() == '/', "stays a path, never grows");
      csgi::fuzz::check(!csgi::has_dot_segment(path), "no dot segment left");
      csgi::fuzz::check(csgi::has_dot_segment(in) || path == in, "a path without dot segments is unchanged");
      std::string again = path;
      again.resize(csgi::remove_dot_segments(again.data(), again.size()));
      csgi::fuzz::check(again == path, "idempotent");
    } catch (const csgi::BadRequest&) {
      csgi::fuzz::check(in.find("..") != std::string_view::npos, "only a '..' is refused");
    }
  }
  csgi::fuzz::check(csgi::percent_decode(csgi::percent_encode(in)) == in, "encode/decode round trip");
  csgi::fuzz::check(csgi::percent_decode(csgi::percent_encode(in, csgi::uri::unreserved_slash)) == in, "encode(keep /)/decode round trip");
  return 0;
}
