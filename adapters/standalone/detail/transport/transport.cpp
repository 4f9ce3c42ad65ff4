// A connection's transport: its life (start, close, timeouts, graceful stop, faults), plain reads and
// writes, and the codec in charge (see transport.hpp). TLS's reads and writes are in tls/tls_io.cpp, the
// PROXY header in proxy_header.cpp.
#include "csgi/adapters/standalone/detail/transport/transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <charconv>

#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"

namespace csgi::standalone::detail {

Transport::Transport(IoThread& t, Socket s, const ListenSocket& l)
    : t_(t), sh_(t.shared), socket_(std::move(s)), fd_(socket_.native_handle()), listener_(l) {
  sh_.connections.fetch_add(1, std::memory_order_relaxed);
  t_.open.fetch_add(1, std::memory_order_relaxed);
  error_code ec;
  socket_.native_non_blocking(true, ec);
  if (listener_.tls && sh_.tls) {
    std::string why;
    tls_ = sh_.tls->accept(fd_, why);
    if (!tls_) sh_.errors.write("csgi: TLS connection setup failed: " + why);
  }
  if (listener_.tcp) {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      if (ss.ss_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &in->sin_addr, peer_.addr, sizeof peer_.addr);
        std::to_chars(peer_.port, peer_.port + sizeof peer_.port - 1, ntohs(in->sin_port));
      } else if (ss.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, peer_.addr, sizeof peer_.addr);
        std::to_chars(peer_.port, peer_.port + sizeof peer_.port - 1, ntohs(in6->sin6_port));
      }
    }
  }
  h1_ = std::make_unique<H1Conn>(*this);
}

Transport::~Transport() {
  sh_.connections.fetch_sub(1, std::memory_order_relaxed);
  t_.open.fetch_sub(1, std::memory_order_relaxed);
}

void start_connection(IoThread& t, Socket socket, const ListenSocket& listener) {
  std::make_shared<Transport>(t, std::move(socket), listener)->start();
}

void Transport::start() {
  t_.add(*this);
  sh_.stats->connection_opened();
  if (sh_.slot) sh_.slot->connections_open.fetch_add(1, std::memory_order_relaxed);
  set_deadline(sh_.opt.header_timeout);
  if (listener_.tls && !tls_) {
    close();
    return;
  }
  if (sh_.proxy.enabled() && listener_.tcp) read_proxy_header();  // serve() follows the header
  else serve();
}

// The connection's own bytes begin: HTTP/1 reads them (and hands them to HTTP/2 if they say so).
void Transport::serve() {
  state_ = State::open;
  h1_->serve();
}

Codec& Transport::codec() noexcept {
  if (h2_) return *h2_;
  return *h1_;
}

void Transport::close() noexcept {
  if (state_ == State::closed) return;
  state_ = State::closed;
  sh_.stats->connection_closed();
  if (sh_.slot) sh_.slot->connections_open.fetch_sub(1, std::memory_order_relaxed);
  clear_deadline();
  error_code ec;
  socket_.close(ec);
  node_.unlink();
  if (h2_) h2_->on_close();
  h1_->on_close();
}

void Transport::forget() noexcept {
  error_code ec;
  socket_.close(ec);
  state_ = State::closed;
  sh_.stats->connection_closed();  // the app owns it now: no longer one of ours
  if (sh_.slot) sh_.slot->connections_open.fetch_sub(1, std::memory_order_relaxed);
  clear_deadline();
  node_.unlink();
}

void Transport::on_timeout() {
  if (state_ == State::closed) return;
  if (state_ == State::proxy) {
    clear_deadline();
    proxy_timeout();
    return;
  }
  codec().on_timeout();
}

void Transport::on_shutdown(bool hurry) {
  if (state_ == State::closed) return;
  // A connection still in its PROXY header waits like an idle one (see H1Conn::on_shutdown).
  if (state_ == State::proxy) {
    if (hurry) close();
    return;
  }
  codec().on_shutdown(hurry);
}

std::string Transport::abandon(int status) noexcept {
  std::string what = codec().abandon(status);
  if (state_ == State::closed) return what;
  ::shutdown(fd_, SHUT_WR);
  // The descriptor stays open until the worker exits (closing it here could reuse the number while the
  // frozen thread still holds it); nothing reads or writes this connection again.
  state_ = State::closed;
  clear_deadline();
  node_.unlink();
  return what;
}

