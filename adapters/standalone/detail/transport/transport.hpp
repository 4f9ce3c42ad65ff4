#pragma once
// One accepted connection's transport (internal, not installed): the socket, its TLS session, the PROXY
// header before the connection's own bytes, who the peer is, the deadline the io thread's sweeper checks,
// and the codec that speaks HTTP on it. Every connection starts with the HTTP/1 codec (H1Conn), which
// hands the connection to the HTTP/2 codec (H2Conn) when the first bytes are the HTTP/2 preface, the TLS
// handshake chose h2, or an `Upgrade: h2c` request asks for it; both are the transport's children, and
// reach each other only through it.
//
// The transport is what the io thread lists and keeps alive (a shared_ptr); a codec's own references are
// aliases of it (Codec::self()), so a handler holding a codec holds the whole connection.
//
// Reads and writes are the socket's, or on a TLS listener the TlsSession's (tls_io.cpp): one branch on
// tls_, so the plain path makes the same syscalls as without TLS. The handshake is made by the first
// read, bounded by the header timeout like a slow request head.
#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"
#include "csgi/adapters/standalone/detail/transport/socket.hpp"

namespace csgi::standalone::detail {

using boost::system::error_code;
class Transport;
class H1Conn;
class H2Conn;

/// What the transport hosts: the HTTP/1 or the HTTP/2 codec. The transport calls the one in charge.
class Codec {
public:
  explicit Codec(Transport& t) noexcept : tr_(t) {}
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  /// Transport::read_some's completion (operation_aborted after the transport closed).
  virtual void on_read(error_code ec, std::size_t n) = 0;
  /// Transport::wait_writable's completion.
  virtual void on_writable(error_code) {}
  /// Transport::write_all's completion.
  virtual void on_written(error_code) {}
  /// The deadline passed.
  virtual void on_timeout() = 0;
  /// A graceful stop begins (`hurry`: a second stop request: idle connections go now).
  virtual void on_shutdown(bool hurry) = 0;
  /// The transport closed: what is in progress ends (writers fail, streams are cut short).
  virtual void on_close() noexcept = 0;
  /// The app code this connection ran on the io thread froze (a fault, a request timeout): answer
  /// `status` if nothing was sent yet, in one non-blocking write, and return "METHOD URI" for the log.
  virtual std::string abandon(int status) noexcept = 0;
  /// The same from a frozen app pool thread: the io thread, which runs on, answers in the app's place
  /// and then sets `answered`.
  virtual std::string abandon_pooled(int status, std::atomic<bool>& answered) noexcept = 0;

protected:
  Transport& tr_;
};

class Transport final : public std::enable_shared_from_this<Transport> {
public:
  Transport(IoThread& t, Socket s, const ListenSocket& l);
  ~Transport();
  void start();

  // The io thread's list (process/io_thread_conns.cpp).
  ConnNode& node() noexcept {
    node_.conn = this;
    return node_;
  }
  bool expired(Clock::time_point now) const noexcept { return deadline_ != Clock::time_point{} && now >= deadline_; }
  void on_timeout();
  void on_shutdown(bool hurry);
  void force_close() { close(); }
  std::string abandon(int status) noexcept;
  std::string abandon_pooled(int status, std::atomic<bool>& answered) noexcept;

  // Who is at the other end: the peer's address, or what a PROXY header said (the client's address, the
  // proxy's destination port, else the listener's, and TLS to the proxy).
  struct Peer {
    char addr[48] = {0};
    char port[8] = {0};
    char server_port[8] = {0};
    bool https = false;
    bool proxy_partial = false;  // a trusted proxy sent part of its header (a timeout then is logged)
  };
  Shared& shared() const noexcept { return sh_; }
  IoThread& thread() const noexcept { return t_; }
  const Peer& peer() const noexcept { return peer_; }
  const ListenSocket& listener() const noexcept { return listener_; }
  bool on_io_thread() const { return t_.ioc.get_executor().running_in_this_thread(); }

  // The deadline.
  void set_deadline(std::chrono::milliseconds d) { deadline_ = t_.now + d; }
  void set_deadline_at(Clock::time_point at) { deadline_ = at; }
  void clear_deadline() { deadline_ = {}; }

  // The state of the socket.
  bool closed() const noexcept { return state_ == State::closed; }
  /// A write failed: the client is gone.
  void mark_dead() noexcept { dead_ = true; }
  bool dead() const noexcept { return dead_; }
  bool reading() const noexcept { return reading_; }
  bool writing() const noexcept { return writing_; }
  /// Closes the socket; the codecs learn it (Codec::on_close).
  void close() noexcept;

