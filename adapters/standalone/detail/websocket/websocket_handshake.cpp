// csgix.websocket on a connection: the app's handler is taken during its call, and its 101 hands the
// socket to a WebSocket session (websocket_session.hpp). The connection stays, in Phase::websocket, as
// the session's anchor in the io thread's list until the session ends.
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

namespace csgi::standalone::detail {

bool H1Conn::take(websocket::Handler handler) {
  if (sh_.pool && !on_io_thread()) {
    bool ok = false;
    run_on_io([&] { ok = upgrade_here(handler); });
    return ok;
  }
  if (!on_io_thread()) return false;
  return upgrade_here(handler);
}

bool H1Conn::upgrade_here(websocket::Handler& handler) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled) || link_.hijacked || ws_handler_ || req_.http10) return false;
  ws_handler_ = std::make_unique<websocket::Handler>(std::move(handler));
  return true;
}

// The app answered 101 after handing csgix.websocket its handler: the request ends here (access log,
// cleanup handlers, env back to the pool) and the socket goes to the session.
void H1Conn::begin_websocket(Response& res) {
  if (t_.stopping) {
    // The graceful stop has passed this connection by: no new WebSocket now.
    ws_handler_.reset();
    req_.keep_alive = false;
    return handle(Response::error(503, "server stopping"));
  }
  WsStart st;
  st.handler = std::move(*std::exchange(ws_handler_, nullptr));
  st.handshake = ws_handshake_text(*env_);
  st.handshake.append(in_.unparsed());
  st.pending_out = out_.take();  // what earlier pipelined responses still have to write
  st.headers = std::move(res.headers);
  st.remote_addr = tr_.peer().addr;
  std::weak_ptr<H1Conn> weak = weak_from_this();
  st.on_end = [weak] {
    if (auto c = weak.lock()) c->close_now();
  };
  req_.status = 101;
  cleanup_.report_sent({101, 0});
  drop_env();
  parser_.reset();
  body_in_.reset();
  in_.buf.reset();
  in_.cap = in_.begin = in_.end = 0;
  clear_deadline();
  if (tr_.dead()) return close_now();
  phase_ = Phase::websocket;
  // The connection keeps itself, and its session, until close_now (the session's end, or the io thread's).
  self_hold_ = shared_from_this();
  Socket socket = tr_.take_socket();
  if (auto tls = tr_.take_tls()) ws_ = start_ws_session(t_, std::move(socket), std::move(tls), std::move(st));
  else ws_ = start_ws_session(t_, std::move(socket), std::move(st));
}

}  // namespace csgi::standalone::detail
