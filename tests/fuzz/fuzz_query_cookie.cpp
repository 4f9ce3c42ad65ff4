// Query strings, url-encoded forms and Cookie headers (core/query.hpp, core/cookie.hpp): only
// csgi::HttpError may escape, and what parses rebuilds into a query that parses to the same pairs.
#include <string_view>

#include "csgi/core/cookie.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/query.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  csgi::parse_cookies(in);
  try {
    csgi::Params p = csgi::parse_query(in);
    csgi::Params again = csgi::parse_query(csgi::build_query(p));
    csgi::fuzz::check(again.size() == p.size(), "build_query/parse_query keeps the pair count");
  } catch (const csgi::HttpError&) {
  }
  return 0;
}
