// Datagrams out of a UDP socket: GSO, and one by one where the kernel does not take it.
#include "csgi/adapters/standalone/detail/http3/datagrams.hpp"

#include <linux/udp.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace csgi::standalone::detail::quic {

namespace {
bool send_segmented(int fd, const sockaddr* to, socklen_t tolen, const std::uint8_t* data, std::size_t n,
                    std::uint16_t segment, int& err) noexcept {
  iovec iov{const_cast<std::uint8_t*>(data), n};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(std::uint16_t))] = {};
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr*>(to);
  msg.msg_namelen = tolen;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = IPPROTO_UDP;
  cm->cmsg_type = UDP_SEGMENT;
  cm->cmsg_len = CMSG_LEN(sizeof segment);
  std::memcpy(CMSG_DATA(cm), &segment, sizeof segment);
  ssize_t r;
  do r = ::sendmsg(fd, &msg, 0);
  while (r < 0 && errno == EINTR);
  err = r < 0 ? errno : 0;
  return r >= 0;
}
}  // namespace

std::size_t send_datagrams(UdpOut& out, const sockaddr* to, socklen_t tolen, const std::uint8_t* data, std::size_t n,
                           std::size_t segment) noexcept {
  if (n == 0 || segment == 0) return 0;
  std::size_t count = (n + segment - 1) / segment;
  if (count > 1 && out.gso) {
    int err = 0;
    if (send_segmented(out.fd, to, tolen, data, n, static_cast<std::uint16_t>(segment), err)) return count;
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) return 0;
    out.gso = false;  // EIO (no checksum offload), EINVAL or ENOPROTOOPT (no GSO): one by one from now on
  }
  std::size_t sent = 0;
  for (std::size_t at = 0; at < n; at += segment) {
    std::size_t len = std::min(segment, n - at);
    ssize_t r;
    do r = ::sendto(out.fd, data + at, len, 0, to, tolen);
    while (r < 0 && errno == EINTR);
    if (r >= 0) ++sent;
  }
  return sent;
}

}  // namespace csgi::standalone::detail::quic
