// Delayed responses on an HTTP/1 connection: the connection as the route of the exchange's Responder and
// Writer (exchange/responder.hpp), and its writer's bytes framed onto the wire (see h1_conn.hpp).
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

namespace csgi::standalone::detail {

namespace {

/// The route of a delayed response on an HTTP/1 connection. Only the io thread locks the connection: an
/// app thread that kept the last reference would destroy it off its thread.
class Http1Route final : public ResponseRoute {
public:
  explicit Http1Route(std::weak_ptr<H1Conn> c) : c_(std::move(c)) {}
  void respond(Response r) override {
    if (auto c = c_.lock()) c->on_delayed(std::move(r));
  }
  void start(const std::shared_ptr<WriterState>& w, int status, Headers headers) override {
    if (auto c = c_.lock()) c->on_writer_start(w, status, std::move(headers));
    else w->gone();
  }
  void flush(const std::shared_ptr<WriterState>& w) override {
    if (auto c = c_.lock()) c->on_writer_flush(w);
    else w->gone();
  }
  void dropped() override {
    if (auto c = c_.lock()) c->on_responder_dropped();
  }

private:
  std::weak_ptr<H1Conn> c_;
};

}  // namespace

// The Responder of a delayed response on this connection; `keeper` takes the request if the connection
// closes before the response is complete (hand_over).
std::shared_ptr<ResponderImpl> H1Conn::delayed_responder(const std::shared_ptr<H1Conn>& self,
                                                       std::shared_ptr<RequestKeeper> keeper) {
  return make_responder(std::make_shared<Http1Route>(self), t_.mailbox, sh_.opt.send_timeout, std::move(keeper));
}

void H1Conn::on_delayed(Response r) {
  if (phase_ != Phase::delayed) return;
  phase_ = Phase::reading;
  start_body(r);
  if (phase_ == Phase::reading) process();
}

void H1Conn::on_writer_start(const std::shared_ptr<WriterState>& st, int status, Headers headers) {
  if (phase_ != Phase::delayed) return st->gone();
  if (status < 200 || status > 999) status = 500;
  bool no_body = status_has_no_body(status);
  std::optional<std::uint64_t> declared = declared_length(headers);
  bool chunked = !no_body && !req_.head && !declared && !req_.http10;
  if (!no_body && !req_.head && !declared && req_.http10) req_.keep_alive = false;
  write_head(status, headers, no_body ? std::nullopt : declared, chunked);
  st->begin(req_.head || no_body, declared);
  body_ = WriterBody{st, chunked};
  phase_ = Phase::body;
  on_writer_flush(st);
}

void H1Conn::on_writer_flush(const std::shared_ptr<WriterState>& st) {
  auto* body = std::get_if<WriterBody>(&body_);
  if (!body || st != body->writer || phase_ != Phase::body) {
    std::lock_guard lock(st->mu);
    st->flush_posted = false;
    return;
  }
  bool chunked = body->chunked;
  WriterState::Turn turn = st->take([&](std::string_view bytes) { append_body(out_.buf, bytes, chunked); });
  req_.sent_body += turn.bytes;
  if (turn.fin && !turn.aborted && chunked) append_last_chunk(out_.buf, turn.trailers);
  bool done = flush();
  {
    std::lock_guard lock(st->mu);
    st->unsent = out_.unsent();
  }
  st->cv.notify_all();
  if (phase_ == Phase::closed) return;
  // The client is gone: the writer's next write() says so (once the env is handed over), and nothing
  // more will be sent.
  if (tr_.dead()) return writer_failed(false);
  if (turn.aborted) return writer_failed(true);
  if (!done) return wait_write();
  if (turn.fin) end_writer(turn);
}

// The client is gone, or the app dropped its Writer without close(): the connection ends.
void H1Conn::writer_failed(bool aborted) {
  req_.keep_alive = false;
  if (aborted) log_error("a streaming Writer was dropped without close(); the response ends as failed");
  close_now();
  body_ = std::monostate{};
}

// The writer closed and all its bytes are written. Past or short of its declared length, the body ends
// the connection (ADP-13).
void H1Conn::end_writer(const WriterState::Turn& turn) {
  if (turn.overrun > 0 || turn.left > 0) {
    log_length_error(turn.declared, turn.overrun > 0 ? turn.overrun : turn.declared - turn.left, turn.overrun > 0);
    req_.keep_alive = false;
  }
  body_ = std::monostate{};
  phase_ = Phase::reading;
  finish_response();
  if (phase_ == Phase::reading) process();
}

}  // namespace csgi::standalone::detail