  // Reading and writing, for the codec in charge.
  /// Reads some bytes into buf[0, n) → Codec::on_read. At most one read in flight.
  void read_some(char* buf, std::size_t n);
  /// A non-blocking gathered write, as sendmsg(2) says (`more`: MSG_MORE).
  ssize_t writev(const iovec* iov, int n, bool more) noexcept;
  /// A non-blocking part of a file, as sendfile(2) says.
  ssize_t sendfile(int file_fd, off_t* off, std::size_t n) noexcept;
  /// Waits until a write may go on → Codec::on_writable.
  void wait_writable();
  /// Writes all of `data` (valid until the completion) → Codec::on_written. At most one in flight.
  void write_all(std::string_view data);
  /// Writes `data` now, waiting up to --send-timeout for the socket; false (and dead) when it fails.
  bool blocking_send(std::string_view data);
  /// The last bytes are written: TLS's close_notify, then half-close (FIN) the socket.
  void half_close() noexcept;
  /// The end of the HTTP/2 byte stream: close_notify on TLS.
  void end_stream() noexcept;

  // TLS.
  bool tls() const noexcept { return tls_ != nullptr; }
  /// The protocol the TLS handshake chose ("" without TLS or before the handshake).
  std::string_view alpn() const;
  /// The TLS facts of the connection once its handshake is done (null without TLS).
  const TlsInfo* tls_info();

  // Giving the socket away.
  /// A dup of the descriptor in blocking mode, for an app that takes the connection (csgix.io).
  int dup_blocking() const noexcept;
  /// The socket goes to the app (csgix.io): this transport forgets it, closing only its own descriptor.
  void forget() noexcept;
  /// The socket and its TLS session go to a WebSocket session (pending operations cancelled first).
  Socket take_socket();
  std::unique_ptr<TlsSession> take_tls() noexcept { return std::move(tls_); }

  // The codecs.
  H1Conn& h1() noexcept { return *h1_; }
  /// The HTTP/2 codec once the connection speaks HTTP/2 (io thread only).
  H2Conn* h2() noexcept { return h2_.get(); }
  /// From the HTTP/1 codec: the connection speaks HTTP/2 from now on (`initial`: the bytes read already).
  void start_h2(std::string_view initial);
  /// The same after an HTTP/1.1 `Upgrade: h2c` request (settings: its HTTP2-Settings, decoded; env: its
  /// env, copied).
  void start_h2_upgraded(std::string_view settings, std::unique_ptr<Env> env, bool head, std::string_view initial);

private:
  enum class State { proxy, open, closed };

  // The PROXY protocol header (proxy_header.cpp).
  void read_proxy_header();
  void proxy_from_trusted(std::string_view bytes);
  void proxy_from_untrusted(std::string_view bytes);
  void wait_proxy_bytes();
  void accept_proxy_header(const proxy_protocol::Header& h, std::size_t length);
  void refuse_proxy(std::string_view why, std::string_view bytes);
  void proxy_timeout();
  void serve();

  // TLS (tls_io.cpp). Each returns what the syscall it replaces would: bytes, 0 at the end, or -1 with
  // errno (EAGAIN when the session waits for the socket: readable, or writable when it wants to write).
  void tls_read();
  void tls_wait_socket();
  void tls_on_socket(error_code ec, std::size_t got);
  bool tls_fill();
  ssize_t tls_writev(const iovec* iov, int n);
  ssize_t tls_sendfile(int file_fd, off_t* off, std::size_t n);
  void tls_write_all(bool in_handler);
  void read_done(error_code ec, std::size_t n);
  void written(error_code ec);

  Codec& codec() noexcept;

  ConnNode node_;
  IoThread& t_;
  Shared& sh_;
  Socket socket_;
  int fd_;
  const ListenSocket& listener_;
  Peer peer_;
  State state_ = State::open;
  bool reading_ = false;  // a read is pending
  bool writing_ = false;  // a wait for writability or a write_all is pending
  bool dead_ = false;     // a write failed: the client is gone
  Clock::time_point deadline_{};
  char* rbuf_ = nullptr;  // the read in flight's buffer
  std::size_t rn_ = 0;
  std::string_view wdata_;  // what write_all has still to write on TLS
  // TLS: the connection's session, what its env says, and the buffers of its writes.
  std::unique_ptr<TlsSession> tls_;
  std::unique_ptr<TlsInfo> tls_info_;
  std::unique_ptr<char[]> tls_out_;   // 16 KiB, for gathered small segments
  std::unique_ptr<char[]> tls_file_;  // 64 KiB, while a file body is sent
  // The codecs: HTTP/1 from the start; HTTP/2 once the connection switches (the HTTP/1 codec stays,
  // idle, until the connection goes: the call that switched may still be on the stack).
  std::unique_ptr<H1Conn> h1_;
  std::unique_ptr<H2Conn> h2_;
};

}  // namespace csgi::standalone::detail
