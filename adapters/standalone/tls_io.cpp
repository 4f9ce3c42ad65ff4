// A TLS connection's reads and writes through OpenSSL on the connection's non-blocking socket (see conn.hpp).
#include <openssl/err.h>

#include "csgi/adapters/standalone/conn.hpp"

namespace csgi::standalone::detail {

namespace {
// Bytes gathered from the output segments for one SSL_write (OpenSSL cuts them into 16 KiB records).
constexpr std::size_t tls_chunk = 64 * 1024;
}  // namespace

// Reads like async_read_some does: at once when OpenSSL has (or the socket gives) bytes, completing
// through the io_context; otherwise after the socket is ready for what OpenSSL waits for. The first
// reads make the handshake.
void Conn::tls_wait_read() {
  ssize_t r = tls_recv(buf_.get() + end_, cap_ - end_);
  if (r < 0 && errno == EAGAIN) {
    socket_.async_wait(tls_want_write_ ? Socket::wait_write : Socket::wait_read,
                       [self = shared_from_this()](error_code ec) {
                         if (ec || self->phase_ == Phase::closed) {
                           self->waiting_ = false;
                           self->on_read(ec ? ec : asio::error::operation_aborted, 0);
                           return;
                         }
                         self->tls_wait_read();
                       });
    return;
  }
  error_code ec;
  if (r == 0) ec = asio::error::eof;
  else if (r < 0) ec = asio::error::connection_reset;
  asio::post(t_.ioc, [self = shared_from_this(), ec, n = r > 0 ? static_cast<std::size_t>(r) : 0] {
    self->waiting_ = false;
    self->on_read(ec, n);
  });
}

ssize_t Conn::tls_recv(char* buf, std::size_t n) {
  std::size_t got = 0;
  ERR_clear_error();
  int r = SSL_read_ex(ssl_.get(), buf, n, &got);
  return tls_result(r, got);
}

// What an SSL_read_ex / SSL_write_ex call came to, as a syscall would say it.
ssize_t Conn::tls_result(int r, std::size_t done) {
  tls_want_write_ = false;
  if (r == 1) return static_cast<ssize_t>(done);
  switch (SSL_get_error(ssl_.get(), r)) {
    case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_WRITE: tls_want_write_ = true; errno = EAGAIN; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;  // close_notify, or (SSL_OP_IGNORE_UNEXPECTED_EOF) a plain EOF
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == EAGAIN) errno = ECONNRESET;
      ERR_clear_error();
      return -1;
    default:  // a failed handshake (old protocol, no shared cipher, bad client certificate) or a bad record
      ERR_clear_error();
      errno = ECONNRESET;
      return -1;
  }
}

// The segments are copied into one buffer for one SSL_write. A write OpenSSL could not finish is made
// again with the same first bytes (the caller has not moved past them), as OpenSSL requires.
ssize_t Conn::tls_writev(const iovec* iov, int n) {
  if (n == 1 && iov[0].iov_len >= tls_chunk) {
    std::size_t done = 0;
    ERR_clear_error();
    int r = SSL_write_ex(ssl_.get(), iov[0].iov_base, tls_chunk, &done);
    return tls_result(r, done);
  }
  if (!tls_out_) tls_out_.reset(new char[tls_chunk]);
  std::size_t len = 0;
  for (int i = 0; i < n && len < tls_chunk; ++i) {
    std::size_t k = std::min(iov[i].iov_len, tls_chunk - len);
    std::memcpy(tls_out_.get() + len, iov[i].iov_base, k);
    len += k;
  }
  std::size_t done = 0;
  ERR_clear_error();
  int r = SSL_write_ex(ssl_.get(), tls_out_.get(), len, &done);
  return tls_result(r, done);
}

// A file body: read into the buffer and written through OpenSSL (no kernel TLS offload).
ssize_t Conn::tls_sendfile(int file_fd, off_t* off, std::size_t n) {
  if (!tls_out_) tls_out_.reset(new char[tls_chunk]);
  ssize_t got = ::pread(file_fd, tls_out_.get(), std::min(n, tls_chunk), *off);
  if (got <= 0) return got;
  std::size_t done = 0;
  ERR_clear_error();
  int r = SSL_write_ex(ssl_.get(), tls_out_.get(), static_cast<std::size_t>(got), &done);
  ssize_t w = tls_result(r, done);
  if (w > 0) *off += w;
  return w;
}

// The connection's TLS facts, read once the handshake is done (before its first request is parsed).
void Conn::tls_begin_request(csgi::Connection& conn) {
  conn.url_scheme = "https";
  if (!tls_info_) {
    tls_info_ = std::make_unique<TlsInfo>();
    tls_info_->read(ssl_.get(), tls_gen_->asks_client_cert());
  }
}

}  // namespace csgi::standalone::detail
