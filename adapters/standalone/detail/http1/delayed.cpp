// Delayed responses of the standalone server: the Responder and the streaming Writer may be used from any
// thread; they post to the connection's io thread (see conn.hpp).
#include "csgi/adapters/standalone/detail/http1/conn.hpp"

namespace csgi::standalone::detail {

struct WriterState {
  std::mutex mu;
  std::condition_variable cv;
  std::string pending;
  Headers trailers;        // set_trailers(): sent after the last chunk of a chunked body (ADP-17)
  std::size_t unsent = 0;  // bytes handed to the connection but not yet written
  bool closed = false;
  bool aborted = false;  // dropped without close(): the response ends as failed (ADP-4)
  bool dead = false;
  bool flush_posted = false;
  // The framing is decided on the io thread (on_writer_start), which the app's thread may outrun: bytes
  // written before that are kept raw and framed as one chunk once it is known.
  bool framed = false;
  bool chunked = false;
  bool head_only = false;
  // A body framed by the app's Content-Length (ADP-13): what it still allows, and how far the app ran
  // past it (0: not past). A write past it is cut there and returns false, as if the client had gone.
  bool counting = false;
  std::uint64_t declared = 0, left = 0, overrun = 0;
  // Only the io thread locks it: an app thread that kept the last reference would destroy the connection
  // off its thread, perhaps after the io thread is gone.
  std::weak_ptr<Conn> conn;
  std::shared_ptr<Mailbox> mailbox;
  std::shared_ptr<RequestKeeper> keeper;  // the response is complete when the writer is closed or dropped
  std::chrono::milliseconds send_timeout{60000};

