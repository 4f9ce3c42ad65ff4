// A TLS connection's reads and writes through its TlsSession (tls.hpp), on the connection's non-blocking
// socket (see transport/transport.hpp).
#include "csgi/adapters/standalone/detail/transport/transport.hpp"

#include <boost/asio/post.hpp>
#include <cstring>

namespace csgi::standalone::detail {

namespace {
// Small segments are gathered into one TLS record's worth (16 KiB) for one write; a large segment is
// written from where it is, up to 1 MiB a call. File bodies are read 64 KiB at a time.
constexpr std::size_t tls_record = 16 * 1024;
constexpr std::size_t tls_direct_max = 1 << 20;
constexpr std::size_t tls_file_chunk = 64 * 1024;
}  // namespace

// Reads like async_read_some does: at once when the session has bytes, completing through the
// io_context; otherwise once the reactor has read more ciphertext into the session (tls_on_socket). The
// first reads make the handshake.
void Transport::tls_read() {
  ssize_t r = tls_->recv(rbuf_, rn_);
  if (r < 0 && errno == EAGAIN) {
    tls_wait_socket();
    return;
  }
  error_code ec;
  if (r == 0) ec = asio::error::eof;
  else if (r < 0) ec = asio::error::connection_reset;
  asio::post(t_.ioc, [self = shared_from_this(), ec, n = r > 0 ? static_cast<std::size_t>(r) : 0] {
    self->read_done(ec, n);
  });
}

// Waits for what the session needs: writability (a handshake flight the socket did not take), or
// ciphertext, read by the reactor straight into the session's buffer (a speculative read that, unlike
// async_wait, re-arms no epoll registration).
void Transport::tls_wait_socket() {
  if (tls_->want_write()) {
    socket_.async_wait(Socket::wait_write, [self = shared_from_this()](error_code ec) { self->tls_on_socket(ec, 0); });
    return;
  }
  auto [room, n] = tls_->in_room();
  socket_.async_read_some(asio::buffer(room, n),
                          [self = shared_from_this()](error_code ec, std::size_t got) { self->tls_on_socket(ec, got); });
}

void Transport::tls_on_socket(error_code ec, std::size_t got) {
  if (state_ == State::closed || !tls_) {
    // Closed meanwhile: the session is not used again (its descriptor's number may be another's now);
    // or a WebSocket session has it.
    reading_ = false;
    return;
  }
  if (ec == asio::error::eof) {
    tls_->in_eof();
  } else if (ec) {
    read_done(ec, 0);
    return;
  }
  tls_->in_added(got);
  ssize_t r = tls_->recv(rbuf_, rn_);
  if (r < 0 && errno == EAGAIN) {
    tls_wait_socket();
    return;
  }
  if (r > 0) read_done({}, static_cast<std::size_t>(r));
  else read_done(r == 0 ? error_code(asio::error::eof) : error_code(asio::error::connection_reset), 0);
}

// After a poll for the socket in a blocking read or write: ciphertext goes into the session (false: the
// connection failed).
bool Transport::tls_fill() {
  if (tls_->want_write()) return true;
  ssize_t r = tls_->fill();
  return r >= 0 || errno == EAGAIN || errno == EINTR;
}

// A write the session could not finish is made again with the same first bytes (the caller has not
// moved past them) and no fewer of them: the first segment only grows while it is not written, so the
// choice between gathering and writing it in place, and the length, never go back.
ssize_t Transport::tls_writev(const iovec* iov, int n) {
  if (iov[0].iov_len >= tls_record)
    return tls_->send(static_cast<const char*>(iov[0].iov_base), std::min(iov[0].iov_len, tls_direct_max));
  if (!tls_out_) tls_out_.reset(new char[tls_record]);
  std::size_t len = 0;
  for (int i = 0; i < n && len < tls_record; ++i) {
    std::size_t k = std::min(iov[i].iov_len, tls_record - len);
    std::memcpy(tls_out_.get() + len, iov[i].iov_base, k);
    len += k;
  }
  return tls_->send(tls_out_.get(), len);
}

// A file body: read into a buffer held while the file is sent, and written through the session (no
// kernel TLS offload). A retried write reads the same bytes again.
ssize_t Transport::tls_sendfile(int file_fd, off_t* off, std::size_t n) {
  if (!tls_file_) tls_file_.reset(new char[tls_file_chunk]);
  std::size_t want = std::min(n, tls_file_chunk);
  ssize_t got = ::pread(file_fd, tls_file_.get(), want, *off);
  if (got <= 0) return got;
  ssize_t w = tls_->send(tls_file_.get(), static_cast<std::size_t>(got));
  if (w > 0) *off += w;
  if (w > 0 && static_cast<std::size_t>(w) == n) tls_file_.reset();  // the last bytes of the body
  return w;
}

// The connection's TLS facts, read once the handshake is done (before its first request is parsed).
const TlsInfo* Transport::tls_info() {
  if (!tls_) return tls_info_.get();
  if (!tls_info_) {
    tls_info_ = std::make_unique<TlsInfo>();
    tls_->info(*tls_info_);
  }
  return tls_info_.get();
}

// Writes all of wdata_, a record at a time; a write the socket did not take is made again with the same
// bytes once it is writable. A completion never runs inside the call that started it.
void Transport::tls_write_all(bool in_handler) {
  error_code ec;
  while (!wdata_.empty()) {
    ssize_t w = tls_->send(wdata_.data(), wdata_.size());
    if (w > 0) {
      wdata_.remove_prefix(static_cast<std::size_t>(w));
      continue;
    }
    if (w < 0 && errno == EAGAIN && tls_->want_write()) {
      socket_.async_wait(Socket::wait_write, [self = shared_from_this()](error_code ec) {
        if (!self->socket_.is_open() || !self->tls_) ec = asio::error::operation_aborted;
        if (ec) return self->written(ec);
        self->tls_write_all(true);
      });
      return;
    }
    ec = asio::error::connection_reset;
    break;
  }
  if (in_handler) return written(ec);
  asio::post(t_.ioc, [self = shared_from_this(), ec] { self->written(ec); });
}

}  // namespace csgi::standalone::detail
