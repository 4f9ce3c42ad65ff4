// A TLS connection's reads and writes through its TlsSession (tls.hpp), on the connection's non-blocking
// socket (see conn.hpp).
#include "csgi/adapters/standalone/conn.hpp"

namespace csgi::standalone::detail {

namespace {
// Bytes gathered from the output segments for one TLS write (OpenSSL cuts them into 16 KiB records).
constexpr std::size_t tls_chunk = 64 * 1024;
}  // namespace

// Reads like async_read_some does: at once when the session has (or the socket gives) bytes, completing
// through the io_context; otherwise after the socket is ready for what the session waits for. The first
// reads make the handshake.
void Conn::tls_wait_read() {
  ssize_t r = tls_->recv(buf_.get() + end_, cap_ - end_);
  if (r < 0 && errno == EAGAIN) {
    socket_.async_wait(tls_->want_write() ? Socket::wait_write : Socket::wait_read,
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

// The segments are copied into one buffer for one write; a write the session could not finish is made
// again with the same first bytes (the caller has not moved past them) and no fewer of them.
ssize_t Conn::tls_writev(const iovec* iov, int n) {
  if (n == 1 && iov[0].iov_len >= tls_chunk) return tls_->send(static_cast<const char*>(iov[0].iov_base), tls_chunk);
  if (!tls_out_) tls_out_.reset(new char[tls_chunk]);
  std::size_t len = 0;
  for (int i = 0; i < n && len < tls_chunk; ++i) {
    std::size_t k = std::min(iov[i].iov_len, tls_chunk - len);
    std::memcpy(tls_out_.get() + len, iov[i].iov_base, k);
    len += k;
  }
  return tls_->send(tls_out_.get(), len);
}

// A file body: read into the buffer and written through the session (no kernel TLS offload).
ssize_t Conn::tls_sendfile(int file_fd, off_t* off, std::size_t n) {
  if (!tls_out_) tls_out_.reset(new char[tls_chunk]);
  ssize_t got = ::pread(file_fd, tls_out_.get(), std::min(n, tls_chunk), *off);
  if (got <= 0) return got;
  ssize_t w = tls_->send(tls_out_.get(), static_cast<std::size_t>(got));
  if (w > 0) *off += w;
  return w;
}

// The connection's TLS facts, read once the handshake is done (before its first request is parsed).
void Conn::tls_begin_request(csgi::Connection& conn) {
  conn.url_scheme = "https";
  if (!tls_info_) {
    tls_info_ = std::make_unique<TlsInfo>();
    tls_->info(*tls_info_);
  }
}

}  // namespace csgi::standalone::detail