  void post_flush(std::shared_ptr<WriterState> self);  // with mu held
};

/// A call posted to the io thread for a writer. Destroyed without having run (its io thread went first),
/// it tells the writer that its connection is gone, so that the app's writes fail instead of waiting.
struct WriterCall {
  std::shared_ptr<WriterState> st;
  explicit WriterCall(std::shared_ptr<WriterState> s) noexcept : st(std::move(s)) {}
  WriterCall(WriterCall&&) noexcept = default;
  WriterCall& operator=(WriterCall&&) = delete;
  ~WriterCall() {
    if (st) writer_gone(*st);
  }
};

struct FlushCall : WriterCall {
  using WriterCall::WriterCall;
  void operator()() {
    auto self = std::move(st);
    if (auto c = self->conn.lock())
      c->on_writer_flush(self);
    else
      writer_gone(*self);
  }
};

struct StartCall : WriterCall {
  StartCall(std::shared_ptr<WriterState> s, int status, Headers headers)
      : WriterCall(std::move(s)), status(status), headers(std::make_shared<Headers>(std::move(headers))) {}
  int status;
  std::shared_ptr<Headers> headers;
  void operator()() {
    auto self = std::move(st);
    if (auto c = self->conn.lock())
      c->on_writer_start(self, status, std::move(*headers));
    else
      writer_gone(*self);
  }
};

void WriterState::post_flush(std::shared_ptr<WriterState> self) {
  if (flush_posted) return;
  flush_posted = true;
  FlushCall call(std::move(self));
  if (mailbox->post(call)) return;
  // The io thread is gone: nothing will be sent. (mu is held: the call must not end the writer itself.)
  call.st.reset();
  dead = true;
  cv.notify_all();
}

class StreamWriter final : public Writer {
public:
  explicit StreamWriter(std::shared_ptr<WriterState> st) : st_(std::move(st)) {}
  ~StreamWriter() override {
    {
      std::lock_guard lock(st_->mu);
      if (!st_->closed && !st_->dead) {
        st_->closed = true;
        st_->aborted = true;
        st_->post_flush(st_);
      }
    }
    st_->keeper->finish();
  }
  bool write(std::string_view chunk) override {
    std::unique_lock lock(st_->mu);
    if (st_->dead || st_->closed) return false;
    if (chunk.empty() || st_->head_only) return true;
    if (st_->counting) {
      if (chunk.size() > st_->left) {
        st_->overrun = st_->declared - st_->left + chunk.size();
        st_->pending.append(chunk.substr(0, st_->left));
        st_->left = 0;
        st_->dead = true;
        st_->post_flush(st_);
        return false;
      }
      st_->left -= chunk.size();
    }
    append_body(st_->pending, chunk, st_->chunked && st_->framed);
    st_->post_flush(st_);
    if (st_->pending.size() + st_->unsent > writer_high_water && !st_->dead && !st_->mailbox->on_io_thread()) {
      // Back-pressure for producers on other threads; a client that stops reading ends the wait.
      bool ok = st_->cv.wait_for(lock, st_->send_timeout, [&] {
        return st_->dead || st_->pending.size() + st_->unsent < writer_low_water;
      });
      if (!ok) st_->dead = true;
    }
    return !st_->dead;
  }
  void close() override {
    {
      std::lock_guard lock(st_->mu);
      if (st_->closed) return;
      st_->closed = true;
      if (!st_->dead) {
        if (st_->framed && st_->chunked && !st_->head_only) append_last_chunk(st_->pending, st_->trailers);
        st_->post_flush(st_);
      }
    }
    st_->keeper->finish();
  }
  void set_trailers(Headers trailers) override {
    std::lock_guard lock(st_->mu);
    if (!st_->closed) st_->trailers = std::move(trailers);
  }

private:
  std::shared_ptr<WriterState> st_;
};

/// The Responder of a delayed response. It reaches its connection only through the io thread's mailbox,
/// so answering or dropping it after the connection, the io thread or the server is gone does nothing.
class ConnResponder final : public ResponderImpl,
                            public RequestKeeper,
                            public std::enable_shared_from_this<ConnResponder> {
public:
  ConnResponder(std::weak_ptr<Conn> c, std::shared_ptr<Mailbox> mailbox, std::chrono::milliseconds send_timeout)
      : conn_(std::move(c)), mailbox_(std::move(mailbox)), send_timeout_(send_timeout) {}
  ~ConnResponder() override {
    if (!answered_.exchange(true)) {
      // The app dropped the responder without answering: answer 500 rather than leave the client hanging.
      auto call = [c = conn_] {
        if (auto conn = c.lock()) conn->on_responder_dropped();
      };
      try {
        mailbox_->post(call);
      } catch (...) {
      }
    }
    finish();
  }
  void respond(Response r) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    if (r.is_delayed()) throw std::logic_error("csgi: Responder::respond given a delayed response");
    auto call = [c = conn_, shared = std::make_shared<Response>(std::move(r))] {
      if (auto conn = c.lock()) conn->on_delayed(std::move(*shared));
    };
    mailbox_->post(call);
    finish();
  }
  WriterPtr start(int status, Headers headers) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    auto st = std::make_shared<WriterState>();
    st->conn = conn_;
    st->mailbox = mailbox_;
    st->send_timeout = send_timeout_;
    st->keeper = std::shared_ptr<RequestKeeper>(shared_from_this(), static_cast<RequestKeeper*>(this));
    StartCall call(st, status, std::move(headers));
    mailbox_->post(call);  // not posted: the call, destroyed, ends the writer (its writes return false)
    return std::make_shared<StreamWriter>(st);
  }

private:
  std::weak_ptr<Conn> conn_;
  std::shared_ptr<Mailbox> mailbox_;
  std::chrono::milliseconds send_timeout_;
  std::atomic<bool> answered_{false};
};

std::shared_ptr<ResponderImpl> make_responder(std::weak_ptr<Conn> conn, std::shared_ptr<Mailbox> mailbox,
                                              std::chrono::milliseconds send_timeout,
                                              std::weak_ptr<RequestKeeper>& keeper) {
  auto r = std::make_shared<ConnResponder>(std::move(conn), std::move(mailbox), send_timeout);
  keeper = std::shared_ptr<RequestKeeper>(r, static_cast<RequestKeeper*>(r.get()));
  return r;
}

void writer_gone(WriterState& st) noexcept {
  std::lock_guard lock(st.mu);
  st.dead = true;
  st.cv.notify_all();
}

