#pragma once
// WebSocket over an HTTP/2 stream (RFC 8441; internal, not installed). An extended CONNECT with
// `:protocol websocket` is answered 200, and the stream's DATA frames then carry RFC 6455 frames both
// ways. The same session as on HTTP/1.1 (websocket_session.cpp: Boost.Beast's websocket stream) runs over
// H2WsStream, an Asio AsyncStream whose bytes are those DATA payloads: an H2WsPipe between it and the
// HTTP/2 session (h2_session.cpp) holds what the peer sent and what the session writes. The peer's
// window is given back only as the session reads (a slow handler holds its client, not the connection's
// memory), and a write completes only when the stream has taken its bytes (the peer's window holds the
// writer). Everything here runs on the connection's io thread.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/system/error_code.hpp>

#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"

namespace csgi::standalone::detail {

namespace asio = boost::asio;
using boost::system::error_code;

/// The bytes of one WebSocket stream between the HTTP/2 session and the WebSocket session.
struct H2WsPipe {
  explicit H2WsPipe(asio::any_io_executor ex) : read_wait(ex), write_wait(ex) {}

  // From the peer: DATA payloads not yet read (their window not yet given back), and its END_STREAM.
  std::string in;
  std::size_t in_pos = 0;
  bool in_end = false;
  // To the peer: bytes written and not yet taken into DATA frames, then END_STREAM once `out_end`.
  std::string out;
  std::size_t out_pos = 0;
  bool out_end = false;
  // The first bytes the WebSocket session writes are its HTTP/1.1 handshake response: not sent (the
  // stream's 200 is), only checked to be a 101.
  std::string head;
  bool head_done = false;
  // The stream is closed or reset, or the connection is, or the session closed its side: reads and
  // writes fail (what is unsent after an END_STREAM asked for still goes).
  bool gone = false;
  bool released = false;  // the stream closed: the window of what is unread went back then
  // A parked read or write waits on its timer (never expiring); a cancel wakes it to look again.
  asio::steady_timer read_wait, write_wait;
  // What the pipe asks of the HTTP/2 connection (set by the driver; no-ops once it is gone).
  std::function<void(std::size_t)> consume;  // give the peer `n` bytes of window back
  std::function<void()> more;                // bytes (or the end) to send
  std::function<void()> reset;               // reset the stream (CANCEL)

  static constexpr std::size_t out_high = 64 * 1024;  // a write waits while this much is unsent

  /// New bytes (or the end, or the stream's end) for the reader / room for the writer.
  void wake_reader() { read_wait.cancel(); }
  void wake_writer() { write_wait.cancel(); }
  /// The stream or the connection is gone: parked operations fail.
  void closed() {
    gone = true;
    wake_reader();
    wake_writer();
  }
  std::size_t unsent() const { return out.size() - out_pos; }
  /// Bytes of the session's output that go into DATA frames: the handshake response is swallowed (false
  /// when it is not a 101: the stream is reset).
  bool write(const char* data, std::size_t n);
};

/// The AsyncStream under Beast's websocket stream: reads the peer's DATA, writes the session's.
class H2WsStream {
public:
  using executor_type = asio::any_io_executor;

  explicit H2WsStream(std::shared_ptr<H2WsPipe> pipe) : p_(std::move(pipe)) {}
  H2WsStream(H2WsStream&&) = default;

  executor_type get_executor() noexcept { return p_->read_wait.get_executor(); }

  template <class MutableBuffers, class Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(error_code, std::size_t)>(ReadOp<MutableBuffers>{p_.get(), buffers},
                                                                       handler, p_->read_wait);
  }

  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(error_code, std::size_t)>(WriteOp<ConstBuffers>{p_.get(), buffers},
                                                                       handler, p_->write_wait);
  }

  /// Ends the sending side: END_STREAM after what is written.
  void end() noexcept;
  /// The session is done with the stream: reset it unless its sending side was ended.
  void close(error_code& ec) noexcept;
  friend void beast_close_socket(H2WsStream& s) {
    error_code ec;
    s.close(ec);
  }

private:
  enum class State { start, waiting };

  template <class Buffers>
  struct ReadOp {
    H2WsPipe* p;
    Buffers buffers;
    State state = State::start;

    template <class Self>
    void operator()(Self& self, error_code = {}) {
      if (state == State::start) {  // never complete inside the call that started the read
        state = State::waiting;
        return asio::post(p->read_wait.get_executor(), std::move(self));
      }
      if (p->in_pos < p->in.size()) {
        std::size_t n = asio::buffer_copy(buffers, asio::buffer(p->in.data() + p->in_pos, p->in.size() - p->in_pos));
        p->in_pos += n;
        if (p->in_pos == p->in.size()) {
          p->in.clear();
          p->in_pos = 0;
        }
        if (n > 0 && p->consume && !p->released) p->consume(n);
        return self.complete(error_code{}, n);
      }
      if (asio::buffer_size(buffers) == 0) return self.complete(error_code{}, 0);
      if (p->in_end) return self.complete(asio::error::eof, 0);
      if (p->gone) return self.complete(asio::error::connection_reset, 0);
      p->read_wait.expires_at(std::chrono::steady_clock::time_point::max());
      p->read_wait.async_wait(std::move(self));
    }
  };

  template <class Buffers>
  struct WriteOp {
    H2WsPipe* p;
    Buffers buffers;
    State state = State::start;

    template <class Self>
    void operator()(Self& self, error_code = {}) {
      if (state == State::start) {
        state = State::waiting;
        return asio::post(p->write_wait.get_executor(), std::move(self));
      }
      if (p->gone || p->out_end) return self.complete(asio::error::connection_reset, 0);
      if (p->unsent() < H2WsPipe::out_high) {
        std::size_t room = H2WsPipe::out_high - p->unsent(), n = 0;
        for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers) && n < room; ++it) {
          asio::const_buffer b(*it);
          std::size_t k = std::min(b.size(), room - n);
          if (!p->write(static_cast<const char*>(b.data()), k)) return self.complete(asio::error::connection_reset, 0);
          n += k;
        }
        if (p->more) p->more();
        return self.complete(error_code{}, n);
      }
      p->write_wait.expires_at(std::chrono::steady_clock::time_point::max());
      p->write_wait.async_wait(std::move(self));
    }
  };

  std::shared_ptr<H2WsPipe> p_;
};

/// Beast's websocket stream ends an HTTP/2 WebSocket with END_STREAM (RFC 8441 §4: the stream's end is the
/// TCP FIN of RFC 6455).
inline void teardown(boost::beast::role_type, H2WsStream& s, error_code& ec) {
  s.end();
  ec = {};
}

template <class Handler>
void async_teardown(boost::beast::role_type, H2WsStream& s, Handler&& handler) {
  s.end();
  asio::post(s.get_executor(), boost::beast::bind_front_handler(std::forward<Handler>(handler), error_code{}));
}

/// Starts a WebSocket session over an HTTP/2 stream (websocket_session.cpp).
std::shared_ptr<WsSession> start_ws_session(IoThread& t, H2WsStream stream, WsStart start);

}  // namespace csgi::standalone::detail
