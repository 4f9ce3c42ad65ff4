#include "csgi/adapters/cgi/response_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "csgi/core/app_failure.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::cgi {

namespace {


void log_error(Env& env, std::string_view what) noexcept {
  try {
    std::string msg = "csgi: ";
    msg += what;
    msg += " (";
    msg += env.get(keys::REQUEST_METHOD);
    msg += ' ';
    msg += env.get(keys::REQUEST_URI);
    msg += ')';
    env.errors().write(msg);
  } catch (...) {
  }
}

bool no_body(const Env& env, int status) { return status_has_no_body(status) || env.get(keys::REQUEST_METHOD) == "HEAD"; }

/// The Content-Length the app declared, when it is one well-formed number.
std::optional<std::uint64_t> declared_length(const Headers& headers) {
  auto cl = headers.get("Content-Length");
  if (!cl || cl->empty() || cl->size() > 19 || cl->find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return std::stoull(std::string(*cl));
}

void log_length_error(Env& env, std::uint64_t declared, std::uint64_t produced, bool over) {
  std::string what = over ? "the response body ran past its Content-Length: declared "
                          : "the response body fell short of its Content-Length: declared ";
  what += std::to_string(declared);
  what += over ? ", produced at least " : ", produced ";
  what += std::to_string(produced);
  what += over ? "; the excess was dropped and the response is ended as failed (ADP-13)"
               : "; the response is ended as failed (ADP-13)";
  log_error(env, what);
}

/// Holds a streamed body to the Content-Length sent in its head, if any (ADP-13): nothing past it is
/// written (the response ends there, whole by its length, logged), and a body that ends short of it
/// makes the response fail (logged), so that the front server drops it rather than take it as whole.
class Framed {
public:
  explicit Framed(std::optional<std::uint64_t> declared) : declared_(declared) {}
  /// Writes and flushes `chunk`; false when the output failed or the body ran past its length (over()).
  bool write(Env& env, Output& out, std::string_view chunk) {
    if (over_) return false;
    if (declared_ && chunk.size() > *declared_ - sent_) {
      log_length_error(env, *declared_, sent_ + chunk.size(), true);
      std::string_view fits = chunk.substr(0, *declared_ - sent_);
      sent_ = *declared_;
      over_ = true;
      if (!fits.empty() && !out.write(fits)) failed_ = true;
      if (!out.flush()) failed_ = true;
      return false;
    }
    sent_ += chunk.size();
    return out.write(chunk) && out.flush();
  }
  /// The body ran past its length: what fitted went out, the rest was dropped.
  bool over() const { return over_ && !failed_; }
  /// At the end of the body: false when it fell short.
  bool finish(Env& env) const {
    if (!declared_ || sent_ == *declared_) return true;
    log_length_error(env, *declared_, sent_, false);
    return false;
  }

private:
  std::optional<std::uint64_t> declared_;
  std::uint64_t sent_ = 0;
  bool over_ = false;
  bool failed_ = false;
};

/// Writes `length` bytes of a file body; false when the output failed or the file ended early.
bool write_file(const FileBody& f, std::uint64_t length, Env& env, Output& out) {
  std::shared_ptr<FileHandle> h = f.file;
  if (!h) h = FileBody::open(f.path).file;
  std::uint64_t left = length;
  std::uint64_t pos = f.offset;
  std::string buf(std::min<std::uint64_t>(left, 65536), '\0');
  while (left > 0) {
    ssize_t r = ::pread(h->fd(), buf.data(), std::min<std::uint64_t>(left, buf.size()), static_cast<off_t>(pos));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::system_error(errno, std::generic_category(), "reading file body " + f.path);
    if (r == 0) {
      log_length_error(env, length, length - left, false);
      return false;
    }
    if (!out.write({buf.data(), static_cast<std::size_t>(r)})) return false;
    left -= static_cast<std::uint64_t>(r);
    pos += static_cast<std::uint64_t>(r);
  }
  return true;
}

/// Writes a non-delayed body whose head said `length` (the real length of a complete or file body, the
/// declared one of a stream). Returns false when it stopped early.
bool write_body(Body& body, std::optional<std::uint64_t> length, Env& env, Output& out) {
  if (auto* s = std::get_if<std::string>(&body)) return s->empty() || out.write(*s);
  if (auto* b = std::get_if<SharedBytes>(&body)) return !*b || (*b)->empty() || out.write(**b);
  if (auto* f = std::get_if<FileBody>(&body)) return write_file(*f, length.value_or(0), env, out);
  if (auto* sp = std::get_if<StreamPtr>(&body)) {
    StreamPtr stream = *sp;
    if (!stream) return true;
    struct Closer {
      Stream& s;
      ~Closer() {
        try {
          s.close();
        } catch (...) {
        }
      }
    } closer{*stream};
    Framed framed(length);
    std::string chunk;
    while (stream->next(chunk)) {
      if (chunk.empty()) continue;
      if (out.client_gone()) return false;
      if (!framed.write(env, out, chunk)) return framed.over();
    }
    return framed.finish(env);
  }
  throw std::logic_error("a delayed response answered with another delayed response");
}

/// The length the head of `res` carries (ADP-1, ADP-2, ADP-8, ADP-13): none for 1xx/204/304; the real
/// length of a complete or file body (a differing Content-Length from the app is logged), except that an
/// empty answer to HEAD keeps the app's; the app's declared length for a stream.
std::optional<std::uint64_t> head_length(const Response& res, Env& env) {
  if (status_has_no_body(res.status)) return std::nullopt;
  std::optional<std::uint64_t> declared = declared_length(res.headers);
  std::optional<std::uint64_t> known = res.known_length();
  if (!known) return declared;
  bool head = env.get(keys::REQUEST_METHOD) == "HEAD";
  if (head && *known == 0 && !std::holds_alternative<FileBody>(res.body) && declared) return declared;
  if (declared && *declared != *known && !head)
    log_error(env, "the app's Content-Length (" + std::to_string(*declared) + ") differs from its body's length (" +
                       std::to_string(*known) + "); the body's length was sent (ADP-13)");
  return known;
}

bool send_error(Env& env, Output& out, int status) noexcept;

/// Sends a complete (non-delayed) response; a malformed one becomes a 500 before anything is written.
bool send_complete(Response& res, Env& env, Output& out) {
  bool skip = no_body(env, res.status);
  std::string head;
  std::optional<std::uint64_t> len;
  try {
    len = head_length(res, env);
    head = format_head(res.status, res.headers, len);
  } catch (const std::exception& e) {
    log_error(env, std::string("bad response: ") + e.what());
    if (auto* sp = std::get_if<StreamPtr>(&res.body); sp && *sp) (*sp)->close();
    return send_error(env, out, 500);
  }
  if (!out.write(head)) return false;
  if (skip) {
    if (auto* sp = std::get_if<StreamPtr>(&res.body); sp && *sp) (*sp)->close();
    return true;
  }
  return write_body(res.body, len, env, out);
}

bool send_error(Env& env, Output& out, int status) noexcept {
  try {
    Response r = Response::error(status);
    return send_complete(r, env, out);
  } catch (...) {
    return false;
  }
}

// Delayed responses: the serving thread waits on `State` until the app answered and finished.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  Output* out;  // nullptr once the serving thread has moved on
  Env* env;
  bool head_only = false;
  std::optional<Framed> framed;  // the body of start(), held to its declared length
  bool answered = false;  // respond() or start() was called
  bool done = false;      // the response is complete, or abandoned
  bool ok = true;         // everything written so far went out
  bool failed = false;    // nothing could be sent: answer 500
};

class StreamWriter final : public Writer {
public:
  explicit StreamWriter(std::shared_ptr<State> st) : st_(std::move(st)) {}
  // A writer dropped without close() ends the response as failed (ADP-4): the body may be cut short, and
  // a failed response is never passed off as complete (for FastCGI, the front server sees it aborted).
  ~StreamWriter() override {
    std::lock_guard lock(st_->mu);
    if (closed_) return;
    if (st_->out && st_->env) log_error(*st_->env, "streaming writer dropped without close()");
    st_->ok = false;
    st_->done = true;
    st_->cv.notify_all();
  }
  bool write(std::string_view chunk) override {
    std::lock_guard lock(st_->mu);
    if (closed_ || !st_->out || !st_->ok) return false;
    if (st_->head_only || chunk.empty()) return true;
    if (!st_->framed || st_->out->client_gone()) return st_->ok = false;
    if (st_->framed->write(*st_->env, *st_->out, chunk)) return true;
    if (!st_->framed->over()) st_->ok = false;
    return false;
  }
  void close() override {
    std::lock_guard lock(st_->mu);
    if (std::exchange(closed_, true)) return;
    bool short_body = st_->out && st_->ok && st_->framed && !st_->head_only && !st_->framed->over() &&
                      !st_->framed->finish(*st_->env);
    if (short_body) st_->ok = false;
    st_->done = true;
    st_->cv.notify_all();
  }

private:
  std::shared_ptr<State> st_;
  bool closed_ = false;
};

class DelayedResponder final : public ResponderImpl {
public:
  explicit DelayedResponder(std::shared_ptr<State> st) : st_(std::move(st)) {}
  ~DelayedResponder() override {
    std::lock_guard lock(st_->mu);
    if (!st_->answered) {
      st_->done = true;
      st_->failed = true;
      if (st_->env) log_error(*st_->env, "delayed response dropped without an answer");
      st_->cv.notify_all();
    }
  }
  void respond(Response r) override {
    std::lock_guard lock(st_->mu);
    if (std::exchange(st_->answered, true)) throw std::logic_error("the responder was already used");
    if (st_->out && st_->ok) {  // not ok: the client has gone, nothing more is sent
      try {
        st_->ok = send_complete(r, *st_->env, *st_->out) && st_->out->flush();
      } catch (const std::exception& e) {
        log_error(*st_->env, std::string("response failed: ") + e.what());
        st_->failed = true;
      }
    }
    st_->done = true;
    st_->cv.notify_all();
  }
  WriterPtr start(int status, Headers headers) override {
    std::lock_guard lock(st_->mu);
    if (std::exchange(st_->answered, true)) throw std::logic_error("the responder was already used");
    auto writer = std::make_shared<StreamWriter>(st_);
    if (st_->out && st_->ok) {
      std::string head;
      try {
        std::optional<std::uint64_t> declared = status_has_no_body(status) ? std::nullopt : declared_length(headers);
        head = format_head(status, headers, declared);
        st_->framed.emplace(declared);
      } catch (...) {
        st_->failed = true;
        st_->done = true;
        st_->cv.notify_all();
        throw;
      }
      st_->head_only = no_body(*st_->env, status);
      st_->ok = st_->out->write(head) && st_->out->flush();
    }
    return writer;
  }

private:
  std::shared_ptr<State> st_;
};

bool send_delayed(Delayed& d, Env& env, Output& out, const SendOptions& options) {
  auto st = std::make_shared<State>();
  st->out = &out;
  st->env = &env;
  try {
    d(Responder(std::make_shared<DelayedResponder>(st)));
  } catch (const std::exception& e) {
    log_error(env, std::string("delayed response raised: ") + e.what());
    std::lock_guard lock(st->mu);
    if (!st->answered) st->failed = true, st->done = true;
  } catch (...) {
    log_error(env, "delayed response raised a non-standard exception");
    std::lock_guard lock(st->mu);
    if (!st->answered) st->failed = true, st->done = true;
  }
  // The env and csgi.input stay the app's until it has answered (APP-4), also once the client has gone:
  // from then on nothing more is sent and the writer's write() returns false, so the app can stop.
  std::unique_lock lock(st->mu);
  while (!st->done) {
    if (st->cv.wait_for(lock, options.gone_poll) == std::cv_status::timeout && st->ok && out.client_gone())
      st->ok = false;
  }
  bool ok = st->ok;
  if (st->failed && !st->answered) ok = send_error(env, out, 500);
  else if (st->failed) ok = false;
  st->out = nullptr;  // a writer kept by the app returns false from now on
  return ok;
}

}  // namespace

