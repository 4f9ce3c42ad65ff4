#pragma once
// Datagrams out of a UDP socket in batches (internal, not installed): the packets of one connection's
// write pass go out together, with UDP GSO (one sendmsg carrying a run of datagrams of one size, the
// last of which may be shorter, that the kernel splits) where the kernel takes it, else one by one.
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace csgi::standalone::detail::quic {

/// A UDP socket's sending side. `gso` goes false for good the first time the kernel refuses a
/// segmented send (a device without checksum offload answers EIO): from then on datagrams go one by one.
struct UdpOut {
  int fd = -1;
  bool gso = true;
};

/// Sends `n` bytes at `data` to `to` as datagrams of `segment` bytes (the last may be shorter): with
/// GSO in one system call, else one call per datagram. A datagram the socket cannot take now (EAGAIN)
/// is lost as on the network; QUIC's loss recovery sends its frames again. Returns the datagrams sent.
std::size_t send_datagrams(UdpOut& out, const sockaddr* to, socklen_t tolen, const std::uint8_t* data, std::size_t n,
                           std::size_t segment) noexcept;

/// The datagrams of one write pass: each is written at room() (at most `packet` bytes) and then add()ed.
/// A run of equal sizes stays together; a shorter datagram ends the run (GSO's last segment), a longer
/// one, a full buffer or the kernel's segment limit sends what was gathered first.
template <std::size_t packet>
class DatagramBatch {
 public:
  static constexpr std::size_t max_segments = 64;     // the kernel's UDP_MAX_SEGMENTS
  static constexpr std::size_t capacity = 63 * 1024;  // under the 64 KiB of one UDP datagram, headers included

  std::uint8_t* room() noexcept { return buf_.data() + used_; }

  /// The datagram of `n` bytes now at room(); `send(data, bytes, segment)` takes each complete run.
  template <class Send>
  void add(std::size_t n, Send&& send) {
    if (n > segment_) split(n, send);
    if (count_ == 0) segment_ = n;
    used_ += n;
    ++count_;
    if (n < segment_ || count_ == max_segments || used_ + packet > capacity) flush(send);
  }

  /// Sends what was gathered before the datagram of `n` bytes now at room(), which is then the first
  /// of a new run (add() it next): a datagram for another address.
  template <class Send>
  void split(std::size_t n, Send&& send) {
    if (count_ == 0) return;
    send(buf_.data(), used_, segment_);
    std::memmove(buf_.data(), buf_.data() + used_, n);
    used_ = count_ = 0;
  }

  template <class Send>
  void flush(Send&& send) {
    if (count_ > 0) send(buf_.data(), used_, segment_);
    used_ = count_ = 0;
  }

 private:
  std::array<std::uint8_t, capacity> buf_;
  std::size_t used_ = 0;
  std::size_t count_ = 0;
  std::size_t segment_ = 0;
};

}  // namespace csgi::standalone::detail::quic
