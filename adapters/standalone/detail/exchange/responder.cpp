// The Responder and Writer of a delayed response for every protocol, and the pull of a stream on the
// app's pool (see responder.hpp).
#include "csgi/adapters/standalone/detail/exchange/responder.hpp"

#include <stdexcept>

#include "csgi/core/keys.hpp"

#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"

namespace csgi::standalone::detail {

void RequestKeeper::finish() noexcept {
  std::shared_ptr<void> h;
  {
    std::lock_guard lock(mu);
    complete = true;
    h = std::move(held);
  }
}

void WriterState::begin(bool head, std::optional<std::uint64_t> length) {
  std::lock_guard lock(mu);
  head_only = head;
  if (head_only) {
    pending.clear();
    return;
  }
  if (!length) return;
  counting = true;
  declared = *length;
  if (pending.size() > declared) {
    overrun = pending.size();
    pending.resize(declared);
    dead = true;
  }
  left = declared - pending.size();
}

WriterState::Turn WriterState::turn_locked() {
  Turn turn;
  turn.aborted = aborted;
  turn.declared = declared;
  turn.left = counting ? left : 0;
  turn.overrun = overrun;
  turn.fin = closed || overrun > 0;
  if (turn.fin && !aborted) turn.trailers = std::move(trailers);
  return turn;
}

void WriterState::gone() noexcept {
  std::lock_guard lock(mu);
  dead = true;
  cv.notify_all();
}

namespace {

/// A call posted to the io thread for a writer. Destroyed without having run (its io thread went first),
/// it tells the writer that its request is gone, so that the app's writes fail instead of waiting.
struct WriterCall {
  std::shared_ptr<WriterState> st;
  explicit WriterCall(std::shared_ptr<WriterState> s) noexcept : st(std::move(s)) {}
  WriterCall(WriterCall&&) noexcept = default;
  WriterCall& operator=(WriterCall&&) = delete;
  ~WriterCall() {
    if (st) st->gone();
  }
};

struct FlushCall : WriterCall {
  using WriterCall::WriterCall;
  void operator()() {
    auto self = std::move(st);
    self->route->flush(self);
  }
};

struct StartCall : WriterCall {
  StartCall(std::shared_ptr<WriterState> s, int status, Headers headers)
      : WriterCall(std::move(s)), status(status), headers(std::make_shared<Headers>(std::move(headers))) {}
  int status;
  std::shared_ptr<Headers> headers;
  void operator()() {
    auto self = std::move(st);
    self->route->start(self, status, std::move(*headers));
  }
};

}  // namespace

void WriterState::post_flush(const std::shared_ptr<WriterState>& self) {
  if (flush_posted) return;
  flush_posted = true;
  FlushCall call(self);
  if (mailbox->post(call)) return;
  // The io thread is gone: nothing will be sent. (mu is held: the call must not end the writer itself.)
  call.st.reset();
  dead = true;
  cv.notify_all();
}

namespace {

class ExchangeWriter final : public Writer {
public:
  explicit ExchangeWriter(std::shared_ptr<WriterState> st) : st_(std::move(st)) {}
  ~ExchangeWriter() override {
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
    st_->pending.append(chunk);
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
      if (!st_->dead) st_->post_flush(st_);
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

class ExchangeResponder final : public ResponderImpl {
public:
  ExchangeResponder(std::shared_ptr<ResponseRoute> route, std::shared_ptr<Mailbox> mailbox,
                    std::chrono::milliseconds send_timeout, std::shared_ptr<RequestKeeper> keeper)
      : route_(std::move(route)), mailbox_(std::move(mailbox)), send_timeout_(send_timeout), keeper_(std::move(keeper)) {}
  ~ExchangeResponder() override {
    if (!answered_.exchange(true)) {
      // Dropped without an answer: 500 rather than a client left hanging.
      auto call = [route = route_] { route->dropped(); };
      try {
        mailbox_->post(call);
      } catch (...) {
      }
    }
    if (!started_) keeper_->finish();
  }
  void respond(Response r) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    if (r.is_delayed()) throw std::logic_error("csgi: Responder::respond given a delayed response");
    auto call = [route = route_, shared = std::make_shared<Response>(std::move(r))] {
      route->respond(std::move(*shared));
    };
    mailbox_->post(call);
    keeper_->finish();
  }
  WriterPtr start(int status, Headers headers) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    started_ = true;
    auto st = std::make_shared<WriterState>();
    st->route = route_;
    st->mailbox = mailbox_;
    st->send_timeout = send_timeout_;
    st->keeper = keeper_;
    StartCall call(st, status, std::move(headers));
    mailbox_->post(call);  // not posted: the call, destroyed, ends the writer (its writes return false)
    return std::make_shared<ExchangeWriter>(std::move(st));
  }

private:
  std::shared_ptr<ResponseRoute> route_;
  std::shared_ptr<Mailbox> mailbox_;
  std::chrono::milliseconds send_timeout_;
  std::shared_ptr<RequestKeeper> keeper_;
  std::atomic<bool> answered_{false};
  bool started_ = false;
};

}  // namespace

std::shared_ptr<ResponderImpl> make_responder(std::shared_ptr<ResponseRoute> route, std::shared_ptr<Mailbox> mailbox,
                                              std::chrono::milliseconds send_timeout,
                                              std::shared_ptr<RequestKeeper> keeper) {
  return std::make_shared<ExchangeResponder>(std::move(route), std::move(mailbox), send_timeout, std::move(keeper));
}

Headers ended_stream_trailers(Stream& stream, std::string& error) noexcept {
  try {
    try {
      return stream.trailers();
    } catch (const std::exception& e) {
      error = std::string("the response stream's trailers() threw; the body ends without them: ") + e.what();
    } catch (...) {
      error = "the response stream's trailers() threw a non-standard exception; the body ends without them";
    }
  } catch (...) {  // no memory for the message
  }
  return {};
}

RequestLog::RequestLog(ErrorStream& errors, const Env* env) : errors_(&errors) {
  if (!env) return;
  line_ = env->get(keys::REQUEST_METHOD);
  line_ += ' ';
  line_ += env->get(keys::REQUEST_URI);
  line_ += ' ';
  line_ += env->get(keys::SERVER_PROTOCOL);
}

void RequestLog::error(std::string_view what) noexcept {
  try {
    std::string line = "csgi: ";
    line += what;
    if (!line_.empty()) {
      line += " (\"";
      line += line_;
      line += "\")";
    }
    errors_->write(line);
  } catch (...) {
  }
}

void call_delayed(Delayed& fn, std::shared_ptr<ResponderImpl> responder, ExchangeLog& log) noexcept {
  try {
    fn(Responder(std::move(responder)));
  } catch (const std::exception& e) {
    try {
      log.error(std::string("the delayed response's callable threw: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
    log.error("the delayed response's callable threw a non-standard exception");
  }
}

Headers stream_trailers(Stream& stream, ExchangeLog& log) noexcept {
  std::string error;
  Headers trailers = ended_stream_trailers(stream, error);
  if (!error.empty()) log.error(error);
  return trailers;
}

void close_stream(Stream& stream, ExchangeLog& log) noexcept {
  try {
    stream.close();
  } catch (const std::exception& e) {
    try {
      log.error(std::string("response stream close failed: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
    log.error("response stream close failed");
  }
}

int first_chunk(Stream& stream, std::string& chunk, ExchangeLog& log) noexcept {
  try {
    bool more;
    do more = stream.next(chunk);
    while (more && chunk.empty());
    return more ? 1 : 0;
  } catch (const std::exception& e) {
    try {
      log.error(std::string("500: the response stream's first next() threw: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
    log.error("500: the response stream's first next() threw a non-standard exception");
  }
  return -1;
}

void pull_on_pool(StreamPtr stream, int status, Headers headers, const std::shared_ptr<ResponderImpl>& responder,
                  bool can_trail, ExchangeLog& log) noexcept {
  try {
    bool trailers_only = can_trail && !declared_length(headers);
    std::string chunk;
    int first = first_chunk(*stream, chunk, log);
    if (first <= 0) {
      Headers trailers;
      if (first == 0 && trailers_only) trailers = stream_trailers(*stream, log);
      close_stream(*stream, log);
      if (first < 0) return responder->respond(Response::error(500));
      if (trailers.empty()) return responder->respond(Response{status, std::move(headers), std::string()});
      WriterPtr w = responder->start(status, std::move(headers));  // trailers only: an empty body, then them
      w->set_trailers(std::move(trailers));
      w->close();
      return;
    }
    WriterPtr w = responder->start(status, std::move(headers));
    bool complete = false;
    try {
      while (w->write(chunk)) {
        bool more;
        do more = stream->next(chunk);
        while (more && chunk.empty());
        if (!more) {
          w->set_trailers(stream_trailers(*stream, log));
          break;
        }
      }
      complete = true;
    } catch (const std::exception& e) {
      log.error(std::string("the response stream's next() threw after the head was sent: ") + e.what());
    } catch (...) {
      log.error("the response stream's next() threw after the head was sent");
    }
    close_stream(*stream, log);
    // Unless complete, the Writer dropped without close() ends the response as failed (an incomplete body).
    if (complete) w->close();
  } catch (...) {  // no memory for the response: the Responder, dropped unanswered, answers 500
  }
}

std::string length_error(std::uint64_t declared, std::uint64_t produced, bool over, std::string_view then) {
  std::string what = over ? "the response body ran past its Content-Length: declared "
                          : "the response body fell short of its Content-Length: declared ";
  what += std::to_string(declared);
  what += over ? ", produced at least " : ", produced ";
  what += std::to_string(produced);
  what += over ? "; the excess was dropped and " : "; ";
  what += then;
  what += " (ADP-13)";
  return what;
}

}  // namespace csgi::standalone::detail
