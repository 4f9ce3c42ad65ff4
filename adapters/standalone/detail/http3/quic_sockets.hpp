#pragma once
// HTTP/3's UDP sockets (internal, not installed): on the port of each TLS listener, a group of
// SO_REUSEPORT sockets made by the process that forks the workers (or serves alone), and a classic BPF
// program on the group (SO_ATTACH_REUSEPORT_CBPF) that sends each datagram to the socket of the
// process that owns its connection.
//
// The kernel numbers a group's sockets in the order they are bound, and closing one renumbers the
// last; none is closed here before the server ends, so an index names one socket (one per port) for
// the server's life. A serving process holds one index, and every connection ID it issues starts with
// it: byte 0 the index, byte 1 the index XOR the group's tag (a random byte). The program sends a
// datagram whose destination connection ID passes that check to the socket it names (packets of an
// established connection, whatever the client's address now); any other datagram that may start a
// connection (a long header: a client's first Initials carry an ID of its own choosing) to one of the
// accepting indexes, chosen by the ID's first four bytes, so that all of a client's first Initials reach
// the same process.
#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

namespace csgi::standalone {
struct ListenSocket;
struct ServerOptions;
}  // namespace csgi::standalone

namespace csgi::standalone::detail {

class QuicSockets {
public:
  /// Indexes fit the connection ID's first byte.
  static constexpr unsigned max_indexes = 256;
  /// The length of the server's connection IDs.
  static constexpr std::size_t cid_len = 18;

  /// Binds `n` sockets (indexes 0…n-1) on the port of each TLS TCP listener. Throws std::runtime_error
  /// naming the address, or when `n` leaves no room for a restart's new processes (n > 128).
  QuicSockets(const std::vector<ListenSocket>& listeners, unsigned n);
  ~QuicSockets();
  QuicSockets(const QuicSockets&) = delete;
  QuicSockets& operator=(const QuicSockets&) = delete;

  /// The index for a new serving process: the lowest that no live process in `held` has, binding a new
  /// one on every port when all are held; when no more can be bound, one not in `accepting` (shared with
  /// a process that finishes its connections).
  unsigned pick(const std::set<unsigned>& held, const std::set<unsigned>& accepting);
  /// In the process that serves at `index` (after its fork): the other sockets close here.
  void serve_at(unsigned index);
  /// New connections go to `accepting` (the indexes of the processes that take them); the program is
  /// replaced when they changed. None: the kernel's hash picks. False (errno) when the kernel refuses it.
  bool route(const std::set<unsigned>& accepting);

  /// The socket of the listener with fd `listener_fd` at this process's index (-1: none).
  int fd(int listener_fd) const;
  std::uint8_t index() const noexcept { return index_; }
  /// A connection ID of this process: its index, the check byte, the rest random.
  void make_cid(std::uint8_t* data) const;
  /// The Retry and stateless-reset secret, the same in every process of the server.
  const std::array<std::uint8_t, 32>& secret() const noexcept { return secret_; }

private:
  struct Port {
    int listener_fd;
    sockaddr_storage addr;
    socklen_t len;
    std::vector<int> fds;  // by index
  };
  bool add_index();

  std::vector<Port> ports_;
  unsigned count_ = 0;
  std::uint8_t index_ = 0;
  std::uint8_t tag_ = 0;
  std::array<std::uint8_t, 32> secret_{};
  std::set<unsigned> routed_;
  bool attached_ = false;
};

}  // namespace csgi::standalone::detail
