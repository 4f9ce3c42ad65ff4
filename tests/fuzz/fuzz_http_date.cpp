// HTTP date parsing (core/http_date.hpp): never crashes; whatever parses formats back to a parsable date.
#include <string_view>

#include "csgi/core/http_date.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto t = csgi::parse_http_date(in);
  if (t && *t >= 0 && *t < 253402300800) {
    auto again = csgi::parse_http_date(csgi::http_date(*t));
    csgi::fuzz::check(again && *again == *t, "format/parse round trip");
  }
  return 0;
}
