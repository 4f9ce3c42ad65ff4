// HTTP/3's UDP socket groups and their routing program (see quic_sockets.hpp).
#include "csgi/adapters/standalone/detail/http3/quic_sockets.hpp"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "csgi/adapters/standalone/listen.hpp"

namespace csgi::standalone::detail {

namespace {

void fill_random(std::uint8_t* dest, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::getrandom(dest, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("HTTP/3: getrandom: ") + std::strerror(errno));
    }
    dest += r;
    n -= static_cast<std::size_t>(r);
  }
}

// Offsets in the UDP payload: a short header's destination connection ID at 1 (its length is the
// server's own); a long header's ID length at 5, the ID at 6.
constexpr std::uint32_t short_dcid = 1;
constexpr std::uint32_t long_dcid_len = 5;
constexpr std::uint32_t long_dcid = 6;
constexpr std::uint32_t no_index = 0xffffffff;  // out of range: the kernel's hash picks

sock_filter stmt(std::uint16_t code, std::uint32_t k) { return sock_filter{code, 0, 0, k}; }
sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  return sock_filter{code, jt, jf, k};
}

// The index a datagram goes to (quic_sockets.hpp): for a short header, the one its connection ID names
// when the check byte matches `tag`; for a long header, that one too when it is accepting (a client's
// own ID may pass the check by chance, and must not be sent to a socket no process reads), else
// accepting[(the ID's first four bytes) mod their count].
std::vector<sock_filter> route_program(std::uint8_t tag, const std::set<unsigned>& accepting) {
  std::vector<sock_filter> p = {
      stmt(BPF_LD | BPF_B | BPF_ABS, 0),                  // 0  A = the first byte
      jump(BPF_JMP | BPF_JSET | BPF_K, 0x80, 8, 0),       // 1  a long header: to 10
      stmt(BPF_LD | BPF_B | BPF_ABS, short_dcid + 1),     // 2  short: X = id[1]
      stmt(BPF_MISC | BPF_TAX, 0),                        // 3
      stmt(BPF_LD | BPF_B | BPF_ABS, short_dcid),         // 4  A = id[0] ^ id[1]
      stmt(BPF_ALU | BPF_XOR | BPF_X, 0),                 // 5
      jump(BPF_JMP | BPF_JEQ | BPF_K, tag, 0, 2),         // 6  not the server's: to 9
      stmt(BPF_LD | BPF_B | BPF_ABS, short_dcid),         // 7  the index it names
      stmt(BPF_RET | BPF_A, 0),                           // 8
      stmt(BPF_RET | BPF_K, no_index),                    // 9
  };
  if (accepting.empty()) {
    p.push_back(stmt(BPF_RET | BPF_K, no_index));  // 10
    return p;
  }
  const auto n = static_cast<std::uint32_t>(accepting.size());
  p.insert(p.end(), {
      stmt(BPF_LD | BPF_B | BPF_ABS, long_dcid_len),      // 10 long: an ID of the server's length?
      jump(BPF_JMP | BPF_JEQ | BPF_K, QuicSockets::cid_len, 0, 5),  // 11 no: to 17
      stmt(BPF_LD | BPF_B | BPF_ABS, long_dcid + 1),      // 12 X = id[1]
      stmt(BPF_MISC | BPF_TAX, 0),                        // 13
      stmt(BPF_LD | BPF_B | BPF_ABS, long_dcid),          // 14 A = id[0] ^ id[1]
      stmt(BPF_ALU | BPF_XOR | BPF_X, 0),                 // 15
      jump(BPF_JMP | BPF_JEQ | BPF_K, tag, 1, 0),         // 16 the server's: to 18
      stmt(BPF_JMP | BPF_JA, 1 + 2 * n),                  // 17 to the hash, past 18 and the list
      stmt(BPF_LD | BPF_B | BPF_ABS, long_dcid),          // 18 the index it names, if accepting
  });
  for (unsigned index : accepting) {
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, index, 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, index));
  }
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, long_dcid));  // the hash: A = id[0..3] mod n
  p.push_back(stmt(BPF_ALU | BPF_MOD | BPF_K, n));
  std::uint32_t i = 0;
  for (unsigned index : accepting) {
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, i++, 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, index));
  }
  p.push_back(stmt(BPF_RET | BPF_K, *accepting.begin()));
  return p;
}

}  // namespace

