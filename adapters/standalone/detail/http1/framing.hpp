#pragma once
// HTTP/1 response framing as bytes (RFC 9112), apart from any connection: the head, a chunk, the last
// chunk with its trailers. The HTTP/1 codec (h1_conn.hpp) appends them to its output; tests check the bytes
// without a socket.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/io.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone::detail {

/// What the head says of the connection after the response.
enum class Persistence {
  keep,         // HTTP/1.1 keep-alive: nothing to say
  keep_http10,  // an HTTP/1.0 client asked for keep-alive: "Connection: keep-alive"
  close,        // "Connection: close"
  upgrade,      // 101: the app's Connection and Upgrade fields, nothing added
};

/// Appends a response head: `status_line` ("HTTP/1.1 200 OK\r\n"), the app's fields less those the server
/// writes itself (Content-Length, Transfer-Encoding, Connection, Keep-Alive: ADP-1) and any with a bad
/// name or control characters (each reported to `errors` and dropped), Date unless the app gave one, the
/// framing (Content-Length `length`, else chunked when `chunked`), the persistence, the empty line. A
/// sealed header list (Headers::seal) goes out as its checked bytes at once.
void append_head(std::string& out, std::string_view status_line, const Headers& headers,
                 std::optional<std::uint64_t> length, bool chunked, Persistence persistence, ErrorStream& errors);

inline void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

inline void append_hex(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append(buf, r.ptr);
}

/// Appends body bytes to `out`, as one chunk (RFC 9112 §7.1) when `chunked`.
inline void append_body(std::string& out, std::string_view data, bool chunked) {
  if (chunked) {
    append_hex(out, data.size());
    out.append("\r\n").append(data).append("\r\n");
  } else {
    out.append(data);
  }
}

/// Ends a chunked body: the last chunk, the sendable trailer fields (ADP-17), the empty line.
void append_last_chunk(std::string& out, const Headers& trailers);


}  // namespace csgi::standalone::detail
