#include "csgi/core/cidr.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace csgi {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (!text.empty() && text.front() == '[') {
    if (text.back() != ']') return std::nullopt;
    text = text.substr(1, text.size() - 2);
  }
  if (auto pct = text.find('%'); pct != std::string_view::npos) text = text.substr(0, pct);
  // inet_pton reads up to a NUL: one inside the text would end the address early.
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN || text.find('\0') != std::string_view::npos)
    return std::nullopt;
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  in_addr v4;
  if (::inet_pton(AF_INET, buf, &v4) == 1) {
    a.bytes[10] = a.bytes[11] = 0xff;
    std::memcpy(a.bytes.data() + 12, &v4, 4);
    a.v4 = true;
    return a;
  }
  in6_addr v6;
  if (::inet_pton(AF_INET6, buf, &v6) != 1) return std::nullopt;
  std::memcpy(a.bytes.data(), &v6, 16);
  static constexpr std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  a.v4 = std::memcmp(a.bytes.data(), mapped, 12) == 0;
  return a;
}

std::string IpAddress::str() const {
  char buf[INET6_ADDRSTRLEN];
  if (v4) {
    ::inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof buf);
  } else {
    ::inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  }
  return buf;
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
  std::string_view addr = text;
  std::optional<unsigned> bits;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    addr = text.substr(0, slash);
    std::string_view b = text.substr(slash + 1);
    unsigned v = 0;
    auto [p, ec] = std::from_chars(b.data(), b.data() + b.size(), v);
    if (b.empty() || ec != std::errc() || p != b.data() + b.size()) return std::nullopt;
    bits = v;
  }
  if (addr.empty() || addr.front() == '[') return std::nullopt;
  auto a = IpAddress::parse(addr);
  if (!a) return std::nullopt;
  // The family as written: a dotted address counts 32 bits, any IPv6 text (IPv4-mapped too) 128.
  bool dotted = addr.find(':') == std::string_view::npos;
  unsigned max = dotted ? 32 : 128;
  unsigned b = bits.value_or(max);
  if (b > max) return std::nullopt;
  Cidr c;
  c.text_ = text;
  c.prefix_ = dotted ? b + 96 : b;
  c.net_ = a->bytes;
  for (unsigned i = 0; i < 16; ++i) {
    unsigned keep = c.prefix_ >= (i + 1) * 8 ? 8 : c.prefix_ > i * 8 ? c.prefix_ - i * 8 : 0;
    c.net_[i] &= static_cast<std::uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  return c;
}

Cidr::Cidr(std::string_view text) {
  auto c = parse(text);
  if (!c) throw std::invalid_argument("'" + std::string(text) + "' is not an IPv4 or IPv6 address or CIDR block");
  *this = std::move(*c);
}

bool Cidr::contains(const IpAddress& a) const noexcept {
  unsigned full = prefix_ / 8;
  if (std::memcmp(a.bytes.data(), net_.data(), full) != 0) return false;
  unsigned rest = prefix_ % 8;
  if (rest == 0) return true;
  auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == net_[full];
}

CidrSet::CidrSet(const std::vector<std::string>& blocks) {
  blocks_.reserve(blocks.size());
  for (const auto& b : blocks) blocks_.emplace_back(b);
}

bool CidrSet::contains(const IpAddress& a) const noexcept {
  for (const auto& b : blocks_)
    if (b.contains(a)) return true;
  return false;
}

bool CidrSet::contains(std::string_view address) const noexcept {
  auto a = IpAddress::parse(address);
  return a && contains(*a);
}

}  // namespace csgi