QuicSockets::QuicSockets(const std::vector<ListenSocket>& listeners, unsigned n, unsigned threads)
    : threads_(threads) {
  if (threads == 0 || n * threads > max_indexes / 2)
    throw std::runtime_error("HTTP/3: at most " + std::to_string(max_indexes / 2) +
                             " io threads in all (workers × threads) serve QUIC");
  fill_random(&tag_, 1);
  fill_random(secret_.data(), secret_.size());
  for (const ListenSocket& l : listeners) {
    if (!l.tls || !l.tcp) continue;
    Port port{l.fd, {}, sizeof(sockaddr_storage), {}};
    if (::getsockname(l.fd, reinterpret_cast<sockaddr*>(&port.addr), &port.len) != 0)
      throw std::runtime_error("HTTP/3 on " + l.display + ": " + std::strerror(errno));
    ports_.push_back(port);
  }
  try {
    for (unsigned i = 0; i < n; ++i)
      if (!add_slot()) throw std::runtime_error("HTTP/3: UDP bind: " + std::string(std::strerror(errno)));
  } catch (...) {
    for (Port& p : ports_)
      for (int fd : p.fds) ::close(fd);
    throw;
  }
}

QuicSockets::~QuicSockets() {
  for (Port& p : ports_)
    for (int fd : p.fds)
      if (fd >= 0) ::close(fd);
}

// One more slot: `threads_` sockets on every port, at indexes count_ × threads_ + t (false, with errno,
// when one fails: those bound for it close again, last first, so that each is the last of its group
// when it goes and the others' numbering stays).
bool QuicSockets::add_slot() {
  if ((count_ + 1) * threads_ > max_indexes) {
    errno = ENOSPC;
    return false;
  }
  const std::size_t before = static_cast<std::size_t>(count_) * threads_;
  auto undo = [&] {
    int e = errno;
    for (std::size_t t = threads_; t-- > 0;)
      for (Port& q : ports_)
        if (q.fds.size() > before + t) {
          ::close(q.fds.back());
          q.fds.pop_back();
        }
    errno = e;
    return false;
  };
  for (unsigned t = 0; t < threads_; ++t)
    for (Port& p : ports_) {
      int fd = ::socket(p.addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int on = 1;
      if (fd >= 0 && p.addr.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
      if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
          ::bind(fd, reinterpret_cast<const sockaddr*>(&p.addr), p.len) != 0) {
        int e = errno;
        if (fd >= 0) ::close(fd);
        errno = e;
        return undo();
      }
      p.fds.push_back(fd);
    }
  ++count_;
  return true;
}

unsigned QuicSockets::pick(const std::set<unsigned>& held, const std::set<unsigned>& accepting) {
  for (unsigned i = 0; i < count_; ++i)
    if (!held.count(i)) return i;
  if (add_slot()) return count_ - 1;
  for (unsigned i = 0; i < count_; ++i)
    if (!accepting.count(i)) return i;
  return 0;
}

void QuicSockets::serve_at(unsigned slot) {
  slot_ = slot;
  for (Port& p : ports_)
    for (std::size_t i = 0; i < p.fds.size(); ++i)
      if (i / threads_ != slot && p.fds[i] >= 0) {
        ::close(p.fds[i]);
        p.fds[i] = -1;
      }
}

bool QuicSockets::route(const std::set<unsigned>& accepting) {
  if (attached_ && accepting == routed_) return true;
  std::set<unsigned> indexes;
  for (unsigned slot : accepting)
    for (unsigned t = 0; t < threads_; ++t) indexes.insert(slot * threads_ + t);
  std::vector<sock_filter> insns = route_program(tag_, indexes);
  sock_fprog prog{static_cast<unsigned short>(insns.size()), insns.data()};
  for (const Port& p : ports_)
    if (!p.fds.empty() && ::setsockopt(p.fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
      return false;
  routed_ = accepting;
  attached_ = true;
  return true;
}

int QuicSockets::fd(int listener_fd, unsigned thread) const {
  std::size_t index = static_cast<std::size_t>(slot_) * threads_ + thread;
  for (const Port& p : ports_)
    if (p.listener_fd == listener_fd) return thread < threads_ && index < p.fds.size() ? p.fds[index] : -1;
  return -1;
}

void QuicSockets::make_cid(unsigned thread, std::uint8_t* data) const {
  auto index = static_cast<std::uint8_t>(slot_ * threads_ + thread);
  data[0] = index;
  data[1] = static_cast<std::uint8_t>(index ^ tag_);
  fill_random(data + 2, cid_len - 2);
}

}  // namespace csgi::standalone::detail