std::string format_head(int status, const Headers& headers, std::optional<std::uint64_t> length) {
  if (status < 100 || status > 999) throw std::invalid_argument("status " + std::to_string(status) + " is out of range");
  std::string head;
  head.reserve(64 + headers.size() * 48);
  head += "Status: ";
  head += std::to_string(status);
  head += ' ';
  head += reason_phrase(status);
  head += "\r\n";
  for (const Header& h : headers) {
    if (h.name.empty()) throw std::invalid_argument("empty response header name");
    if (!is_token(h.name)) throw std::invalid_argument("invalid response header name: " + h.name);
    for (unsigned char c : h.value)
      if (c == '\r' || c == '\n' || c == '\0')
        throw std::invalid_argument("response header " + h.name + " holds CR, LF or NUL");
    if (iequals(h.name, "Status")) throw std::invalid_argument("apps must not send a Status header");
    if (iequals(h.name, "Content-Length")) continue;  // framing is the adapter's: `length` below
    head += h.name;
    head += ": ";
    head += h.value;
    head += "\r\n";
  }
  if (length) {
    head += "Content-Length: ";
    head += std::to_string(*length);
    head += "\r\n";
  }
  head += "\r\n";
  return head;
}

Response call_app(const App& app, Env& env) noexcept {
  try {
    try {
      return app(env);
    } catch (...) {
      return app_failure_response(env, std::current_exception());
    }
  } catch (...) {  // building the error response itself failed (out of memory)
    Response r;
    r.status = 500;
    return r;
  }
}

