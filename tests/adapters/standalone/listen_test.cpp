#include "csgi/adapters/standalone/listen.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <stdexcept>

using csgi::standalone::ListenAddress;
using csgi::standalone::parse_listen;

TEST_CASE("parse_listen: the --listen forms") {
  auto a = parse_listen("127.0.0.1:8080");
  CHECK((a.kind == ListenAddress::Kind::tcp && a.host == "127.0.0.1" && a.port == "8080"));
  auto b = parse_listen("[::1]:80");
  CHECK((b.host == "::1" && b.port == "80"));
  auto c = parse_listen(":5000");
  CHECK((c.host.empty() && c.port == "5000"));
  auto d = parse_listen("5001");
  CHECK((d.host.empty() && d.port == "5001"));
  auto e = parse_listen("unix:/run/x.sock");
  CHECK((e.kind == ListenAddress::Kind::unix_path && e.path == "/run/x.sock"));
}

TEST_CASE("parse_listen: https:// marks a TLS listener, http:// a plain one") {
  auto a = parse_listen("https://127.0.0.1:8443");
  CHECK((a.tls && a.host == "127.0.0.1" && a.port == "8443"));
  auto b = parse_listen("https://[::1]:443/");
  CHECK((b.tls && b.host == "::1" && b.port == "443"));
  auto c = parse_listen("http://:8080");
  CHECK((!c.tls && c.host.empty() && c.port == "8080"));
  CHECK_FALSE(parse_listen("127.0.0.1:80").tls);
  CHECK_THROWS_AS(parse_listen("https://"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("ftp://127.0.0.1:21"), std::invalid_argument);
}

TEST_CASE("parse_listen: malformed values are refused") {
  CHECK_THROWS_AS(parse_listen("localhost"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("::1:80"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("[::1]80"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("host:99999"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("host:http"), std::invalid_argument);
  CHECK_THROWS_AS(parse_listen("unix:"), std::invalid_argument);
}

TEST_CASE("open_listen: IPv6 loopback on port 0 reports the real port") {
  auto s = csgi::standalone::open_listen(parse_listen("[::1]:0"), false);
  CHECK(s.display.rfind("[::1]:", 0) == 0);
  CHECK(s.server_port != "0");
  ::close(s.fd);
}
