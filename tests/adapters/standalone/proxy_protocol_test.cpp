// The PROXY protocol parser and the trusted-proxy blocks (adapters/standalone/detail/transport/proxy_protocol.hpp), without
// sockets. The connection's use of them is tested on real sockets by tests/adapters/cli/test_proxy_protocol.py.
#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

using namespace csgi::standalone::detail;
namespace pp = csgi::standalone::detail::proxy_protocol;
using pp::Status;

std::string v2_signature() { return std::string("\r\n\r\n\0\r\nQUIT\n", 12); }

std::string be16(unsigned v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

// A version 2 header: signature, version/command byte, family byte, then `block` (addresses and TLVs).
std::string v2(unsigned char ver_cmd, unsigned char fam, const std::string& block) {
  return v2_signature() + static_cast<char>(ver_cmd) + static_cast<char>(fam) + be16(block.size()) + block;
}

std::string tlv(unsigned char type, const std::string& value) { return static_cast<char>(type) + be16(value.size()) + value; }

// 192.0.2.1:56324 → 198.51.100.7:443
std::string tcp4_block() {
  return std::string("\xc0\x00\x02\x01", 4) + std::string("\xc6\x33\x64\x07", 4) + be16(56324) + be16(443);
}

std::string tcp6_block() {
  in6_addr src{}, dst{};
  ::inet_pton(AF_INET6, "2001:db8::1", &src);
  ::inet_pton(AF_INET6, "2001:db8::2", &dst);
  return std::string(reinterpret_cast<char*>(&src), 16) + std::string(reinterpret_cast<char*>(&dst), 16) + be16(1234) +
         be16(8443);
}

std::string text(int family, const std::array<std::uint8_t, 16>& a) {
  char buf[INET6_ADDRSTRLEN];
  ::inet_ntop(family, a.data(), buf, sizeof buf);
  return buf;
}

// CRC32c (Castagnoli), table-driven: an implementation apart from the parser's.
std::uint32_t crc32c(const std::string& s) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char b : s) crc = (crc >> 8) ^ table[(crc ^ b) & 0xff];
  return crc ^ 0xffffffffu;
}

}  // namespace

TEST_CASE("proxy protocol v1: TCP4, and the request bytes after it are not part of the header", "[proxy_protocol]") {
  std::string head = "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n";
  auto r = pp::parse(head + "GET / HTTP/1.1\r\n");
  REQUIRE(r.status == Status::complete);
  CHECK(r.length == head.size());
  CHECK(r.header.version == 1);
  CHECK(r.header.family == AF_INET);
  CHECK(text(AF_INET, r.header.src) == "192.0.2.1");
  CHECK(text(AF_INET, r.header.dst) == "198.51.100.7");
  CHECK(r.header.src_port == 56324);
  CHECK(r.header.dst_port == 443);
  CHECK_FALSE(r.header.ssl);
}

TEST_CASE("proxy protocol v1: TCP6 and UNKNOWN", "[proxy_protocol]") {
  auto r = pp::parse("PROXY TCP6 2001:db8::1 2001:db8::2 1234 8443\r\n");
  REQUIRE(r.status == Status::complete);
  CHECK(r.header.family == AF_INET6);
  CHECK(text(AF_INET6, r.header.src) == "2001:db8::1");
  CHECK(r.header.src_port == 1234);
  CHECK(r.header.dst_port == 8443);
  for (std::string u : {"PROXY UNKNOWN\r\n", "PROXY UNKNOWN ffff::1 ffff::2 65535 65535\r\n", "PROXY UNKNOWN whatever\r\n"}) {
    auto k = pp::parse(u + "GET");
    REQUIRE(k.status == Status::complete);
    CHECK(k.length == u.size());
    CHECK(k.header.family == 0);
  }
}

