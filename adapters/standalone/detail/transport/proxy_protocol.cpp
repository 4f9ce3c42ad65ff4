#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace csgi::standalone::detail {

namespace proxy_protocol {

namespace {

constexpr std::string_view v1_signature = "PROXY ";
constexpr char v2_bytes[12] = {'\r', '\n', '\r', '\n', '\0', '\r', '\n', 'Q', 'U', 'I', 'T', '\n'};
constexpr std::string_view v2_signature(v2_bytes, sizeof v2_bytes);
constexpr std::size_t v2_fixed = 16;  // signature, version and command, family, length

constexpr std::uint8_t pp2_type_crc32c = 0x03;
constexpr std::uint8_t pp2_type_ssl = 0x20;
constexpr std::uint8_t pp2_client_ssl = 0x01;

enum class Match { no, partial, full };

Match match(std::string_view bytes, std::string_view signature) noexcept {
  std::size_t n = std::min(bytes.size(), signature.size());
  if (bytes.substr(0, n) != signature.substr(0, n)) return Match::no;
  return n == signature.size() ? Match::full : Match::partial;
}

Result fail(const char* why) noexcept {
  Result r;
  r.status = Status::invalid;
  r.why = why;
  return r;
}

std::uint16_t be16(std::string_view b, std::size_t at) noexcept {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(b[at]) << 8) | static_cast<unsigned char>(b[at + 1]));
}

// An address in the family's text form (IPv4: four decimal numbers without leading zeros; IPv6 as
// inet_pton reads it) into `out`.
bool v1_address(std::string_view text, int family, std::array<std::uint8_t, 16>& out) noexcept {
  char buf[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof buf) return false;
  // inet_pton reads up to a NUL: a NUL inside the field would end the address early.
  if (text.find('\0') != std::string_view::npos) return false;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return ::inet_pton(family, buf, out.data()) == 1;
}

// A port: decimal 0..65535, no leading zero.
bool v1_port(std::string_view text, std::uint16_t& out) noexcept {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return false;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v > 65535) return false;
  out = static_cast<std::uint16_t>(v);
  return true;
}

// "TCP4 SRC DST SPORT DPORT" (the line after "PROXY ", without CRLF): fields separated by exactly one space.
bool v1_fields(std::string_view line, Header& h) noexcept {
  std::string_view f[5];
  for (int i = 0; i < 5; ++i) {
    std::size_t sp = line.find(' ');
    if ((sp == std::string_view::npos) != (i == 4)) return false;
    f[i] = line.substr(0, sp);
    if (f[i].empty()) return false;
    line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  }
  h.family = f[0] == "TCP4" ? AF_INET : AF_INET6;
  return v1_address(f[1], h.family, h.src) && v1_address(f[2], h.family, h.dst) && v1_port(f[3], h.src_port) &&
         v1_port(f[4], h.dst_port);
}

Result parse_v1(std::string_view bytes) noexcept {
  std::size_t end = std::string_view::npos;
  for (std::size_t i = v1_signature.size(); i < bytes.size() && i < v1_max; ++i) {
    if (bytes[i] == '\n') return fail("a bare LF in a version 1 header");
    if (bytes[i] != '\r') continue;
    if (i + 1 == bytes.size()) break;
    if (bytes[i + 1] != '\n') return fail("a bare CR in a version 1 header");
    end = i;
    break;
  }
  if (end == std::string_view::npos || end + 2 > v1_max) {
    if (bytes.size() >= v1_max) return fail("a version 1 header longer than 107 bytes");
    return Result{};
  }
  Result r;
  r.header.version = 1;
  std::string_view line = bytes.substr(v1_signature.size(), end - v1_signature.size());
  if (line == "UNKNOWN" || line.starts_with("UNKNOWN ")) {
    // The rest of the line is ignored: the connection's own addresses stay.
  } else if (line.starts_with("TCP4 ") || line.starts_with("TCP6 ")) {
    if (!v1_fields(line, r.header)) return fail("malformed addresses or ports in a version 1 header");
  } else {
    return fail("a version 1 header for a protocol other than TCP4, TCP6 or UNKNOWN");
  }
  r.status = Status::complete;
  r.length = end + 2;
  return r;
}

