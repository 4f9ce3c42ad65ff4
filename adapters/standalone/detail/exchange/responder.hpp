#pragma once
// What every protocol's exchange shares once the app has answered: the Responder and the streaming Writer
// of a delayed response (one pair for HTTP/1 and HTTP/2), the request kept alive until that response is
// complete (APP-4), the pull of a stream or a delayed response's callable on the app's pool thread, and
// the words of the Content-Length rule (ADP-13).
//
// The Responder and Writer may be used from any thread. They reach the request only through its io
// thread's mailbox, as calls on a ResponseRoute, which the protocol implements: the HTTP/1 connection, or
// the HTTP/2 stream of a connection. A route whose request is gone does nothing (a writer is told so: its
// writes return false), so answering or dropping them after the client, the io thread or the server is
// gone is harmless.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "csgi/core/env.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone::detail {

class Mailbox;

inline constexpr std::size_t writer_high_water = 1 << 20;  // a Writer off the io thread waits above this
inline constexpr std::size_t writer_low_water = 256 * 1024;

/// Keeps a delayed response's request (its env and what the env's values point into) until the response
/// is complete (APP-4): `held` is what the protocol gave it (an HTTP/2 stream's request from the start;
/// an HTTP/1 connection's env when the connection closes first). finish() ends that: what is held goes.
struct RequestKeeper {
  std::mutex mu;
  bool complete = false;
  std::shared_ptr<void> held;
  void finish() noexcept;
};

struct WriterState;

/// Where the answers of a delayed response go, on the io thread (called through the mailbox).
class ResponseRoute {
public:
  virtual ~ResponseRoute() = default;
  virtual void respond(Response r) = 0;
  /// The Writer's head. A route whose request is gone ends the writer (WriterState::gone).
  virtual void start(const std::shared_ptr<WriterState>& w, int status, Headers headers) = 0;
  /// New bytes in the writer, or its end.
  virtual void flush(const std::shared_ptr<WriterState>& w) = 0;
  /// The Responder was dropped unanswered.
  virtual void dropped() = 0;
};

/// A streaming Writer's bytes on their way from the app's thread to the protocol, which takes them on
/// the io thread (unframed: HTTP/1 frames them as it takes them).
struct WriterState {
  std::mutex mu;
  std::condition_variable cv;
  std::string pending;     // written, not yet taken
  Headers trailers;        // set_trailers(): sent after the body where the protocol can (ADP-17)
  std::size_t unsent = 0;  // taken by the protocol but not yet written
  bool closed = false;
  bool aborted = false;    // dropped without close(): the response ends as failed (ADP-4)
  bool dead = false;       // the request is gone (or ran past its length): writes fail
  bool flush_posted = false;
  bool head_only = false;  // HEAD or a status without a body: writes are dropped
  // A body framed by the app's Content-Length (ADP-13), known once the head is out (begin()): what it
  // still allows, and how far the app ran past it (0: not past). A write past it is cut there and returns
  // false, as if the client had gone.
  bool counting = false;
  std::uint64_t declared = 0, left = 0, overrun = 0;
  std::shared_ptr<ResponseRoute> route;
  std::shared_ptr<Mailbox> mailbox;
  std::shared_ptr<RequestKeeper> keeper;  // the response is complete when the writer is closed or dropped
  std::chrono::milliseconds send_timeout{60000};

  /// The io thread sent the head: a head-only response drops what was written; one with a declared
  /// length counts from here (what the app's thread wrote before is held to it too).
  void begin(bool head_only, std::optional<std::uint64_t> declared);
  /// What the io thread finds in a turn.
  struct Turn {
    bool fin = false;      // closed (or ran past its length): nothing more will come
    bool aborted = false;  // dropped without close()
    std::uint64_t bytes = 0;  // taken in this turn
    std::uint64_t declared = 0, left = 0, overrun = 0;
    Headers trailers;      // at fin, unless aborted
  };
  /// The io thread's turn: the bytes written since the last one go to `sink(std::string_view)`.
  template <class Sink>
  Turn take(Sink&& sink) {
    std::lock_guard lock(mu);
    flush_posted = false;
    std::uint64_t n = pending.size();
    if (n > 0) {
      sink(std::string_view(pending));
      pending.clear();
    }
    Turn turn = turn_locked();
    turn.bytes = n;
    return turn;
  }
  Turn turn_locked();
  /// Its request is gone: writes return false from now on.
  void gone() noexcept;
  /// Asks the io thread to take the bytes (with mu held).
  void post_flush(const std::shared_ptr<WriterState>& self);
};