TEST_CASE("proxy protocol v1: 107 bytes at most", "[proxy_protocol]") {
  std::string longest = "PROXY UNKNOWN " + std::string(107 - 16, 'x') + "\r\n";
  REQUIRE(longest.size() == 107);
  CHECK(pp::parse(longest).status == Status::complete);
  std::string over = "PROXY UNKNOWN " + std::string(107 - 15, 'x') + "\r\n";
  CHECK(pp::parse(over).status == Status::invalid);
  CHECK(pp::parse(over.substr(0, 107)).status == Status::invalid);  // no CRLF within 107 bytes: refused at once
  CHECK(pp::parse(over.substr(0, 106)).status == Status::need_more);
}

TEST_CASE("proxy protocol v1: malformed lines are invalid", "[proxy_protocol]") {
  for (std::string bad : {
           "PROXY TCP4 192.0.2.01 198.51.100.7 1 2\r\n",    // leading zero in an address
           "PROXY TCP4 192.0.2.1 198.51.100.7 01 2\r\n",    // leading zero in a port
           "PROXY TCP4 192.0.2.1 198.51.100.7 1 65536\r\n", // port out of range
           "PROXY TCP4 192.0.2.1  198.51.100.7 1 2\r\n",    // two spaces
           "PROXY TCP4 192.0.2.1 198.51.100.7 1\r\n",       // a field missing
           "PROXY TCP4 192.0.2.1 198.51.100.7 1 2 3\r\n",   // a field too many
           "PROXY TCP4 192.0.2.1 198.51.100.7 1 2 \r\n",    // a trailing space
           "PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n",    // IPv6 under TCP4
           "PROXY TCP6 192.0.2.1 198.51.100.7 1 2\r\n",     // IPv4 under TCP6
           "PROXY TCP4 192.0.2.1 198.51.100.7 1 2\n",       // LF alone
           "PROXY TCP4 192.0.2.1 198.51.100.7 1 2\rX\n",    // CR alone
           "PROXY UDP4 192.0.2.1 198.51.100.7 1 2\r\n",     // not TCP4/TCP6/UNKNOWN
           "PROXY \r\n",
           "PROXY TCP4\r\n",
           "PROXY UNKNOWNX\r\n",
           "PROXY tcp4 192.0.2.1 198.51.100.7 1 2\r\n",
       }) {
    INFO(bad);
    auto r = pp::parse(bad);
    CHECK(r.status == Status::invalid);
    CHECK(std::string(r.why).size() > 0);
  }
  // A NUL inside an address: inet_pton would stop there and take "192.0.2.17" (found by fuzz_proxy_protocol).
  using namespace std::string_literals;
  for (std::string bad : {"PROXY TCP4 192.0.2.17\0\0 198.51.100.7 1 2\r\n"s, "PROXY TCP6 ::1\0 ::2 1 2\r\n"s}) {
    auto r = pp::parse(bad);
    CHECK(r.status == Status::invalid);
  }
  CHECK_THROWS_AS(ProxyTrust(true, {"10.0.0.1\0/8"s}), std::invalid_argument);
}

TEST_CASE("proxy protocol: every strict prefix of a header needs more bytes", "[proxy_protocol]") {
  std::string ssl = tlv(0x20, std::string("\x01\0\0\0\0", 5) + tlv(0x21, "TLSv1.3"));
  for (const std::string& whole :
       {std::string("PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n"), v2(0x21, 0x11, tcp4_block() + ssl),
        v2(0x20, 0x00, ""), v2(0x21, 0x21, tcp6_block())}) {
    REQUIRE(pp::parse(whole).status == Status::complete);
    for (std::size_t n = 0; n < whole.size(); ++n) {
      INFO(n);
      CHECK(pp::parse(whole.substr(0, n)).status == Status::need_more);
    }
  }
}

TEST_CASE("proxy protocol: bytes that are no header are absent", "[proxy_protocol]") {
  for (std::string other : {"GET / HTTP/1.1\r\n", "POST /", "PROXYX", "PROXY", "\r\nGET / HTTP/1.1\r\n", "\x16\x03\x01",
                            "\r\n\r\n\x01"}) {
    INFO(other);
    auto r = pp::parse(other);
    bool prefix = std::string("PROXY ").starts_with(other) || v2_signature().starts_with(other);
    CHECK(r.status == (prefix ? Status::need_more : Status::absent));
    CHECK_FALSE(pp::has_signature(other));
  }
  CHECK(pp::has_signature("PROXY "));
  CHECK(pp::has_signature(v2_signature()));
}

