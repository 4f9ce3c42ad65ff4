// IPv4/IPv6 addresses and CIDR blocks: the one parser and matcher of the middleware's address lists and
// the standalone server's --trusted-proxy.
#include "csgi/core/cidr.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using namespace csgi;
using namespace std::string_literals;

TEST_CASE("cidr: IPv4, IPv6, mapped addresses, prefixes, malformed blocks", "[cidr]") {
  CidrSet s({"10.0.0.0/8", "192.168.1.7", "2001:db8::/32", "fe80::/10"});
  CHECK(s.contains("10.255.3.4"));
  CHECK(s.contains("::ffff:10.1.2.3"));
  CHECK_FALSE(s.contains("11.0.0.1"));
  CHECK(s.contains("192.168.1.7"));
  CHECK_FALSE(s.contains("192.168.1.8"));
  CHECK(s.contains("2001:db8:1::5"));
  CHECK(s.contains("[2001:db8::1]"));
  CHECK(s.contains("fe80::1%eth0"));
  CHECK_FALSE(s.contains("2001:db9::1"));
  CHECK_FALSE(s.contains("not-an-ip"));
  CHECK_FALSE(s.contains(""));
  CHECK(CidrSet({"0.0.0.0/0"}).contains("1.2.3.4"));
  CHECK_FALSE(CidrSet({"0.0.0.0/0"}).contains("2001:db8::1"));
  CHECK(CidrSet({"::/0"}).contains("1.2.3.4"));
  CHECK(CidrSet({"10.1.2.3/31"}).contains("10.1.2.2"));
  CHECK_FALSE(CidrSet({"10.1.2.3/31"}).contains("10.1.2.4"));
  CHECK(CidrSet({"10.1.2.3/12"}).contains("10.15.0.1"));  // host bits of a block are ignored
  CHECK(CidrSet({"fe80::1%eth0/64"}).contains("fe80::2"));  // a zone is ignored
  for (std::string bad : {"10.0.0.0/33", "::/129", "10.0.0/8", "1.2.3.4/", "x/8", "1.2.3.4/8x", "[::1]/128", "[::1]",
                          "", "/8", "example.com", "10.0.0.0/-1", "10.0.0.0/+8"}) {
    INFO(bad);
    CHECK_FALSE(Cidr::parse(bad));
    CHECK_THROWS_AS(Cidr(bad), std::invalid_argument);
  }
}

TEST_CASE("cidr: an IPv4-mapped block counts its prefix in IPv6 bits", "[cidr]") {
  Cidr mapped("::ffff:10.0.0.0/104");  // the IPv6 spelling of 10.0.0.0/8
  CHECK(mapped.prefix() == 104);
  CHECK(mapped.contains(*IpAddress::parse("10.9.8.7")));
  CHECK_FALSE(mapped.contains(*IpAddress::parse("11.0.0.1")));
  CHECK(Cidr("10.0.0.0/8").prefix() == 104);
  // A /8 written in IPv6 is ::/8, not 10.0.0.0/8.
  CHECK_FALSE(Cidr("::ffff:10.0.0.0/8").contains(*IpAddress::parse("2001:db8::1")));
  CHECK(Cidr("::ffff:10.0.0.0/8").contains(*IpAddress::parse("11.0.0.1")));
}

TEST_CASE("cidr: a NUL ends no address early", "[cidr]") {
  // inet_pton stops at a NUL: without the check "10.0.0.1\0junk" would read as 10.0.0.1.
  CHECK_FALSE(IpAddress::parse("10.0.0.1\0junk"s));
  CHECK_FALSE(IpAddress::parse("::1\0"s));
  CHECK_FALSE(Cidr::parse("10.0.0.1\0/8"s));
  CHECK_FALSE(CidrSet({"10.0.0.0/8"}).contains("10.0.0.1\0"s));
}

TEST_CASE("IpAddress: text forms", "[cidr]") {
  CHECK(IpAddress::parse("10.1.2.3")->str() == "10.1.2.3");
  CHECK(IpAddress::parse("::ffff:10.1.2.3")->str() == "10.1.2.3");
  CHECK(IpAddress::parse("[2001:db8::1]")->str() == "2001:db8::1");
  CHECK(IpAddress::parse("2001:DB8:0::1")->str() == "2001:db8::1");
  CHECK_FALSE(IpAddress::parse("[::1"));
  CHECK_FALSE(IpAddress::parse(""));
}
