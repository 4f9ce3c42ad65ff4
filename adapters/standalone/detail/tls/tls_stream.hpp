#pragma once
// A TLS connection as an Asio AsyncStream (internal, not installed): the connection's socket and its
// TlsSession (tls.hpp), for Beast's websocket stream (websocket_session.cpp), which runs RFC 6455 over
// it as over a plain socket. Reads and writes go through the session on the non-blocking socket and wait
// for it through the reactor, as the connection's own TLS path does (tls_io.cpp): the ciphertext is read
// straight into the session's buffer. A completion never runs inside the call that started it. One read
// and one write may be in flight at once (Beast's websocket stream makes no more); the handshake is done
// before the stream is made, and renegotiation is off, so a write needs only writability.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/role.hpp>

#include "csgi/adapters/standalone/detail/transport/socket.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"

namespace csgi::standalone::detail {

using boost::system::error_code;

class TlsStream {
public:
  using executor_type = Socket::executor_type;

  TlsStream(Socket socket, std::unique_ptr<TlsSession> tls) : socket_(std::move(socket)), tls_(std::move(tls)) {}
  TlsStream(TlsStream&&) = default;

  executor_type get_executor() noexcept { return socket_.get_executor(); }

  template <class MutableBuffers, class Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(error_code, std::size_t)>(ReadOp<MutableBuffers>{this, buffers},
                                                                       handler, socket_);
  }

  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(error_code, std::size_t)>(WriteOp<ConstBuffers>{this, buffers},
                                                                       handler, socket_);
  }

  /// Sends close_notify (as far as the socket takes it now) and ends the sending side.
  void end() noexcept {
    if (!socket_.is_open()) return;
    tls_->shutdown();
    error_code ec;
    socket_.shutdown(Socket::shutdown_send, ec);
  }
  void close(error_code& ec) { socket_.close(ec); }
  friend void beast_close_socket(TlsStream& s) {
    error_code ec;
    s.socket_.close(ec);
  }

private:
  // Small buffers are gathered into one TLS record's worth; a large first one is written in place.
  static constexpr std::size_t record = 16 * 1024;
  static constexpr std::size_t direct_max = 1 << 20;
  enum class State { start, wait_read, wait_write, done };

  template <class Buffers>
  struct ReadOp {
    TlsStream* s;
    Buffers buffers;
    State state = State::start;
    error_code result{};
    std::size_t got = 0;

    template <class Self>
    void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
      if (state == State::done) return self.complete(result, got);
      // Closed meanwhile: the session is not used again (its descriptor's number may be another's now).
      if (state != State::start && !s->socket_.is_open()) ec = asio::error::operation_aborted;
      if (state == State::wait_read) {
        if (ec == asio::error::eof) s->tls_->in_eof();
        else if (ec) return self.complete(ec, 0);
        s->tls_->in_added(n);
      } else if (state == State::wait_write && ec) {
        return self.complete(ec, 0);
      }
      asio::mutable_buffer b;
      for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it)
        if ((b = *it).size() > 0) break;
      ssize_t r = b.size() == 0 ? 0 : s->tls_->recv(static_cast<char*>(b.data()), b.size());
      if (r < 0 && errno == EAGAIN) {
        if (s->tls_->want_write()) {
          state = State::wait_write;
          s->socket_.async_wait(Socket::wait_write, std::move(self));
        } else {
          state = State::wait_read;
          auto [room, size] = s->tls_->in_room();
          s->socket_.async_read_some(asio::buffer(room, size), std::move(self));
        }
        return;
      }
      error_code out;
      if (r == 0 && b.size() > 0) out = asio::error::eof;
      else if (r < 0) out = asio::error::connection_reset;
      std::size_t k = r > 0 ? static_cast<std::size_t>(r) : 0;
      if (state != State::start) return self.complete(out, k);
      state = State::done;
      result = out;
      got = k;
      asio::post(s->socket_.get_executor(), std::move(self));
    }
  };

  template <class Buffers>
  struct WriteOp {
    TlsStream* s;
    Buffers buffers;
    State state = State::start;
    error_code result{};
    std::size_t sent = 0;

    // A write the socket did not take is made again with the same bytes (gathered again from the same
    // buffers, which the caller keeps until the completion), as OpenSSL requires.
    template <class Self>
    void operator()(Self& self, error_code ec = {}) {
      if (state == State::done) return self.complete(result, sent);
      if (state != State::start && !s->socket_.is_open()) ec = asio::error::operation_aborted;
      if (ec) return self.complete(ec, 0);
      const char* data = nullptr;
      std::size_t len = 0;
      gather(data, len);
      ssize_t w = len == 0 ? 0 : s->tls_->send(data, len);
      if (w < 0 && errno == EAGAIN && s->tls_->want_write()) {
        state = State::wait_write;
        s->socket_.async_wait(Socket::wait_write, std::move(self));
        return;
      }
      error_code out;
      if (w < 0) out = asio::error::connection_reset;
      std::size_t k = w > 0 ? static_cast<std::size_t>(w) : 0;
      if (state != State::start) return self.complete(out, k);
      state = State::done;
      result = out;
      sent = k;
      asio::post(s->socket_.get_executor(), std::move(self));
    }

    void gather(const char*& data, std::size_t& len) {
      auto it = asio::buffer_sequence_begin(buffers);
      auto end = asio::buffer_sequence_end(buffers);
      while (it != end && asio::const_buffer(*it).size() == 0) ++it;
      if (it == end) return;
      asio::const_buffer first(*it);
      if (first.size() >= record) {
        data = static_cast<const char*>(first.data());
        len = std::min(first.size(), direct_max);
        return;
      }
      if (!s->out_) s->out_.reset(new char[record]);
      for (; it != end && len < record; ++it) {
        asio::const_buffer b(*it);
        std::size_t k = std::min(b.size(), record - len);
        std::memcpy(s->out_.get() + len, b.data(), k);
        len += k;
      }
      data = s->out_.get();
    }
  };

  Socket socket_;
  std::unique_ptr<TlsSession> tls_;
  std::unique_ptr<char[]> out_;  // gathered small buffers
};

/// Beast's websocket stream ends a TLS connection with close_notify and the end of the sending side;
/// the socket is closed by the session.
inline void teardown(boost::beast::role_type, TlsStream& s, error_code& ec) {
  s.end();
  ec = {};
}

template <class Handler>
void async_teardown(boost::beast::role_type, TlsStream& s, Handler&& handler) {
  s.end();
  asio::post(s.get_executor(), boost::beast::bind_front_handler(std::forward<Handler>(handler), error_code{}));
}

}  // namespace csgi::standalone::detail
