#pragma once
/// The two clients of a Broadcast topic: a WebSocket connection and a Server-Sent Events stream
/// (text/event-stream on a streaming Writer, https://html.spec.whatwg.org/multipage/server-sent-events.html).
///
///   if (path == "/ws") return csgi::mw::websocket_subscribe(env, *hub, "room:lobby");
///   if (path == "/events") return csgi::mw::sse_subscribe(env, *hub, "room:lobby");
///
/// Both send each message's data as it is: a WebSocket text message, an SSE event whose `id:` is the
/// message id. A client that reconnects with Last-Event-ID first gets the topic's kept messages after that
/// id (BroadcastOptions::history). An SSE stream sends a comment line when nothing was sent for a
/// heartbeat interval, which keeps proxies from timing it out and finds clients that went away.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/websocket.hpp"
#include "csgi/middleware/broadcast.hpp"

namespace csgi::mw {

/// One SSE event: `event:` and `id:` lines when given (line breaks in them dropped), a `data:` line per
/// line of `data` (LF, CRLF or CR ends one), and the blank line.
std::string sse_frame(std::string_view data, std::string_view event = {}, std::string_view id = {});

/// The request's Last-Event-ID when it is a message id (digits), else none.
std::optional<std::uint64_t> last_event_id(const Env& env);

struct SseOptions {
  /// The `event:` name of every event; empty: none (the browser's "message" event).
  std::string event;
  /// The reconnection delay sent first (`retry:`); 0: none.
  std::uint32_t retry_ms = 2000;
};

/// Answers with a 200 text/event-stream carrying every message of `topic` until the client goes away (or
/// the subscriber is dropped for being slow, or the hub stops: the stream then ends and the client
/// reconnects). The hub must outlive the stream.
Response sse_subscribe(Env& env, Broadcast& hub, std::string topic, SseOptions options = {});

/// A Subscriber that sends each message as a text message on `c`. A message the connection cannot queue
/// (its send queue full) closes it with 1013; when the subscription ends by itself the connection is
/// closed with 1013 and the reason.
Subscriber websocket_subscriber(const std::shared_ptr<websocket::Connection>& c);

/// websocket::accept with `handler`, subscribed to `topic` from on_open to on_close (the handler's own
/// callbacks run after the subscribing and before the cancelling). The hub must outlive the connection.
Response websocket_subscribe(Env& env, Broadcast& hub, std::string topic, websocket::Handler handler = {});

}  // namespace csgi::mw
