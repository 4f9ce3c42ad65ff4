// csgix.websocket on a connection: the app's handler is taken during its call, and its 101 hands the
// socket to a WebSocket session (websocket_session.hpp). The connection stays, in Phase::websocket, as
// the session's anchor in the io thread's list until the session ends.
#include "csgi/adapters/standalone/conn.hpp"

namespace csgi::standalone::detail {

bool Conn::upgrade(websocket::Handler handler) {
  if (sh_.pool && !on_io_thread()) {
    bool ok = false;
    run_on_io([&] { ok = upgrade_here(handler); });
    return ok;
  }
  if (!on_io_thread()) return false;
  return upgrade_here(handler);
}

bool Conn::upgrade_here(websocket::Handler& handler) {
  if ((phase_ != Phase::app && phase_ != Phase::pooled) || hijacked_ || ws_handler_ || http10_) return false;
  ws_handler_ = std::make_unique<websocket::Handler>(std::move(handler));
  return true;
}

// What earlier pipelined responses still have to write, in order.
std::string Conn::pending_output() {
  std::string o;
  std::size_t pos = out_pos_;
  for (std::size_t i = ext_done_; i < ext_.size(); ++i) {
    if (ext_[i].at > pos) {
      o.append(out_, pos, ext_[i].at - pos);
      pos = ext_[i].at;
    }
    o.append(ext_[i].data.substr(i == ext_done_ ? ext_off_ : 0));
  }
  if (out_.size() > pos) o.append(out_, pos);
  out_.clear();
  out_pos_ = 0;
  ext_.clear();
  ext_done_ = ext_off_ = 0;
  return o;
}

// The app answered 101 after handing csgix.websocket its handler: the request ends here (access log,
// cleanup handlers, env back to the pool) and the socket goes to the session.
void Conn::begin_websocket(Response& res) {
  if (t_.stopping) {
    // The graceful stop has passed this connection by: no new WebSocket now.
    ws_handler_.reset();
    keep_alive_ = false;
    return handle(Response::error(503, "server stopping"));
  }
  WsStart st;
  st.handler = std::move(*std::exchange(ws_handler_, nullptr));
  st.handshake = ws_handshake_text(*env_);
  if (prebody_ready_) st.handshake.append(prebody_, prebody_pos_);
  st.handshake.append(buf_.get() + begin_, end_ - begin_);
  st.pending_out = pending_output();
  st.headers = std::move(res.headers);
  st.remote_addr = remote_addr_;
  std::weak_ptr<Conn> weak = weak_from_this();
  st.on_end = [weak] {
    if (auto c = weak.lock()) c->close_now();
  };
  status_ = 101;
  response_started_ = true;
  log_access();
  drop_env();
  parser_.reset();
  prebody_ = {};
  buf_.reset();
  cap_ = begin_ = end_ = 0;
  clear_deadline();
  if (dead_) return close_now();
  phase_ = Phase::websocket;
  // The connection keeps itself, and its session, until close_now (the session's end, or the io thread's).
  self_hold_ = shared_from_this();
  if (waiting_ || write_waiting_) {
    error_code ec;
    socket_.cancel(ec);  // their handlers see operation_aborted and leave the connection alone
  }
  if (tls_) ws_ = start_ws_session(t_, std::move(socket_), std::move(tls_), std::move(st));
  else ws_ = start_ws_session(t_, std::move(socket_), std::move(st));
}

}  // namespace csgi::standalone::detail