TEST_CASE("proxy protocol v2: PROXY over TCP4 and TCP6", "[proxy_protocol]") {
  std::string h = v2(0x21, 0x11, tcp4_block());
  auto r = pp::parse(h + "GET / HTTP/1.1\r\n");
  REQUIRE(r.status == Status::complete);
  CHECK(r.length == h.size());
  CHECK(r.header.version == 2);
  CHECK_FALSE(r.header.local);
  CHECK(r.header.family == AF_INET);
  CHECK(text(AF_INET, r.header.src) == "192.0.2.1");
  CHECK(text(AF_INET, r.header.dst) == "198.51.100.7");
  CHECK(r.header.src_port == 56324);
  CHECK(r.header.dst_port == 443);

  auto r6 = pp::parse(v2(0x21, 0x21, tcp6_block()));
  REQUIRE(r6.status == Status::complete);
  CHECK(r6.header.family == AF_INET6);
  CHECK(text(AF_INET6, r6.header.src) == "2001:db8::1");
  CHECK(text(AF_INET6, r6.header.dst) == "2001:db8::2");
  CHECK(r6.header.src_port == 1234);
  CHECK(r6.header.dst_port == 8443);
}

TEST_CASE("proxy protocol v2: TLVs, PP2_TYPE_SSL sets ssl when the client used TLS", "[proxy_protocol]") {
  std::string alpn = tlv(0x01, "h2"), authority = tlv(0x02, "example.com"), noop = tlv(0x04, "");
  std::string ssl_on = tlv(0x20, std::string("\x01\0\0\0\0", 5) + tlv(0x21, "TLSv1.3") + tlv(0x23, "TLS_AES_128_GCM_SHA256"));
  std::string ssl_off = tlv(0x20, std::string("\x00\0\0\0\0", 5));
  auto r = pp::parse(v2(0x21, 0x11, tcp4_block() + alpn + authority + noop + ssl_on));
  REQUIRE(r.status == Status::complete);
  CHECK(r.header.ssl);
  CHECK(r.header.family == AF_INET);
  auto off = pp::parse(v2(0x21, 0x11, tcp4_block() + ssl_off + tlv(0xe0, "custom")));
  REQUIRE(off.status == Status::complete);
  CHECK_FALSE(off.header.ssl);
}

TEST_CASE("proxy protocol v2: LOCAL, UNSPEC, UNIX and UDP keep the connection's own addresses", "[proxy_protocol]") {
  // LOCAL: the block, family included, is ignored (even a family no PROXY command may carry).
  for (const std::string& h : {v2(0x20, 0x00, ""), v2(0x20, 0x11, tcp4_block()), v2(0x20, 0x77, "junk")}) {
    auto r = pp::parse(h);
    REQUIRE(r.status == Status::complete);
    CHECK(r.header.local);
    CHECK(r.header.family == 0);
    CHECK(r.length == h.size());
  }
  for (const std::string& h : {v2(0x21, 0x00, ""), v2(0x21, 0x00, "ignored"), v2(0x21, 0x31, std::string(216, 'u')),
                               v2(0x21, 0x12, tcp4_block()), v2(0x21, 0x22, tcp6_block())}) {
    auto r = pp::parse(h);
    REQUIRE(r.status == Status::complete);
    CHECK_FALSE(r.header.local);
    CHECK(r.header.family == 0);
  }
}

