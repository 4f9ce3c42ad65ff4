#include "csgi/adapters/standalone/detail/http3/datagrams.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using csgi::standalone::detail::quic::DatagramBatch;
using csgi::standalone::detail::quic::send_datagrams;
using csgi::standalone::detail::quic::UdpOut;

namespace {

struct Run {
  std::size_t bytes;
  std::size_t segment;
};

template <std::size_t packet>
void add(DatagramBatch<packet>& b, std::size_t n, std::vector<Run>& runs) {
  std::fill(b.room(), b.room() + n, static_cast<std::uint8_t>(n));
  b.add(n, [&](const std::uint8_t*, std::size_t bytes, std::size_t segment) { runs.push_back({bytes, segment}); });
}

struct UdpPair {
  int tx = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int rx = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  UdpPair() {
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(rx, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    socklen_t len = sizeof to;
    REQUIRE(::getsockname(rx, reinterpret_cast<sockaddr*>(&to), &len) == 0);
  }
  ~UdpPair() {
    ::close(tx);
    ::close(rx);
  }
  // What arrived, one string per datagram (a bounded wait for each).
  std::vector<std::string> received(std::size_t expected) {
    std::vector<std::string> got;
    char buf[65536];
    while (got.size() < expected) {
      pollfd p{rx, POLLIN, 0};
      if (::poll(&p, 1, 2000) != 1) break;
      ssize_t n = ::recv(rx, buf, sizeof buf, 0);
      if (n < 0) break;
      got.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
};

std::string datagrams(std::size_t count, std::size_t segment, std::size_t last) {
  std::string s;
  for (std::size_t i = 0; i < count; ++i) s.append(i + 1 == count ? last : segment, static_cast<char>('a' + i % 26));
  return s;
}

}  // namespace

TEST_CASE("datagram batch: a run of equal sizes goes together; a shorter one ends it, a longer one starts a new one") {
  DatagramBatch<1452> b;
  std::vector<Run> runs;
  for (int i = 0; i < 3; ++i) add(b, 1444, runs);
  CHECK(runs.empty());
  add(b, 500, runs);  // the run's last, shorter segment
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].bytes == 3 * 1444 + 500);
  CHECK(runs[0].segment == 1444);
  add(b, 1000, runs);
  add(b, 1444, runs);  // longer: the 1000 goes alone, the 1444 starts the next run
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].bytes == 1000);
  add(b, 1444, runs);
  b.flush([&](const std::uint8_t* data, std::size_t bytes, std::size_t segment) {
    runs.push_back({bytes, segment});
    CHECK(data[0] == static_cast<std::uint8_t>(1444 & 0xff));  // the moved datagram is at the front
  });
  REQUIRE(runs.size() == 3);
  CHECK(runs[2].bytes == 2 * 1444);
  CHECK(runs[2].segment == 1444);
  b.flush([&](const std::uint8_t*, std::size_t, std::size_t) { FAIL("an empty batch sends nothing"); });
}

TEST_CASE("datagram batch: at most the kernel's segments per send, and under 64 KiB") {
  DatagramBatch<1452> b;
  std::vector<Run> runs;
  for (int i = 0; i < 100; ++i) add(b, 1452, runs);
  REQUIRE(runs.size() == 2);  // 44 datagrams of 1452 fill what one send may carry
  CHECK(runs[0].bytes == 44 * 1452);
  CHECK(runs[1].bytes == 44 * 1452);
  DatagramBatch<1452> small;
  std::vector<Run> small_runs;
  for (int i = 0; i < 70; ++i) add(small, 20, small_runs);
  REQUIRE(small_runs.size() == 1);
  CHECK(small_runs[0].bytes == DatagramBatch<1452>::max_segments * 20);
}

TEST_CASE("send_datagrams: the receiver gets each datagram as it was, with GSO and one by one") {
  for (bool gso : {true, false}) {
    UdpPair u;
    UdpOut out{u.tx, gso};
    std::string data = datagrams(3, 1000, 300);
    CHECK(send_datagrams(out, reinterpret_cast<sockaddr*>(&u.to), sizeof u.to,
                         reinterpret_cast<const std::uint8_t*>(data.data()), data.size(), 1000) == 3);
    auto got = u.received(3);
    REQUIRE(got.size() == 3);
    CHECK(got[0] == data.substr(0, 1000));
    CHECK(got[1] == data.substr(1000, 1000));
    CHECK(got[2] == data.substr(2000));
    CHECK(out.gso == gso);
  }
}

TEST_CASE("send_datagrams: a send the kernel refuses to segment goes one by one, and GSO stays off") {
  UdpPair u;
  int big = 1 << 20;
  ::setsockopt(u.rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  UdpOut out{u.tx, true};
  // More segments than the kernel splits in one send (UDP_MAX_SEGMENTS: 64, 128 in later kernels): EINVAL.
  std::string data = datagrams(130, 10, 10);
  std::size_t sent = send_datagrams(out, reinterpret_cast<sockaddr*>(&u.to), sizeof u.to,
                                    reinterpret_cast<const std::uint8_t*>(data.data()), data.size(), 10);
  CHECK(sent == 130);
  CHECK_FALSE(out.gso);
  auto got = u.received(130);
  REQUIRE(got.size() == 130);
  CHECK(got[129] == data.substr(1290));
}
