// The bytes of a WebSocket over an HTTP/2 stream (see h2_websocket.hpp).
#include "csgi/adapters/standalone/detail/http2/h2_websocket.hpp"

#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"

namespace csgi::standalone::detail {

bool H2WsPipe::write(const char* data, std::size_t n) {
  if (!head_done) {
    // Beast's handshake response: its status line, then fields up to the empty line.
    constexpr std::size_t head_max = 16384;
    std::size_t before = head.size();
    head.append(data, std::min(n, head_max - std::min(head_max, before)));
    auto end = head.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (head.size() >= head_max) return false;
      return true;
    }
    head_done = true;
    bool switched = head.compare(0, 13, "HTTP/1.1 101 ") == 0;
    std::size_t used = end + 4 - before;
    std::string().swap(head);
    if (!switched) return false;
    data += used;
    n -= used;
  }
  if (out_pos == out.size()) {
    out.clear();
    out_pos = 0;
  }
  out.append(data, n);
  return true;
}

void H2WsStream::end() noexcept {
  if (p_->out_end || p_->gone) return;
  p_->out_end = true;
  if (p_->more) p_->more();
}

void H2WsStream::close(error_code& ec) noexcept {
  ec = {};
  // Ended by the closing handshake (teardown): what is unsent still goes, then END_STREAM.
  if (!p_->out_end && !p_->gone && p_->reset) p_->reset();
  p_->closed();
}

// The app answered an extended CONNECT with its 101 after handing csgix.websocket its handler: the stream
// is answered 200 with the app's fields, and its DATA goes to and from a WebSocket session.
void H2Conn::begin_websocket(std::int32_t id, Response& res, websocket::Handler handler) {
  H2Request* req = session_->request(id);
  if (!req || !req->env) return;
  if (tr_.thread().stopping) {
    session_->respond(id, Response::error(503, "server stopping"));
    return pump();
  }
  auto pipe = std::make_shared<H2WsPipe>(tr_.thread().ioc.get_executor());
  std::weak_ptr<Transport> wc = tr_.weak_from_this();
  pipe->consume = [wc, id](std::size_t n) {
    if (auto c = wc.lock(); c && c->h2()) c->h2()->ws_consume(id, n);
  };
  pipe->more = [wc, id] {
    if (auto c = wc.lock(); c && c->h2()) c->h2()->ws_more(id);
  };
  pipe->reset = [wc, id] {
    if (auto c = wc.lock(); c && c->h2()) c->h2()->ws_reset(id);
  };
  Headers headers = std::move(res.headers);  // less Upgrade and Connection (submit() drops them)
  headers.remove("sec-websocket-accept");
  WsStart st;
  st.handler = std::move(handler);
  st.handshake = ws_handshake_text(*req->env);
  st.remote_addr = tr_.peer().addr;
  if (!ws_budget_) ws_budget_ = std::make_shared<ByteBudget>(tr_.shared().opt.ws_connection_buffer_bytes);
  st.connection_budget = ws_budget_;
  st.on_end = [wc, id] {
    if (auto c = wc.lock(); c && c->h2()) c->h2()->ws_ended(id);
  };
  if (!session_->start_websocket(id, headers, pipe)) return pump();
  ws_[id] = start_ws_session(tr_.thread(), H2WsStream(pipe), std::move(st));
  pump();
}

void H2Conn::ws_consume(std::int32_t id, std::size_t n) {
  if (!session_) return;
  session_->ws_consume(id, n);
  pump();
}

void H2Conn::ws_more(std::int32_t id) {
  if (!session_) return;
  session_->ws_more(id);
  pump();
}

void H2Conn::ws_reset(std::int32_t id) {
  if (!session_) return;
  session_->reset(id);
  pump();
}

void H2Conn::ws_ended(std::int32_t id) { ws_.erase(id); }

}  // namespace csgi::standalone::detail