std::string Transport::abandon_pooled(int status, std::atomic<bool>& answered) noexcept {
  return codec().abandon_pooled(status, answered);
}

std::string abandon_faulted(Transport& c, int status) noexcept { return c.abandon(status); }

std::string abandon_pooled(Transport& c, int status, std::atomic<bool>& answered) noexcept {
  return c.abandon_pooled(status, answered);
}

// Reads with async_read_some: Asio tries the recv at once (a speculative read). Boost 1.74's reactor
// stops trying at once only after a read that returned nothing, so after each keep-alive response this
// recv finds nothing (EAGAIN) before the connection waits for the next epoll edge. Waiting first
// (async_wait(wait_read)) would not save it: an op queued without that read costs an
// epoll_ctl(EPOLL_CTL_MOD) per call there instead, the same one syscall per request.
void Transport::read_some(char* buf, std::size_t n) {
  reading_ = true;
  if (tls_) {
    rbuf_ = buf;
    rn_ = n;
    tls_read();
    return;
  }
  socket_.async_read_some(asio::buffer(buf, n), [self = shared_from_this()](error_code ec, std::size_t got) {
    self->read_done(ec, got);
  });
}

void Transport::read_done(error_code ec, std::size_t n) {
  reading_ = false;
  codec().on_read(ec, n);
}

ssize_t Transport::writev(const iovec* iov, int n, bool more) noexcept {
  if (tls_) return tls_writev(iov, n);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(n);
  return ::sendmsg(fd_, &msg, more ? MSG_NOSIGNAL | MSG_MORE : MSG_NOSIGNAL);
}

ssize_t Transport::sendfile(int file_fd, off_t* off, std::size_t n) noexcept {
  if (tls_) return tls_sendfile(file_fd, off, n);
  return ::sendfile(fd_, file_fd, off, n);
}

void Transport::wait_writable() {
  writing_ = true;
  socket_.async_wait(Socket::wait_write, [self = shared_from_this()](error_code ec) {
    self->writing_ = false;
    self->codec().on_writable(ec);
  });
}

void Transport::write_all(std::string_view data) {
  writing_ = true;
  if (tls_) {
    wdata_ = data;
    tls_write_all(false);
    return;
  }
  asio::async_write(socket_, asio::buffer(data.data(), data.size()),
                    [self = shared_from_this()](error_code ec, std::size_t) { self->written(ec); });
}

void Transport::written(error_code ec) {
  writing_ = false;
  codec().on_written(ec);
}

bool Transport::blocking_send(std::string_view data) {
  while (!data.empty()) {
    iovec one{const_cast<char*>(data.data()), data.size()};
    ssize_t w = writev(&one, 1, false);
    if (w > 0) {
      data.remove_prefix(static_cast<std::size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, tls_ && !tls_->want_write() ? short(POLLIN) : short(POLLOUT), 0};
      if (::poll(&p, 1, static_cast<int>(sh_.opt.send_timeout.count())) <= 0) return false;
      if (tls_ && !tls_fill()) {
        dead_ = true;
        return false;
      }
      continue;
    }
    dead_ = true;
    return false;
  }
  return true;
}

void Transport::half_close() noexcept {
  if (tls_) tls_->shutdown();  // close_notify, as far as the socket takes it now
  ::shutdown(fd_, SHUT_WR);
}

void Transport::end_stream() noexcept {
  if (tls_) tls_->shutdown();
}

std::string_view Transport::alpn() const { return tls_ ? tls_->alpn() : std::string_view{}; }

int Transport::dup_blocking() const noexcept {
  int fd = ::dup(fd_);
  if (fd < 0) return -1;
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

Socket Transport::take_socket() {
  if (reading_ || writing_) {
    error_code ec;
    socket_.cancel(ec);  // their handlers see operation_aborted and leave the connection alone
  }
  return std::move(socket_);
}

void Transport::start_h2(std::string_view initial) {
  if (tls_) tls_info();
  h2_ = std::make_unique<H2Conn>(*this, tls_ ? "https" : "http");
  h2_->start(initial);
}

void Transport::start_h2_upgraded(std::string_view settings, std::unique_ptr<Env> env, bool head,
                                  std::string_view initial) {
  h2_ = std::make_unique<H2Conn>(*this);
  h2_->start_upgraded(settings, std::move(env), head, initial);
}

}  // namespace csgi::standalone::detail
