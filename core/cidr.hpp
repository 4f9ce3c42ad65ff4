#pragma once
/// IPv4/IPv6 addresses and CIDR blocks: the one parser and matcher for every address list (the access,
/// metrics and reverse_proxy middleware, the standalone server's --trusted-proxy).
///
/// Addresses are kept as 16 bytes; IPv4 addresses are stored IPv4-mapped (::ffff:a.b.c.d), so an IPv4
/// block also matches a client reported as "::ffff:10.0.0.1" by a dual-stack socket.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace csgi {

struct IpAddress {
  std::array<std::uint8_t, 16> bytes{};
  bool v4 = false;  // written as dotted IPv4 (or IPv4-mapped IPv6)

  /// Parses "1.2.3.4", "::1", "[::1]" or "fe80::1%eth0" (the zone is ignored); nullopt when malformed
  /// (a NUL anywhere included).
  static std::optional<IpAddress> parse(std::string_view text);
  /// The canonical text form (IPv4 dotted for v4 and IPv4-mapped addresses).
  std::string str() const;
};

class Cidr {
public:
  /// "10.0.0.0/8", "2001:db8::/32", or a single address (a /32 or /128); the prefix length counts in the
  /// family the address is written in ("::ffff:10.0.0.0/104" is the IPv6 form of "10.0.0.0/8"). Host bits
  /// past the prefix and an IPv6 zone are ignored. nullopt when malformed: a bracketed address, a NUL, a
  /// prefix that is not decimal digits or is longer than the family's.
  static std::optional<Cidr> parse(std::string_view text);
  /// As parse(); throws std::invalid_argument (naming `text`) when malformed.
  explicit Cidr(std::string_view text);

  bool contains(const IpAddress& a) const noexcept;
  const std::string& text() const noexcept { return text_; }
  /// The prefix length over the 16-byte form (an IPv4 block's plus 96).
  unsigned prefix() const noexcept { return prefix_; }

private:
  Cidr() = default;
  std::array<std::uint8_t, 16> net_{};
  unsigned prefix_ = 128;
  std::string text_;
};

/// A list of CIDR blocks; `contains` is true when any block holds the address.
class CidrSet {
public:
  CidrSet() = default;
  /// Throws std::invalid_argument for a malformed entry.
  explicit CidrSet(const std::vector<std::string>& blocks);
  bool contains(const IpAddress& a) const noexcept;
  bool contains(std::string_view address) const noexcept;
  bool empty() const noexcept { return blocks_.empty(); }

private:
  std::vector<Cidr> blocks_;
};

}  // namespace csgi
