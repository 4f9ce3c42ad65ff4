#pragma once
// The PROXY protocol (HAProxy's doc/proxy-protocol.txt, versions 1 and 2) without a socket: parse() reads
// the header a trusted proxy sends before its client's bytes, and ProxyTrust says which peers must send
// one. The connection (proxy_header.cpp) peeks at its first bytes, calls parse(), and consumes exactly
// the header, so what follows (a request, a TLS handshake) is read as if the header was never there.
// The fuzz target tests/fuzz/fuzz_proxy_protocol.cpp feeds parse() the same way. Not installed API.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/cidr.hpp"

namespace csgi::standalone::detail {

namespace proxy_protocol {

/// A version 1 header is at most this long, CRLF included (the spec's worst case).
inline constexpr std::size_t v1_max = 107;
/// A version 2 header (16 bytes + addresses + TLVs) longer than this is refused. HAProxy's own headers,
/// SSL TLVs with a client certificate's CN included, stay far below it.
inline constexpr std::size_t v2_max = 4096;
/// No header is longer than this: what the connection peeks at most.
inline constexpr std::size_t max_header = v2_max;

enum class Status {
  absent,     // the bytes are not the start of a PROXY header
  need_more,  // the start of one: more bytes are needed to tell
  invalid,    // a PROXY header that breaks the spec (`why` says how)
  complete,   // a whole, valid header of `length` bytes
};

/// What a complete header says.
struct Header {
  int version = 0;     // 1 or 2
  bool local = false;  // v2 LOCAL: the proxy's own connection (a health check); nothing else is set
  /// AF_INET or AF_INET6 when the header names a TCP connection's endpoints; 0 otherwise (v1 UNKNOWN, v2
  /// LOCAL, AF_UNSPEC, AF_UNIX or datagrams): then the connection's own addresses stay.
  int family = 0;
  std::array<std::uint8_t, 16> src{}, dst{};  // network order; 4 bytes used for AF_INET
  std::uint16_t src_port = 0, dst_port = 0;
  bool ssl = false;  // v2 PP2_TYPE_SSL with PP2_CLIENT_SSL: the client reached the proxy over TLS
};

struct Result {
  Status status = Status::need_more;
  std::size_t length = 0;  // bytes of the header, when complete
  const char* why = "";    // the reason, when invalid
  Header header;
};

/// Reads the header at the start of `bytes` (all the connection has received so far). Pure: no state
/// between calls; call it again with more bytes after need_more. Bytes after the header are not read.
Result parse(std::string_view bytes) noexcept;

/// True when `bytes` starts with a whole PROXY signature ("PROXY " or version 2's twelve bytes), the
/// point from which a peer that is not trusted is refused.
bool has_signature(std::string_view bytes) noexcept;

}  // namespace proxy_protocol

/// Which peers must start their connections with a PROXY header (--proxy-protocol, --trusted-proxy): the
/// blocks are core's CidrSet, so an IPv4 block also matches a peer that a dual-stack socket reports as
/// ::ffff:a.b.c.d.
class ProxyTrust {
public:
  ProxyTrust() = default;
  /// `blocks`: "10.0.0.0/8", "2001:db8::/32", or single addresses. Throws std::invalid_argument for a
  /// malformed block, and when `enabled` comes without any block (or blocks without `enabled`).
  ProxyTrust(bool enabled, const std::vector<std::string>& blocks);
  bool enabled() const noexcept { return enabled_; }
  /// `address` as inet_ntop writes it (a connection's REMOTE_ADDR).
  bool trusts(std::string_view address) const noexcept { return blocks_.contains(address); }

private:
  bool enabled_ = false;
  CidrSet blocks_;
};

}  // namespace csgi::standalone::detail
