#pragma once
// A WebSocket session of the standalone server (internal, not installed): once an app's handler has been
// taken through csgix.websocket and its 101 is the final response, the connection (conn.hpp) hands its
// socket over to a session (H1Conn::begin_websocket, websocket_session.cpp). The session writes what the
// connection still had to send, lets Boost.Beast's websocket stream answer the handshake and run RFC 6455,
// and calls the app's handler where apps run: inline on the io thread, or on the app pool
// (--app-threads), one callback at a time. The connection stays in its io thread's list as the session's
// anchor (graceful stop, counters) until the session ends.
//
// The stream type is the session's template parameter (websocket_session.cpp): the plain socket, or, on a
// TLS connection, the socket and its TlsSession as one stream (TlsStream, tls_stream.hpp), or an HTTP/2
// stream's DATA frames (H2WsStream, h2_websocket.hpp).
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi::standalone::detail {

/// Bytes held against a limit, shared by the WebSocket sessions of an HTTP/2 connection or of a process;
/// take() and give() from any thread.
class ByteBudget {
public:
  explicit ByteBudget(std::size_t limit) noexcept : limit_(limit) {}
  /// Takes `n` bytes; false (nothing taken) when that would pass the limit.
  bool take(std::size_t n) noexcept {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (n > limit_ || used > limit_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
  }
  void give(std::size_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }

private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

/// What a connection knows of its WebSocket session (called on the io thread).
class WsSession {
public:
  virtual ~WsSession() = default;
  /// Graceful stop: close with 1001 after what is queued.
  virtual void going_away() = 0;
  /// Closes the socket now (the connection is being closed); the handler's on_close still runs.
  virtual void abort() noexcept = 0;
};

/// What a session starts from.
struct WsStart {
  websocket::Handler handler;
  std::string handshake;    // the opening handshake, re-serialised, then the bytes read past the request
  std::string pending_out;  // bytes of earlier responses not yet written (pipelining)
  Headers headers;          // the app's 101 headers, sent with the handshake response
  std::string remote_addr;
  std::function<void()> on_end;  // called once on the io thread when the session has ended
  std::shared_ptr<ByteBudget> connection_budget;  // HTTP/2: shared by the connection's streams (else null)
};

class TlsSession;

/// Starts a session on the socket's io thread `t` (which runs it).
std::shared_ptr<WsSession> start_ws_session(IoThread& t, Socket socket, WsStart start);
/// The same over the connection's TLS session (its handshake done).
std::shared_ptr<WsSession> start_ws_session(IoThread& t, Socket socket, std::unique_ptr<TlsSession> tls, WsStart start);

/// The opening handshake of `env` as HTTP/1.1 text (the fields RFC 6455 §4.2.1 needs).
std::string ws_handshake_text(const Env& env);

}  // namespace csgi::standalone::detail
