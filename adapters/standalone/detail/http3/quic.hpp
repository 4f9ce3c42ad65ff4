#pragma once
// QUIC for HTTP/3 (internal, not installed): the transport under the HTTP/3 codec (h3.hpp). ngtcp2 and its
// GnuTLS helper stay in quic_conn.hpp and its .cpp files, behind QuicStreams (what the codec asks of a connection) and QuicApp
// (what a connection asks of the codec), so that the library versions can move without touching the codec.
//
//   QuicEndpoint  this process's UDP socket on the port of an https:// listener (io thread 0; one of
//                 the port's group, quic_sockets.hpp): the datagrams, the
//                 connection IDs of its connections, Retry (address validation), the certificates
//                 (GnuTLS, the same --tls-cert/--tls-key files), graceful stop.
//   a connection  one ngtcp2 connection and its TLS session (ALPN h3, no 0-RTT), its expiry timer, the
//                 packets it writes; its streams' bytes go to and come from its QuicApp.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace csgi::standalone {
struct ListenSocket;
}

namespace csgi::standalone::detail {

class IoThread;
struct Shared;

/// Bytes of a stream to send (the layout of ngtcp2_vec and nghttp3_vec).
struct QuicVec {
  std::uint8_t* base;
  std::size_t len;
};

/// What the protocol over QUIC may ask of its connection, on the io thread.
class QuicStreams {
public:
  virtual ~QuicStreams() = default;
  /// Opens a unidirectional stream of the server's; false when the peer allows none.
  virtual bool open_uni(std::int64_t& id) = 0;
  /// `n` bytes of stream `id` were consumed: the peer may send as many more (flow control).
  virtual void consumed(std::int64_t id, std::size_t n) = 0;
  /// Stops the stream both ways with an application error code.
  virtual void reset(std::int64_t id, std::uint64_t code) = 0;
  /// Asks the peer to stop sending on the stream (STOP_SENDING), whose response may still go out.
  virtual void stop_reading(std::int64_t id, std::uint64_t code) = 0;
  /// The peer may open one more request stream (MAX_STREAMS).
  virtual void allow_stream() = 0;
  /// Something may be ready to send: the connection writes packets (once, after the current event).
  virtual void wake() = 0;
  /// Closes the connection with an application error code (after its last packets).
  virtual void close(std::uint64_t code) = 0;
  /// The TLS session's cipher suite (IANA name) and the SNI host name ("" for none), once the
  /// handshake is done.
  virtual std::string tls_cipher() const = 0;
  virtual std::string tls_sni() const = 0;
  virtual const char* peer_addr() const = 0;
  virtual const char* peer_port() const = 0;
};

/// What a connection asks of the protocol over it (HTTP/3), on the io thread. A false return, or an
/// error code from `error()`, closes the connection.
class QuicApp {
public:
  virtual ~QuicApp() = default;
  /// The handshake is done: the protocol's own streams may open.
  virtual bool start() = 0;
  virtual bool received(std::int64_t id, const std::uint8_t* data, std::size_t n, bool fin) = 0;
  virtual bool acked(std::int64_t id, std::uint64_t n) = 0;
  virtual bool stream_closed(std::int64_t id, std::uint64_t code) = 0;
  /// The peer reset the stream (or asked us to stop sending on it).
  virtual bool stream_reset(std::int64_t id) = 0;
  /// The peer's window of a blocked stream opened.
  virtual bool unblocked(std::int64_t id) = 0;
  /// The next bytes to send: a stream id (-1: none), `fin`, up to `max` vectors; the count, or -1.
  virtual long pending(std::int64_t& id, bool& fin, QuicVec* v, std::size_t max) = 0;
  /// `n` bytes of stream `id` went into a packet (or the stream's window is shut: blocked()).
  virtual bool wrote(std::int64_t id, std::size_t n) = 0;
  virtual void blocked(std::int64_t id) = 0;
  /// The stream's sending side is shut (reset by the peer): drop what it has to send.
  virtual void write_shut(std::int64_t id) = 0;
  /// Graceful stop: the protocol's GOAWAY.
  virtual void shutdown() = 0;
  /// Requests still open (the graceful stop waits for them).
  virtual std::size_t busy() const = 0;
  /// The app is still at work on a request (its call, or a Writer not closed): the connection is kept
  /// from going idle meanwhile.
  virtual bool app_at_work() const = 0;
  /// When the protocol's own limits end the connection (the request-body and send timeouts):
  /// time_point::max() for none. Asked after each turn of the connection.
  virtual std::chrono::steady_clock::time_point deadline() = 0;
  /// That time came: the connection closes with error().
  virtual void expired() = 0;
  /// The error code a failed call left (the protocol's).
  virtual std::uint64_t error() const = 0;
  /// The connection is gone: nothing more reaches the transport.
  virtual void detach() noexcept = 0;
};

/// Makes the protocol of a new connection.
using QuicAppMaker = std::shared_ptr<QuicApp> (*)(QuicStreams& streams, IoThread& thread, const ListenSocket& listener);

class QuicEndpoint {
public:
  virtual ~QuicEndpoint() = default;
  /// Graceful stop: GOAWAY on every connection; the socket closes once their requests are done, or at
  /// the graceful timeout.
  virtual void stop() = 0;
  /// Re-reads the certificate files (SIGHUP): new connections take them, open ones keep theirs. On
  /// failure the previous ones stay and the reason is returned ("" = done).
  virtual std::string reload() = 0;
};

/// The UDP endpoint of `listener` (a TLS one) on `thread`: this process's socket of the listener's group
/// (Shared::quic), on the same address and port. Throws
/// std::runtime_error naming the file or the address on failure.
std::unique_ptr<QuicEndpoint> open_quic(IoThread& thread, const ListenSocket& listener, QuicAppMaker maker);

}  // namespace csgi::standalone::detail
