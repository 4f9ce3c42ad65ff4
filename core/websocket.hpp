#pragma once
/// WebSocket (RFC 6455) for csgi apps: the `csgix.websocket` extension (spec/csgi.md EXT-8…EXT-10) and the
/// helper `csgi::websocket::accept` that answers an upgrade request with a handler.
///
///     csgi::Response app(csgi::Env& env) {
///       csgi::websocket::Handler h;
///       h.on_message = [](csgi::websocket::Connection& c, std::string_view data, bool binary) {
///         binary ? c.send_binary(data) : c.send_text(data);  // echo
///       };
///       return csgi::websocket::accept(env, std::move(h));
///     }
///
/// What accept() returns, and what the app returns in turn:
///  - 501 Not Implemented when the adapter offers no WebSocket (`csgix.websocket` absent: FastCGI, CGI,
///    a WSGI host);
///  - 426 Upgrade Required (with `Upgrade: websocket` and, for a wrong version, `Sec-WebSocket-Version: 13`)
///    when the request is not a valid opening handshake: GET over HTTP/1.1 (or an HTTP/2 extended CONNECT,
///    RFC 8441, which the adapter presents as the same GET, EXT-11), `Upgrade: websocket`,
///    `Connection: Upgrade`, a `Sec-WebSocket-Key` of 16 base64 bytes, `Sec-WebSocket-Version: 13`;
///    400 when it has a body;
///  - 403 when the request carries an `Origin` (a browser's) that may not open a WebSocket here (see
///    origin_problem below): a page on another site cannot use the visitor's cookies to talk to the app;
///  - otherwise 101 with `Upgrade: websocket`: the adapter writes the handshake response (adding
///    `Connection` and `Sec-WebSocket-Accept`; headers the app adds to the 101, e.g.
///    `Sec-WebSocket-Protocol` or `Set-Cookie`, go with it) and runs the handler.
///
/// The handler's callbacks run where the adapter runs apps (csgi.multithread says whether that may be
/// several threads), one at a time per connection and in order: on_open once, on_message per complete
/// message (fragments reassembled; text is valid UTF-8, checked by the adapter), on_close once at the
/// end with the peer's close code and reason (1006 when the connection ended without a close frame).
/// The adapter reads the next message only after on_message returns, so a slow handler slows its client
/// and nobody else's. The `data` view is valid during the call only. An exception from a callback closes
/// the connection with 1011 and is written to csgi.errors. Pings are answered and control frames handled
/// by the adapter.
///
/// The Connection is usable from any thread, also after the callbacks returned (keep
/// `c.shared_from_this()`): send_text/send_binary queue a message and return false when it was not queued
/// (the connection is closing or closed, or more than the adapter's send-queue limit is already queued: the
/// message is dropped; `buffered_amount()` says how much waits). close() sends a close frame after what is
/// queued. When the server stops gracefully it closes WebSockets with 1001.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/response.hpp"
#include "csgi/core/text.hpp"

namespace csgi {
class Env;
}

namespace csgi::websocket {

/// Close codes (RFC 6455 §7.4.1).
namespace close_code {
inline constexpr int normal = 1000;
inline constexpr int going_away = 1001;
inline constexpr int protocol_error = 1002;
inline constexpr int unsupported_data = 1003;
inline constexpr int no_status = 1005;  // never sent: on_close gets it when the close frame had no code
inline constexpr int abnormal = 1006;   // never sent: on_close gets it when there was no close frame
inline constexpr int invalid_payload = 1007;
inline constexpr int policy_violation = 1008;
inline constexpr int too_big = 1009;
inline constexpr int internal_error = 1011;
inline constexpr int try_again_later = 1013;
}  // namespace close_code

/// True for a code an endpoint may send in a close frame: 1000…1003, 1007…1014, 3000…4999.
bool sendable_close_code(int code) noexcept;

/// One WebSocket connection, as the app sees it. Every member may be called from any thread.
class Connection : public std::enable_shared_from_this<Connection> {
public:
  virtual ~Connection() = default;
  /// Queues a text message (must be valid UTF-8: invalid text is refused with false) / a binary message.
  virtual bool send_text(std::string_view text) = 0;
  virtual bool send_binary(std::string_view data) = 0;
  /// Starts the closing handshake after the queued messages. `code` must be sendable_close_code()
  /// (else 1000 is sent), `reason` at most 123 bytes of UTF-8 (longer is cut). Later sends return false.
  virtual void close(int code = close_code::normal, std::string_view reason = {}) = 0;
  /// False once close() was called or the connection ended.
  virtual bool is_open() const = 0;
  /// Bytes queued and not yet written to the socket.
  virtual std::size_t buffered_amount() const = 0;
  /// The request's REMOTE_ADDR, kept for the connection's life.
  virtual std::string remote_addr() const = 0;
};

/// What the app does with a WebSocket connection. Callbacks left empty do nothing.
struct Handler {
  std::function<void(Connection&)> on_open;
  std::function<void(Connection&, std::string_view data, bool binary)> on_message;
  std::function<void(Connection&, int code, std::string_view reason)> on_close;
  /// The largest message accepted (bigger: closed with 1009); 0 takes the adapter's limit, and a value
  /// above the adapter's limit is cut to it.
  std::size_t max_message_bytes = 0;
  /// Origins ("https://app.example", "http://localhost:3000"; "*" for any) that may open this WebSocket
  /// besides the request's own origin. Empty: the adapter's list (Handshake::allowed_origins).
  std::vector<std::string> allowed_origins;
};

/// csgix.websocket: offered by an adapter that can turn this request's connection into a WebSocket (EXT-8).
class Handshake {
public:
  virtual ~Handshake() = default;
  /// Takes the handler for this request (called during the app call, on the app's thread). Returns false
  /// when it cannot (called twice, or not during the app call). The app then returns a 101 (EXT-9).
  virtual bool take(Handler handler) = 0;
  /// The origins the server allows besides the same origin (`csgi serve --ws-allowed-origin`); none by
  /// default.
  virtual const std::vector<std::string>& allowed_origins() const;
};

/// Why `env` is not a valid opening handshake (RFC 6455 §4.2.1), or "" when it is.
std::string handshake_problem(const Env& env);

/// Why the request's `Origin` may not open a WebSocket, or "" when it may. A request without Origin (not
/// from a browser) may; so may one whose Origin names the request's own host and port (its `Host`, the
/// default port of the Origin's scheme left out), as gorilla/websocket and Django Channels check it; and one
/// whose Origin is in `allowed` (compared without case; "*" allows every origin). "null" (a sandboxed page,
/// a file) is allowed only by "*".
std::string origin_problem(const Env& env, const std::vector<std::string>& allowed);

/// Answers a WebSocket upgrade request with `handler` (see the top of this header).
Response accept(Env& env, Handler handler);

using csgi::valid_utf8;  // core/text.hpp: text messages and close reasons must be valid UTF-8

}  // namespace csgi::websocket
