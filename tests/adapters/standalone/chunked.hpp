#pragma once
// A request body in HTTP/1.1 chunked framing, for the tests that send one.
#include <cstdio>
#include <string>
#include <string_view>

namespace csgi::standalone_test {

/// `data` as chunks of `piece` bytes (the last one shorter), then the last-chunk and an empty trailer.
inline std::string chunked(std::string_view data, std::size_t piece) {
  std::string out;
  char size[24];
  for (std::size_t i = 0; i < data.size(); i += piece) {
    std::string_view p = data.substr(i, piece);
    std::snprintf(size, sizeof size, "%zx\r\n", p.size());
    out.append(size).append(p).append("\r\n");
  }
  return out + "0\r\n\r\n";
}

}  // namespace csgi::standalone_test
