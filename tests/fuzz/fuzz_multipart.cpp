// multipart/form-data (core/multipart.hpp): the first line is the Content-Type, the rest the body. Only
// csgi::HttpError may escape; small limits keep uploads in memory or in short-lived temp files.
#include <string>
#include <string_view>

#include "csgi/core/http_error.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/multipart.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view content_type = csgi::fuzz::take(in, '\n');
  try {
    std::string boundary = csgi::multipart_boundary(content_type);
    csgi::StringInput body{std::string(in)};
    csgi::MultipartLimits limits;
    limits.max_parts = 64;
    limits.memory_threshold = 512;
    limits.max_body_size = 1 << 20;
    csgi::parse_multipart(body, boundary, limits);
  } catch (const csgi::HttpError&) {
  }
  return 0;
}