// CRC32c (RFC 4960 Appendix B) of `bytes` with the four bytes at `zeroed` taken as zeros.
std::uint32_t crc32c(std::string_view bytes, std::size_t zeroed) noexcept {
  std::uint32_t crc = 0xffffffffu;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::uint8_t b = i >= zeroed && i < zeroed + 4 ? 0 : static_cast<std::uint8_t>(bytes[i]);
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

// A sequence of TLVs (type, 16-bit length, value) that exactly fills `tlvs`.
template <class F>
bool each_tlv(std::string_view tlvs, F&& f) noexcept {
  while (!tlvs.empty()) {
    if (tlvs.size() < 3) return false;
    std::size_t n = be16(tlvs, 1);
    if (tlvs.size() - 3 < n) return false;
    if (!f(static_cast<std::uint8_t>(tlvs[0]), tlvs.substr(3, n), tlvs.data())) return false;
    tlvs.remove_prefix(3 + n);
  }
  return true;
}

// The TLVs after the address block: PP2_TYPE_SSL sets `ssl`; PP2_TYPE_CRC32C is checked; others skipped.
const char* v2_tlvs(std::string_view header, std::size_t from, Header& h) noexcept {
  const char* why = nullptr;
  bool ok = each_tlv(header.substr(from), [&](std::uint8_t type, std::string_view value, const char* at) {
    if (type == pp2_type_ssl) {
      if (value.size() < 5) return (why = "a version 2 SSL TLV shorter than 5 bytes"), false;
      if (!each_tlv(value.substr(5), [](std::uint8_t, std::string_view, const char*) { return true; }))
        return (why = "malformed sub-TLVs in a version 2 SSL TLV"), false;
      h.ssl = (static_cast<std::uint8_t>(value[0]) & pp2_client_ssl) != 0;
    } else if (type == pp2_type_crc32c) {
      if (value.size() != 4) return (why = "a version 2 CRC32C TLV that is not 4 bytes"), false;
      std::size_t field = static_cast<std::size_t>(at - header.data()) + 3;
      std::uint32_t sent = (std::uint32_t{be16(value, 0)} << 16) | be16(value, 2);
      if (crc32c(header, field) != sent) return (why = "a version 2 header whose CRC32C does not match"), false;
    }
    return true;
  });
  if (ok) return nullptr;
  return why ? why : "a truncated TLV in a version 2 header";
}

Result parse_v2(std::string_view bytes) noexcept {
  if (bytes.size() < v2_fixed) return Result{};
  auto ver_cmd = static_cast<std::uint8_t>(bytes[12]);
  if ((ver_cmd >> 4) != 2) return fail("a version 2 signature with another version");
  unsigned command = ver_cmd & 0x0f;
  if (command > 1) return fail("a version 2 header with an unknown command");
  std::size_t total = v2_fixed + be16(bytes, 14);
  if (total > v2_max) return fail("a version 2 header longer than 4096 bytes");
  if (bytes.size() < total) return Result{};
  Result r;
  r.status = Status::complete;
  r.length = total;
  r.header.version = 2;
  if (command == 0) {  // LOCAL: the block, family included, is ignored
    r.header.local = true;
    return r;
  }
  auto fam = static_cast<std::uint8_t>(bytes[13]);
  if (fam == 0x00) return r;  // UNSPEC: the block is ignored (as HAProxy does: its TLVs cannot be located)
  std::size_t addresses = 0;
  switch (fam) {
    case 0x11: case 0x12: addresses = 12; break;    // TCP, UDP over IPv4
    case 0x21: case 0x22: addresses = 36; break;    // TCP, UDP over IPv6
    case 0x31: case 0x32: addresses = 216; break;   // UNIX stream, datagram
    default: return fail("a version 2 header with an unknown address family or transport");
  }
  if (total - v2_fixed < addresses) return fail("a version 2 address block shorter than its family needs");
  std::string_view header = bytes.substr(0, total);
  std::size_t ip = fam == 0x11 ? 4 : fam == 0x21 ? 16 : 0;
  if (ip) {
    r.header.family = ip == 4 ? AF_INET : AF_INET6;
    std::memcpy(r.header.src.data(), header.data() + v2_fixed, ip);
    std::memcpy(r.header.dst.data(), header.data() + v2_fixed + ip, ip);
    r.header.src_port = be16(header, v2_fixed + 2 * ip);
    r.header.dst_port = be16(header, v2_fixed + 2 * ip + 2);
  }
  if (const char* why = v2_tlvs(header, v2_fixed + addresses, r.header)) return fail(why);
  return r;
}

}  // namespace

Result parse(std::string_view bytes) noexcept {
  if (bytes.empty()) return Result{};
  switch (match(bytes, v1_signature)) {
    case Match::partial: return Result{};
    case Match::full: return parse_v1(bytes);
    case Match::no: break;
  }
  switch (match(bytes, v2_signature)) {
    case Match::partial: return Result{};
    case Match::full: return parse_v2(bytes);
    case Match::no: break;
  }
  Result r;
  r.status = Status::absent;
  return r;
}

bool has_signature(std::string_view bytes) noexcept {
  return match(bytes, v1_signature) == Match::full || match(bytes, v2_signature) == Match::full;
}

}  // namespace proxy_protocol

ProxyTrust::ProxyTrust(bool enabled, const std::vector<std::string>& blocks) : enabled_(enabled) {
  if (enabled && blocks.empty())
    throw std::invalid_argument("the PROXY protocol needs the trusted proxies' addresses (--trusted-proxy CIDR)");
  if (!enabled && !blocks.empty())
    throw std::invalid_argument("trusted proxies are for the PROXY protocol: give --proxy-protocol with them");
  blocks_ = CidrSet(blocks);
}

}  // namespace csgi::standalone::detail