bool send_response(Response res, Env& env, Output& out, const SendOptions& options) noexcept {
  try {
    if (auto* d = std::get_if<Delayed>(&res.body)) {
      Delayed fn = std::move(*d);
      if (!fn) return send_error(env, out, 500);
      return send_delayed(fn, env, out, options) && out.flush();
    }
    return send_complete(res, env, out);  // the adapter flushes at the end (FastCGI: in FCGX_Finish_r)
  } catch (const std::exception& e) {
    log_error(env, std::string("response body failed: ") + e.what());
    return false;
  } catch (...) {
    log_error(env, "response body failed");
    return false;
  }
}

bool handle_request(const App& app, Env& env, const char* const* vars, const EnvOptions& env_options, Input& input,
                    ErrorStream& errors, Output& out, const SendOptions& options) noexcept {
  try {
    env.set_object<ErrorStream>(keys::errors, &errors);
    env.set_object<Input>(keys::input, &input);
    env.set_bool(keys::x::input_buffered, input.seekable());
    try {
      build_env(env, vars, env_options);
    } catch (const HttpError& e) {
      log_error(env, std::string("bad request from the front server: ") + e.what());
      return send_response(Response::error(e.status(), e.what()), env, out, options);
    }
  } catch (...) {
    return send_error(env, out, 500);
  }
  CleanupHandlers cleanup;
  env.set_bool(keys::x::cleanup, true);
  env.set_object<CleanupHandlers>(keys::x::cleanup_handlers, &cleanup);
  bool ok = send_response(call_app(app, env), env, out, options);
  if (cleanup.size() > 0) {
    if (ok) ok = out.flush();  // the response goes out before the handlers run (EXT-4)
    cleanup.run(env);
  }
  return ok;
}

}  // namespace csgi::cgi