/// The Responder of a delayed response.
std::shared_ptr<ResponderImpl> make_responder(std::shared_ptr<ResponseRoute> route, std::shared_ptr<Mailbox> mailbox,
                                              std::chrono::milliseconds send_timeout,
                                              std::shared_ptr<RequestKeeper> keeper);

/// The trailer fields of a pull stream that ended (RES-15). When trailers() throws, none: `error` says
/// why, for the caller's log (the body ends without them).
Headers ended_stream_trailers(Stream& stream, std::string& error) noexcept;

struct FaultSlot;
class Transport;

/// Where the pieces below report (csgi.errors with the request's line, as the protocol writes it), and
/// the fault scope they call app code in (crash containment in a prefork worker; none by default).
class ExchangeLog {
public:
  virtual ~ExchangeLog() = default;
  virtual void error(std::string_view what) noexcept = 0;
  struct FaultScope {
    FaultSlot* slot = nullptr;
    Transport* conn = nullptr;
  };
  virtual FaultScope fault_scope() const noexcept { return {}; }
};

/// csgi.errors lines about one request: `csgi: <what> ("<METHOD> <URI> <PROTOCOL>")`, the request's line
/// copied when this is made (the env may go before a line is written).
class RequestLog final : public ExchangeLog {
public:
  RequestLog(ErrorStream& errors, const Env* env);
  void error(std::string_view what) noexcept override;

private:
  ErrorStream* errors_;
  std::string line_;
};

/// Calls a delayed response's callable with its Responder; an exception is logged (the Responder,
/// dropped unanswered, answers 500).
void call_delayed(Delayed& fn, std::shared_ptr<ResponderImpl> responder, ExchangeLog& log) noexcept;

/// The trailer fields of a pull stream that ended (RES-15); one that throws is logged and the body ends
/// without them.
Headers stream_trailers(Stream& stream, ExchangeLog& log) noexcept;

/// Closes a pull stream; a close() that throws is logged.
void close_stream(Stream& stream, ExchangeLog& log) noexcept;

/// The first non-empty chunk of a pull stream (the head waits for it: ADP-5): 1 with it in `chunk`, 0 at
/// the end, -1 when next() threw (logged: the answer is a 500).
int first_chunk(Stream& stream, std::string& chunk, ExchangeLog& log) noexcept;

/// A pull stream's body on the app's pool thread, where next() may block: the first chunk pulled here
/// (ADP-5), then the chunks written through a Writer, whose back-pressure holds this thread while the
/// client is slow. An empty stream with trailers and no declared length is sent as trailers only when
/// `can_trail` (the protocol can carry them after an empty body). The stream is closed at the end.
void pull_on_pool(StreamPtr stream, int status, Headers headers, const std::shared_ptr<ResponderImpl>& responder,
                  bool can_trail, ExchangeLog& log) noexcept;

/// On the app's pool thread, with the app's response: a delayed response's callable, or a pull stream with
/// a body to send (`head`: a HEAD request), is app code that may block, so it runs here and answers
/// through the Responder that `make()` gives. False for any other response: the io thread sends it.
/// `can_trail`: the protocol can send trailers after an empty body. The log lines name the request.
template <class MakeResponder>
bool answer_on_pool(Response& res, bool head, bool can_trail, const Env& env, ErrorStream& errors, MakeResponder&& make) {
  auto* stream = std::get_if<StreamPtr>(&res.body);
  bool pulled = stream && *stream && !head && !status_has_no_body(res.status);
  if (!pulled && !std::holds_alternative<Delayed>(res.body)) return false;
  RequestLog log(errors, &env);
  std::shared_ptr<ResponderImpl> responder = make();
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed fn = std::move(*d);
    call_delayed(fn, std::move(responder), log);
  } else {
    pull_on_pool(std::move(*stream), res.status, std::move(res.headers), responder, can_trail, log);
  }
  return true;
}

/// The log line of a body that broke its declared length (ADP-13); `then` says what the protocol does.
std::string length_error(std::uint64_t declared, std::uint64_t produced, bool over, std::string_view then);

}  // namespace csgi::standalone::detail