void Conn::on_delayed(Response r) {
  if (phase_ != Phase::delayed) return;
  phase_ = Phase::reading;
  start_body(r);
  if (phase_ == Phase::reading) process();
}

void Conn::on_writer_start(std::shared_ptr<WriterState> st, int status, Headers headers) {
  if (phase_ != Phase::delayed) {
    std::lock_guard lock(st->mu);
    st->dead = true;
    return;
  }
  if (status < 100 || status > 999) status = 500;
  bool no_body = status_has_no_body(status);
  std::optional<std::uint64_t> declared = declared_length(headers);
  bool chunked = !no_body && !req_.head && !declared && !req_.http10;
  if (!no_body && !req_.head && !declared && req_.http10) req_.keep_alive = false;
  write_head(status, headers, no_body ? std::nullopt : declared, chunked);
  {
    std::lock_guard lock(st->mu);
    st->chunked = chunked;
    st->head_only = req_.head || no_body;
    st->framed = true;
    // Frame what the app wrote before this ran (see WriterState::framed).
    if (st->head_only) {
      st->pending.clear();
    } else if (declared) {
      st->counting = true;
      st->declared = *declared;
      if (st->pending.size() > *declared) {
        st->overrun = st->pending.size();
        st->pending.resize(*declared);
        st->dead = true;
      }
      st->left = *declared - st->pending.size();
    } else if (chunked) {
      std::string early = std::move(st->pending);
      st->pending.clear();
      if (!early.empty()) append_body(st->pending, early, true);
      if (st->closed && !st->aborted) append_last_chunk(st->pending, st->trailers);
    }
  }
  body_.writer = std::move(st);
  phase_ = Phase::writer;
  on_writer_flush(body_.writer);
}

void Conn::on_writer_flush(const std::shared_ptr<WriterState>& st) {
  if (st != body_.writer || phase_ != Phase::writer) {
    std::lock_guard lock(st->mu);
    st->flush_posted = false;
    return;
  }
  WriterTurn turn = take_writer_bytes(*st);
  bool done = flush();
  {
    std::lock_guard lock(st->mu);
    st->unsent = out_.unsent();
  }
  st->cv.notify_all();
  if (phase_ == Phase::closed) return;
  // The client is gone: the writer's next write() says so (once the env is handed over), and nothing
  // more will be sent.
  if (link_.dead) return writer_failed(false);
  if (turn.aborted) return writer_failed(true);
  if (!done) return wait_write();
  if (turn.fin) end_writer(turn);
}

// Moves what the app wrote into the output, and reads the writer's state with it.
Conn::WriterTurn Conn::take_writer_bytes(WriterState& st) {
  std::lock_guard lock(st.mu);
  st.flush_posted = false;
  if (!st.pending.empty()) {
    req_.sent_body += st.pending.size();
    out_.append(st.pending);
    st.pending.clear();
  }
  WriterTurn turn;
  turn.aborted = st.aborted;
  turn.declared = st.declared;
  turn.left = st.counting ? st.left : 0;
  turn.overrun = st.overrun;
  turn.fin = st.closed || turn.overrun > 0;
  return turn;
}

// The client is gone, or the app dropped its Writer without close(): the connection ends.
void Conn::writer_failed(bool aborted) {
  req_.keep_alive = false;
  if (aborted) {
    log_error("a streaming Writer was dropped without close(); the response ends as failed");
    body_.writer.reset();
  }
  close_now();
  body_.writer.reset();
}

// The writer closed and all its bytes are written. Past or short of its declared length, the body ends
// the connection (ADP-13).
void Conn::end_writer(const WriterTurn& turn) {
  if (turn.overrun > 0 || turn.left > 0) {
    log_length_error(turn.declared, turn.overrun > 0 ? turn.overrun : turn.declared - turn.left, turn.overrun > 0);
    req_.keep_alive = false;
  }
  body_.writer.reset();
  phase_ = Phase::reading;
  finish_response();
  if (phase_ == Phase::reading) process();
}

}  // namespace csgi::standalone::detail
