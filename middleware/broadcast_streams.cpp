#include "csgi/middleware/broadcast_streams.hpp"

#include <charconv>
#include <mutex>
#include <utility>

#include "csgi/core/env.hpp"

namespace csgi::mw {
namespace {

constexpr std::string_view last_event_id_key = "HTTP_LAST_EVENT_ID";

void field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ");
  for (char c : value)
    if (c != '\r' && c != '\n' && c != '\0') out += c;
  out += '\n';
}

}  // namespace

std::string sse_frame(std::string_view data, std::string_view event, std::string_view id) {
  std::string out;
  out.reserve(data.size() + event.size() + id.size() + 24);
  if (!event.empty()) field(out, "event", event);
  if (!id.empty()) field(out, "id", id);
  for (;;) {
    std::size_t end = data.find_first_of("\r\n");
    out.append("data: ").append(data.substr(0, end)).append("\n");
    if (end == std::string_view::npos) break;
    end += data.compare(end, 2, "\r\n") == 0 ? 2 : 1;
    data.remove_prefix(end);
  }
  out += '\n';
  return out;
}

std::optional<std::uint64_t> last_event_id(const Env& env) {
  std::string_view v = env.get(last_event_id_key);
  std::uint64_t id = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return id;
}

namespace {

/// An SSE stream's writer: the preamble goes first, whoever writes first (the subscription may deliver
/// kept messages before sse_subscribe's own first write); writes never overlap (RES-10).
class SseStream {
public:
  SseStream(WriterPtr w, std::string preamble) : w_(std::move(w)), preamble_(std::move(preamble)) {}
  bool write(std::string_view chunk) {
    std::lock_guard lock(mu_);
    if (!preamble_.empty() && !w_->write(std::exchange(preamble_, std::string()))) return false;
    return w_->write(chunk);
  }
  void close() {
    std::lock_guard lock(mu_);
    w_->close();
  }

private:
  std::mutex mu_;
  WriterPtr w_;
  std::string preamble_;
};

}  // namespace

Response sse_subscribe(Env& env, Broadcast& hub, std::string topic, SseOptions options) {
  std::optional<std::uint64_t> after = last_event_id(env);
  return Response::delayed([&hub, topic = std::move(topic), options = std::move(options), after](Responder r) {
    Headers h{{"Content-Type", "text/event-stream; charset=utf-8"}, {"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
    auto stream = std::make_shared<SseStream>(
        r.start(200, std::move(h)), options.retry_ms ? "retry: " + std::to_string(options.retry_ms) + "\n\n" : ": ok\n\n");
    Subscriber s;
    s.deliver = [stream, event = options.event](const BroadcastMessage& m, std::uint64_t) {
      return stream->write(sse_frame(m.data, event, std::to_string(m.id)));
    };
    s.heartbeat = [stream] { return stream->write(": keep-alive\n\n"); };
    s.ended = [stream](std::string_view) { stream->close(); };
    // Subscribed before the preamble goes out: a client that has read it gets every later message.
    hub.subscribe(topic, std::move(s), after).detach();
    stream->write({});
  });
}

Subscriber websocket_subscriber(const std::shared_ptr<websocket::Connection>& c) {
  std::weak_ptr<websocket::Connection> weak = c;
  Subscriber s;
  s.deliver = [weak](const BroadcastMessage& m, std::uint64_t) {
    auto c = weak.lock();
    if (!c) return false;
    if (c->send_text(m.data)) return true;
    c->close(websocket::close_code::try_again_later, "too slow");
    return false;
  };
  s.ended = [weak](std::string_view reason) {
    if (auto c = weak.lock()) c->close(websocket::close_code::try_again_later, reason);
  };
  return s;
}

Response websocket_subscribe(Env& env, Broadcast& hub, std::string topic, websocket::Handler handler) {
  // on_open and on_close run one after the other for a connection: the handle needs no lock.
  auto sub = std::make_shared<Subscription>();
  handler.on_open = [&hub, topic = std::move(topic), sub, open = std::move(handler.on_open)](websocket::Connection& c) {
    *sub = hub.subscribe(topic, websocket_subscriber(c.shared_from_this()));
    if (open) open(c);
  };
  handler.on_close = [sub, close = std::move(handler.on_close)](websocket::Connection& c, int code, std::string_view reason) {
    sub->cancel();
    if (close) close(c, code, reason);
  };
  return websocket::accept(env, std::move(handler));
}

}  // namespace csgi::mw
