#pragma once
// Field rules the framed protocols share (HTTP/2 and HTTP/3, internal): a request's Content-Length value,
// and the fields that belong to an HTTP/1 connection alone.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

/// A Content-Length value that is one well-formed number.
inline std::optional<std::uint64_t> parse_length(std::string_view v) {
  std::uint64_t n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size()) return std::nullopt;
  return n;
}

/// Fields RFC 9113 §8.2.2 and RFC 9114 §4.2 forbid on HTTP/2 and HTTP/3: an app's response may still
/// carry them (HTTP/1 habits); they are not sent.
inline bool connection_specific(std::string_view name) {
  return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "proxy-connection") ||
         iequals(name, "transfer-encoding") || iequals(name, "upgrade") || iequals(name, "te");
}

}  // namespace csgi::standalone::detail