TEST_CASE("proxy protocol v2: malformed headers are invalid", "[proxy_protocol]") {
  std::string block = tcp4_block();
  for (const std::string& bad : {
           v2(0x11, 0x11, block),                                   // version 1 in a v2 header
           v2(0x22, 0x11, block),                                   // command 2
           v2(0x21, 0x41, block),                                   // family 4
           v2(0x21, 0x13, block),                                   // transport 3
           v2(0x21, 0x11, block.substr(0, 11)),                     // address block too short
           v2(0x21, 0x21, block),                                   // IPv6 needs 36 bytes
           v2(0x21, 0x11, block + "\x01\x00"),                     // a TLV cut in its header
           v2(0x21, 0x11, block + tlv(0x01, "h2").substr(0, 4)),    // a TLV cut in its value
           v2(0x21, 0x11, block + tlv(0x20, std::string(4, '\1'))), // SSL TLV shorter than 5 bytes
           v2(0x21, 0x11, block + tlv(0x20, std::string("\x01\0\0\0\0", 5) + "\x21\x00")),  // bad sub-TLV
           v2(0x21, 0x11, block + tlv(0x03, "abc")),                // CRC32C not 4 bytes
       }) {
    auto r = pp::parse(bad);
    INFO(r.why);
    CHECK(r.status == Status::invalid);
  }
}

TEST_CASE("proxy protocol v2: over the size limit is refused from its first 16 bytes", "[proxy_protocol]") {
  std::string fixed = v2_signature() + "\x21\x11" + be16(pp::v2_max - 16 + 1);
  CHECK(pp::parse(fixed).status == Status::invalid);
  std::string at_limit = v2(0x21, 0x11, tcp4_block() + tlv(0x04, std::string(pp::v2_max - 16 - 12 - 3, '\0')));
  REQUIRE(at_limit.size() == pp::v2_max);
  CHECK(pp::parse(at_limit).status == Status::complete);
}

TEST_CASE("proxy protocol v2: PP2_TYPE_CRC32C is checked", "[proxy_protocol]") {
  REQUIRE(crc32c("123456789") == 0xe3069283u);  // RFC 3720's check value
  std::string h = v2(0x21, 0x11, tcp4_block() + tlv(0x01, "h2") + tlv(0x03, std::string(4, '\0')));
  std::uint32_t c = crc32c(h);
  std::string good = h;
  for (int i = 0; i < 4; ++i) good[good.size() - 4 + i] = static_cast<char>(c >> (24 - 8 * i));
  CHECK(pp::parse(good).status == Status::complete);
  std::string bad = good;
  bad[17] ^= 1;  // one address bit
  CHECK(pp::parse(bad).status == Status::invalid);
}

TEST_CASE("ProxyTrust: IPv4 and IPv6 blocks, IPv4-mapped peers", "[proxy_protocol]") {
  ProxyTrust t(true, {"127.0.0.1/32", "10.0.0.0/8", "2001:db8::/32", "::1"});
  CHECK(t.enabled());
  CHECK(t.trusts("127.0.0.1"));
  CHECK_FALSE(t.trusts("127.0.0.2"));
  CHECK(t.trusts("10.200.3.4"));
  CHECK(t.trusts("::ffff:10.1.2.3"));
  CHECK_FALSE(t.trusts("11.0.0.1"));
  CHECK(t.trusts("2001:db8:ffff::7"));
  CHECK_FALSE(t.trusts("2001:db9::1"));
  CHECK(t.trusts("::1"));
  CHECK_FALSE(t.trusts("::2"));
  CHECK_FALSE(t.trusts(""));
  CHECK_FALSE(t.trusts("not an address"));
  CHECK(ProxyTrust(true, {"0.0.0.0/0"}).trusts("203.0.113.9"));
  CHECK_FALSE(ProxyTrust(true, {"0.0.0.0/0"}).trusts("2001:db8::1"));
  CHECK(ProxyTrust(true, {"10.1.2.3/12"}).trusts("10.15.0.1"));  // host bits of a block are ignored
  CHECK_FALSE(ProxyTrust().enabled());
}

TEST_CASE("ProxyTrust: malformed blocks and a missing list are refused", "[proxy_protocol]") {
  for (std::string bad : {"10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/", "10.0.0.0/x", "example.com", "", "[::1]"}) {
    INFO(bad);
    CHECK_THROWS_AS(ProxyTrust(true, {bad}), std::invalid_argument);
  }
  CHECK_THROWS_AS(ProxyTrust(true, {}), std::invalid_argument);
  CHECK_THROWS_AS(ProxyTrust(false, {"10.0.0.0/8"}), std::invalid_argument);
}
