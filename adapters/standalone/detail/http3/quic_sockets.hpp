#pragma once
// HTTP/3's UDP sockets (internal, not installed): on the port of each TLS listener, a group of
// SO_REUSEPORT sockets made by the process that forks the workers (or serves alone), one per io thread
// of each serving process, and a classic BPF program on the group (SO_ATTACH_REUSEPORT_CBPF) that sends
// each datagram to the socket of the io thread that owns its connection.
//
// The kernel numbers a group's sockets in the order they are bound, and closing one renumbers the
// last; none is closed here before the server ends, so an index names one socket (one per port) for
// the server's life. A serving process holds a slot: the indexes slot × threads + thread, one per io
// thread. Every connection ID an io thread issues starts with its index: byte 0 the index, byte 1 the
// index XOR the group's tag (a random byte). The program sends a datagram whose destination connection
// ID passes that check to the socket it names (packets of an established connection, whatever the
// client's address now; a long header only to an accepting slot's socket); any other long-header
// datagram (a client's first Initials carry an ID of its own choosing) to one of the accepting slots'
// indexes, chosen by the ID's first four bytes, so that all of a client's first Initials reach the same
// io thread; other short-header datagrams by the kernel's hash.
#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace csgi::standalone {
struct ListenSocket;
}  // namespace csgi::standalone

namespace csgi::standalone::detail {

class QuicSockets {
public:
  /// Indexes fit the connection ID's first byte; a server's first slots use at most half of them, to
  /// leave room for a restart's new processes.
  static constexpr unsigned max_indexes = 256;
  /// The length of the server's connection IDs.
  static constexpr std::size_t cid_len = 18;

  /// Binds `n` slots of `threads` sockets (indexes 0…n×threads-1) on the port of each TLS TCP listener.
  /// Throws std::runtime_error naming the address, or when n × threads > 128.
  QuicSockets(const std::vector<ListenSocket>& listeners, unsigned n, unsigned threads);
  ~QuicSockets();
  QuicSockets(const QuicSockets&) = delete;
  QuicSockets& operator=(const QuicSockets&) = delete;

  /// The slot for a new serving process: the lowest that no live process in `held` has, binding a new
  /// one on every port when all are held; when no more can be bound, one not in `accepting` (shared with
  /// a process that finishes its connections).
  unsigned pick(const std::set<unsigned>& held, const std::set<unsigned>& accepting);
  /// In the process that serves at `slot` (after its fork): the other sockets close here.
  void serve_at(unsigned slot);
  /// New connections go to the slots in `accepting` (those of the processes that take them); the program
  /// is replaced when they changed. None: the kernel's hash picks. False (errno) when the kernel refuses it.
  bool route(const std::set<unsigned>& accepting);

  /// The socket of io thread `thread` of this process for the listener with fd `listener_fd` (-1: none).
  int fd(int listener_fd, unsigned thread) const;
  /// A connection ID of io thread `thread` of this process: its index, the check byte, the rest random.
  void make_cid(unsigned thread, std::uint8_t* data) const;
  /// The Retry and stateless-reset secret, the same in every process of the server.
  const std::array<std::uint8_t, 32>& secret() const noexcept { return secret_; }

private:
  struct Port {
    int listener_fd;
    sockaddr_storage addr;
    socklen_t len;
    std::vector<int> fds;  // by index
  };
  bool add_slot();

  std::vector<Port> ports_;
  unsigned threads_;
  unsigned count_ = 0;  // slots
  unsigned slot_ = 0;
  std::uint8_t tag_ = 0;
  std::array<std::uint8_t, 32> secret_{};
  std::set<unsigned> routed_;
  bool attached_ = false;
};

}  // namespace csgi::standalone::detail
