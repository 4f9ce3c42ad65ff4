// One HTTP/1.x connection of the standalone server: reading requests (parsed by request_parser.hpp), the
// env, the app call, and writing every kind of response.
//
// The connection's bytes live in one buffer. A request's env values point into it (no copies), so the
// bytes of an active request's header never move; body bytes are read behind the header. Responses are
// serialised into one output buffer and written with one sendmsg(2) for as many pipelined responses as
// are ready. The socket is non-blocking; Asio is used as the reactor (async_wait) and for timers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>

#include "csgi/adapters/standalone/detail.hpp"
#include "csgi/adapters/standalone/request_parser.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/range.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/server_stats.hpp"

namespace csgi::standalone::detail {

namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t initial_buffer = 4096;
constexpr std::size_t flush_threshold = 64 * 1024;     // flush pipelined output past this size
constexpr std::size_t inline_body_max = 16 * 1024;     // copy string bodies up to this size
constexpr std::size_t writer_high_water = 1 << 20;     // a streaming Writer off the io thread waits above this
constexpr std::size_t writer_low_water = 256 * 1024;
constexpr std::size_t drain_limit = 64 * 1024;         // unread request body drained to keep the connection

bool has_ctl(std::string_view s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  return false;
}

bool token_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!token_char(c) || c == 0) return false;
  return true;
}

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_hex(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append(buf, r.ptr);
}

}  // namespace

class Conn;

struct WriterState;

class Conn final : public std::enable_shared_from_this<Conn>,
                   public Input,
                   public Hijack,
                   public Informational {
public:
  Conn(IoThread& t, Socket s, const ListenSocket& l);
  ~Conn();
  void start();
  void on_timeout();
  void on_shutdown(bool hurry);
  std::string abandon() noexcept;
  void force_close() { close_now(); }
  ConnNode& node() noexcept {
    node_.conn = this;
    return node_;
  }
  bool expired(Clock::time_point now) const noexcept { return deadline_ != Clock::time_point{} && now >= deadline_; }

  // csgi.input
  std::size_t read(char* buf, std::size_t n) override;
  // csgix.io
  int take(std::string& pending) override;
  // csgix.informational
  bool send(int status, const Headers& headers) override;

  // Delayed responses (called on the io thread, posted by the responder / writer).
  void on_delayed(Response r);
  void on_responder_dropped() {
    if (phase_ != Phase::delayed) return;
    log_error("500: the delayed response's Responder was dropped without an answer (ADP-11)");
    on_delayed(Response::error(500));
  }
  void on_writer_start(std::shared_ptr<WriterState> st, int status, Headers headers);
  void on_writer_flush(const std::shared_ptr<WriterState>& st);

  bool on_io_thread() const { return t_.ioc.get_executor().running_in_this_thread(); }

private:
  enum class Phase { reading, app, delayed, writer, stream, file, lingering, closed };

  // Reading and parsing.
  void wait_read();
  void on_read(error_code ec, std::size_t n);
  void process();
  bool make_room();
  void begin_request();
  void request_ready();
  void reject(int status, std::string_view why);

  // Responding.
  void handle(Response res);
  void write_head(int status, const Headers& headers, std::optional<std::uint64_t> length, bool chunked);
  void start_body(Response& res);
  void send_file(FileBody& f, int status, Headers& headers);
  void pump_file();
  void pump_stream();
  void finish_response();
  void log_access();
  void log_error(std::string_view what);

  // Writing.
  bool flush();  // true when everything is written; false when waiting for writability (or dead)
  void wait_write();
  void on_writable(error_code ec);
  void after_flush();
  void close_now();
  void linger();
  void set_deadline(std::chrono::milliseconds d) { deadline_ = t_.now + d; }
  void clear_deadline() { deadline_ = {}; }
  bool blocking_send(std::string_view data);

  ConnNode node_;
  IoThread& t_;
  Shared& sh_;
  Socket socket_;
  int fd_;
  const ListenSocket& listener_;
  char remote_addr_[48] = {0};
  char remote_port_[8] = {0};

  // Input buffer: [begin_, end_) unparsed; a request's header occupies [req_start_, body_base_).
  std::unique_ptr<char[]> buf_;
  std::size_t cap_ = 0, begin_ = 0, end_ = 0, body_base_ = 0;
  bool peer_eof_ = false;
  bool dead_ = false;  // write failed: the client is gone

  std::optional<RequestParser> parser_;
  std::unique_ptr<Env> env_;
  CleanupHandlers cleanup_;
  Phase phase_ = Phase::reading;
  bool waiting_ = false;         // a read is pending
  bool write_waiting_ = false;   // a wait for writability is pending
  bool active_ = false;          // a request's header is parsed and its response not finished
  bool draining_ = false;        // discarding the rest of a finished request's body
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_ = false;
  bool continue_pending_ = false;
  bool hijacked_ = false;
  bool response_started_ = false;
  bool counted_ = true;
  std::uint64_t content_length_ = 0;
  bool has_body_ = false;
  std::size_t scan_pos_ = 0;  // head_complete() scanned up to here (relative to begin_)
  // Copied from the parser once the head is parsed (the parser goes before the response may end).
  std::string_view expect_;
  std::string_view range_, if_range_;
  Clock::time_point deadline_{};

  // Response state.
  int status_ = 0;
  std::uint64_t sent_body_ = 0;
  bool chunked_out_ = false;
  std::string out_;
  std::size_t out_pos_ = 0;
  struct Ext {
    std::size_t at;  // position in out_ before which this segment goes
    std::string_view data;
    std::shared_ptr<const void> keep;
  };
  std::vector<Ext> ext_;
  std::size_t ext_done_ = 0;     // segments already fully written
  std::size_t ext_off_ = 0;      // bytes written of segment ext_done_
  // File body in progress.
  std::shared_ptr<FileHandle> file_;
  std::uint64_t file_off_ = 0, file_left_ = 0;
  // Pull stream in progress.
  StreamPtr stream_;
  // Streaming writer in progress.
  std::shared_ptr<WriterState> writer_;
  // Keeps the connection alive while only the app's responder or writer refers to it (every entry
  // point into the connection holds its own reference, so dropping this one never frees it mid-call).
  std::shared_ptr<Conn> self_hold_;
};

// ---------------------------------------------------------------------------------------------------
// Delayed responses: the responder and writer may be used from any thread; they post to the io thread.

struct WriterState {
  std::mutex mu;
  std::condition_variable cv;
  std::string pending;
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
  std::weak_ptr<Conn> conn;
  asio::io_context* ioc = nullptr;
  std::chrono::milliseconds send_timeout{60000};

  void post_flush(std::shared_ptr<WriterState> self) {
    if (flush_posted) return;
    flush_posted = true;
    asio::post(*ioc, [self = std::move(self)] {
      if (auto c = self->conn.lock()) {
        c->on_writer_flush(self);
      } else {
        std::lock_guard lock(self->mu);
        self->dead = true;
        self->cv.notify_all();
      }
    });
  }
};

class StreamWriter final : public Writer {
public:
  explicit StreamWriter(std::shared_ptr<WriterState> st) : st_(std::move(st)) {}
  ~StreamWriter() override {
    std::lock_guard lock(st_->mu);
    if (st_->closed || st_->dead) return;
    st_->closed = true;
    st_->aborted = true;
    st_->post_flush(st_);
  }
  bool write(std::string_view chunk) override {
    std::unique_lock lock(st_->mu);
    if (st_->dead || st_->closed) return false;
    if (chunk.empty() || st_->head_only) return true;
    if (st_->chunked && st_->framed) {
      append_hex(st_->pending, chunk.size());
      st_->pending.append("\r\n");
      st_->pending.append(chunk);
      st_->pending.append("\r\n");
    } else {
      st_->pending.append(chunk);
    }
    st_->post_flush(st_);
    auto c = st_->conn.lock();
    bool io_thread = c && c->on_io_thread();
    c.reset();
    if (!io_thread && st_->pending.size() + st_->unsent > writer_high_water) {
      // Back-pressure for producers on other threads; a client that stops reading ends the wait.
      bool ok = st_->cv.wait_for(lock, st_->send_timeout, [&] {
        return st_->dead || st_->pending.size() + st_->unsent < writer_low_water;
      });
      if (!ok) st_->dead = true;
    }
    return !st_->dead;
  }
  void close() override {
    std::lock_guard lock(st_->mu);
    if (st_->closed) return;
    st_->closed = true;
    if (st_->dead) return;
    if (st_->framed && st_->chunked && !st_->head_only) st_->pending.append("0\r\n\r\n");
    st_->post_flush(st_);
  }

private:
  std::shared_ptr<WriterState> st_;
};

class ConnResponder final : public ResponderImpl {
public:
  ConnResponder(std::weak_ptr<Conn> c, asio::io_context& ioc, std::chrono::milliseconds send_timeout)
      : conn_(std::move(c)), ioc_(ioc), send_timeout_(send_timeout) {}
  ~ConnResponder() override {
    if (!answered_.exchange(true)) {
      // The app dropped the responder without answering: answer 500 rather than leave the client hanging.
      asio::post(ioc_, [c = conn_] {
        if (auto conn = c.lock()) conn->on_responder_dropped();
      });
    }
  }
  void respond(Response r) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    if (r.is_delayed()) throw std::logic_error("csgi: Responder::respond given a delayed response");
    auto shared = std::make_shared<Response>(std::move(r));
    asio::post(ioc_, [c = conn_, shared] {
      if (auto conn = c.lock()) conn->on_delayed(std::move(*shared));
    });
  }
  WriterPtr start(int status, Headers headers) override {
    if (answered_.exchange(true)) throw std::logic_error("csgi: Responder used twice");
    auto st = std::make_shared<WriterState>();
    st->conn = conn_;
    st->ioc = &ioc_;
    st->send_timeout = send_timeout_;
    auto h = std::make_shared<Headers>(std::move(headers));
    asio::post(ioc_, [c = conn_, st, status, h] {
      if (auto conn = c.lock()) {
        conn->on_writer_start(st, status, std::move(*h));
      } else {
        std::lock_guard lock(st->mu);
        st->dead = true;
      }
    });
    return std::make_shared<StreamWriter>(st);
  }

private:
  std::weak_ptr<Conn> conn_;
  asio::io_context& ioc_;
  std::chrono::milliseconds send_timeout_;
  std::atomic<bool> answered_{false};
};

// ---------------------------------------------------------------------------------------------------

Conn::Conn(IoThread& t, Socket s, const ListenSocket& l)
    : t_(t), sh_(t.shared), socket_(std::move(s)), fd_(socket_.native_handle()), listener_(l) {
  sh_.connections.fetch_add(1, std::memory_order_relaxed);
  t_.open.fetch_add(1, std::memory_order_relaxed);
  buf_.reset(new char[initial_buffer]);
  cap_ = initial_buffer;
  error_code ec;
  socket_.native_non_blocking(true, ec);
  if (listener_.tcp) {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      if (ss.ss_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &in->sin_addr, remote_addr_, sizeof remote_addr_);
        std::to_chars(remote_port_, remote_port_ + sizeof remote_port_ - 1, ntohs(in->sin_port));
      } else if (ss.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, remote_addr_, sizeof remote_addr_);
        std::to_chars(remote_port_, remote_port_ + sizeof remote_port_ - 1, ntohs(in6->sin6_port));
      }
    }
  }
}

Conn::~Conn() {
  if (stream_) {
    try {
      stream_->close();
    } catch (...) {
    }
  }
  if (writer_) {
    std::lock_guard lock(writer_->mu);
    writer_->dead = true;
    writer_->cv.notify_all();
  }
  if (env_) {
    if (cleanup_.size() > 0) cleanup_.run(*env_);
    env_->clear();
    t_.release_env(std::move(env_));
  }
  sh_.connections.fetch_sub(1, std::memory_order_relaxed);
  t_.open.fetch_sub(1, std::memory_order_relaxed);
}

void Conn::start() {
  t_.add(*this);
  ServerStats::global().connection_opened();
  set_deadline(sh_.opt.header_timeout);
  wait_read();
}

// Reads with async_read_some: Asio tries the recv at once, and after a read that drained the socket it
// waits for the next epoll edge without another syscall (no epoll_ctl per request, unlike async_wait).
void Conn::wait_read() {
  if (waiting_ || phase_ == Phase::closed || peer_eof_) return;
  if (!make_room()) {
    if (phase_ == Phase::lingering) begin_ = end_ = 0;
    else {
      reject(431, "request header too large");
      return;
    }
  }
  waiting_ = true;
  socket_.async_read_some(asio::buffer(buf_.get() + end_, cap_ - end_),
                          [self = shared_from_this()](error_code ec, std::size_t n) {
                            self->waiting_ = false;
                            self->on_read(ec, n);
                          });
}

void Conn::on_read(error_code ec, std::size_t n) {
  if (phase_ == Phase::closed || ec == asio::error::operation_aborted) return;
  if (phase_ == Phase::lingering) {
    if (ec) {
      close_now();
      return;
    }
    begin_ = end_ = 0;  // discard
    wait_read();
    return;
  }
  if (ec == asio::error::eof) {
    peer_eof_ = true;
  } else if (ec) {
    dead_ = true;
    close_now();
    return;
  } else {
    end_ += n;
  }
  if (phase_ == Phase::reading) process();
}

bool Conn::make_room() {
  if (end_ < cap_) return true;
  if (!active_ && begin_ > 0) {
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    return end_ < cap_;
  }
  if (!active_ || draining_) {
    std::size_t limit = sh_.opt.max_header_bytes + 1024;
    if (cap_ >= limit) return false;
    std::size_t ncap = std::min(cap_ * 2, limit);
    std::unique_ptr<char[]> nb(new char[ncap]);
    std::memcpy(nb.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    buf_ = std::move(nb);
    cap_ = ncap;
    return true;
  }
  // An active request: only the body region behind its header may be compacted.
  if (begin_ > body_base_) {
    std::memmove(buf_.get() + body_base_, buf_.get() + begin_, end_ - begin_);
    end_ -= begin_ - body_base_;
    begin_ = body_base_;
  }
  return end_ < cap_;
}

void Conn::begin_request() {
  if (!env_) env_ = t_.acquire_env();
  csgi::Connection conn;
  conn.server_name = listener_.server_name;
  conn.server_port = listener_.server_port;
  conn.remote_addr = remote_addr_;
  conn.remote_port = remote_port_;
  conn.script_name = sh_.opt.script_name;
  parser_.emplace(*env_, sh_.opt, conn);
  scan_pos_ = 0;
  expect_ = {};
  range_ = {};
  if_range_ = {};
  continue_pending_ = false;
  response_started_ = false;
  status_ = 0;
  sent_body_ = 0;
}

// Parses and serves every complete request in the buffer, then waits for more bytes.
void Conn::process() {
  while (phase_ == Phase::reading) {
    if (draining_) {
      if (!parser_->is_done()) {
        error_code ec;
        std::size_t used = parser_->put(asio::buffer(buf_.get() + begin_, end_ - begin_), ec);
        begin_ += used;
        if (ec && ec != http::error::need_more) {
          keep_alive_ = false;
          draining_ = false;
          linger();
          return;
        }
        if (!parser_->is_done()) {
          if (used > 0) continue;
          break;
        }
      }
      draining_ = false;
      parser_.reset();
    }
    if (!active_) {
      if (!parser_) {
        // RFC 9112 §2.2: ignore empty lines before a request-line.
        while (begin_ < end_ && (buf_[begin_] == '\r' || buf_[begin_] == '\n')) ++begin_;
        if (begin_ == end_) {
          begin_ = end_ = 0;
          break;
        }
        begin_request();
        set_deadline(sh_.opt.header_timeout);
      }
      if (!head_complete({buf_.get() + begin_, end_ - begin_}, scan_pos_)) {
        // Header incomplete: enforce the request-line and header-size limits on what we have.
        std::string_view have(buf_.get() + begin_, end_ - begin_);
        std::size_t eol = have.find('\n');
        if (eol == std::string_view::npos ? have.size() > sh_.opt.max_request_line : eol > sh_.opt.max_request_line + 1) {
          reject(414, "request line too long");
          return;
        }
        if (have.size() > sh_.opt.max_header_bytes) {
          reject(431, "request header too large");
          return;
        }
        break;
      }
      // The whole head is buffered: Beast parses it in one call, so env views into it stay valid.
      error_code ec;
      std::size_t used = parser_->put(asio::buffer(buf_.get() + begin_, end_ - begin_), ec);
      if (ec == http::error::need_more) ec = http::error::bad_line_ending;
      http10_ = parser_->http10;
      head_ = parser_->head;
      if (ec) {
        reject(parser_->status_for(ec), parser_->reject_why[0] ? parser_->reject_why : "malformed request");
        return;
      }
      if (has_obs_fold({buf_.get() + begin_, used})) {
        reject(400, "obs-fold in header");
        return;
      }
      begin_ += used;
      body_base_ = begin_;
      active_ = true;
      if (parser_->reject_status) {
        reject(parser_->reject_status, parser_->reject_why);
        return;
      }
      expect_ = parser_->expect;
      range_ = parser_->range;
      if_range_ = parser_->if_range;
      has_body_ = !parser_->is_done();
      if (has_body_ && !parser_->chunked()) content_length_ = parser_->content_length().value_or(0);
      // Expect: 100-continue (RFC 9110 §10.1.1): the 100 goes out when the app first reads the body.
      if (!expect_.empty() && iequals(expect_, "100-continue")) continue_pending_ = !http10_ && has_body_;
    }
    // Header parsed. A body that fits behind it is read before the app runs (unless 100-continue).
    if (has_body_ && !continue_pending_ && !parser_->chunked() && content_length_ <= cap_ - body_base_ &&
        end_ - begin_ < content_length_) {
      if (peer_eof_) {
        reject(400, "connection closed before the end of the body");
        return;
      }
      set_deadline(sh_.opt.body_timeout);
      break;
    }
    request_ready();
    if (phase_ != Phase::reading) return;  // a delayed, streaming, file or closing response took over
    if (out_.size() - out_pos_ > flush_threshold || !ext_.empty()) {
      if (!flush()) {
        wait_write();
        return;
      }
    }
  }
  if (phase_ != Phase::reading) return;
  if (out_pos_ < out_.size() || !ext_.empty()) {
    if (!flush()) {
      wait_write();
      return;
    }
  }
  if (peer_eof_) {
    // Client half-closed and every complete request is answered.
    close_now();
    return;
  }
  // Idle: also while stopping, when the connection is kept until its idle timeout or the graceful timeout
  // (see on_shutdown); a request that still comes is answered with Connection: close.
  if (!active_ && begin_ == end_) set_deadline(sh_.opt.idle_timeout);
  wait_read();
}

// The request's header is parsed (and a small body buffered): build the rest of the env and call the app.
void Conn::request_ready() {
  Env& env = *env_;
  keep_alive_ = keep_alive_ && parser_->keep_alive() && !t_.stopping;
  if (!expect_.empty()) {
    if (iequals(expect_, "100-continue")) {
    } else {
      keep_alive_ = false;
      handle(Response::error(417, "unsupported expectation"));
      return;
    }
  }
  env.set_object<Input>(keys::input, static_cast<Input*>(this));
  env.set_object<ErrorStream>(keys::errors, &sh_.errors);
  env.set_bool(keys::multithread, sh_.multithread);
  env.set_bool(keys::multiprocess, sh_.multiprocess);
  env.set_bool(keys::run_once, false);
  env.set_bool(keys::nonblocking, false);
  env.set_bool(keys::streaming, true);
  env.set_object<Hijack>(keys::x::io, static_cast<Hijack*>(this));
  env.set_bool(keys::x::cleanup, true);
  env.set_object<CleanupHandlers>(keys::x::cleanup_handlers, &cleanup_);
  env.set_object<Informational>(keys::x::informational, static_cast<Informational*>(this));
  env.set_int(keys::x::request_body_limit, static_cast<std::int64_t>(sh_.opt.max_body_bytes));
  clear_deadline();

  Response res;
  phase_ = Phase::app;
  if (!sh_.opt.script_name.empty() && env.get(keys::SCRIPT_NAME).empty()) {
    res = Response::error(404);
  } else {
    try {
      AppScope scope(t_.fault_slot, this);
      res = sh_.app(env);
    } catch (const HttpError& e) {
      res = Response::error(e.status(), e.what());
      if (e.status() == 408 || e.status() == 413 || e.status() == 400) keep_alive_ = false;
    } catch (const std::exception& e) {
      sh_.errors.write(std::string("csgi: 500 for \"") + std::string(env.get(keys::REQUEST_METHOD)) + " " +
                       std::string(env.get(keys::REQUEST_URI)) + " " + std::string(env.get(keys::SERVER_PROTOCOL)) +
                       "\": " + e.what());
      res = Response::error(500);
    } catch (...) {
      sh_.errors.write(std::string("csgi: 500 for \"") + std::string(env.get(keys::REQUEST_METHOD)) + " " +
                       std::string(env.get(keys::REQUEST_URI)) + "\": non-standard exception");
      res = Response::error(500);
    }
  }
  if (phase_ == Phase::closed) return;
  phase_ = Phase::reading;
  if (hijacked_) {
    // The app owns the connection now; drop our descriptor without touching the connection.
    if (res.is_delayed()) {
      // Nothing will be sent; the callable is not called.
    }
    error_code ec;
    socket_.close(ec);
    phase_ = Phase::closed;
    ServerStats::global().connection_closed();  // the app owns it now: no longer one of ours
    t_.release_env(std::move(env_));
    return;
  }
  handle(std::move(res));
}

void Conn::reject(int status, std::string_view why) {
  // Framing is lost: answer, then close (the bytes after this request are never served: no smuggling).
  if (!env_) env_ = t_.acquire_env();
  keep_alive_ = false;
  active_ = true;
  body_base_ = begin_;
  begin_ = end_;  // nothing after a bad request is parsed
  parser_.reset();
  has_body_ = false;
  Response r = Response::error(status, why);
  phase_ = Phase::reading;
  handle(std::move(r));
}

// Turns the app's response into bytes (or starts its body), in the order of requests.
void Conn::handle(Response res) {
  if (hijacked_ || phase_ == Phase::closed) return;
  if (continue_pending_) keep_alive_ = false;  // the client may still be waiting to send its body
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    phase_ = Phase::delayed;
    self_hold_ = shared_from_this();
    auto responder = std::make_shared<ConnResponder>(weak_from_this(), t_.ioc, sh_.opt.send_timeout);
    Delayed fn = std::move(*d);
    try {
      AppScope scope(t_.fault_slot, this);
      fn(Responder(std::move(responder)));
    } catch (const std::exception& e) {
      log_error(std::string("the delayed response's callable threw: ") + e.what());
      // The responder's destructor answers 500 when it was not answered.
    } catch (...) {
      log_error("the delayed response's callable threw a non-standard exception");
    }
    return;
  }
  start_body(res);
}

void Conn::write_head(int status, const Headers& headers, std::optional<std::uint64_t> length, bool chunked) {
  status_ = status;
  response_started_ = true;
  out_.append(sh_.status_line(status));
  bool has_date = false;
  bool upgrade = status == 101;
  for (const Header& h : headers) {
    if (!upgrade && (iequals(h.name, "content-length") || iequals(h.name, "transfer-encoding") ||
                     iequals(h.name, "connection") || iequals(h.name, "keep-alive")))
      continue;
    if (!valid_name(h.name) || has_ctl(h.value)) {
      sh_.errors.write("csgi: response header \"" + h.name + "\" has a bad name or control characters; dropped");
      continue;
    }
    if (!has_date && iequals(h.name, "date")) has_date = true;
    out_.append(h.name);
    out_.append(": ");
    out_.append(h.value);
    out_.append("\r\n");
  }
  if (!has_date) {
    out_.append("Date: ");
    out_.append(http_date_now());
    out_.append("\r\n");
  }
  if (length) {
    out_.append("Content-Length: ");
    append_uint(out_, *length);
    out_.append("\r\n");
  } else if (chunked) {
    out_.append("Transfer-Encoding: chunked\r\n");
  }
  if (!keep_alive_ || sh_.stopping.load(std::memory_order_relaxed)) keep_alive_ = false;
  if (upgrade) {
  } else if (!keep_alive_) {
    out_.append("Connection: close\r\n");
  } else if (http10_) {
    out_.append("Connection: keep-alive\r\n");
  }
  out_.append("\r\n");
}

// The Content-Length the app declared, when it is one well-formed number.
static std::optional<std::uint64_t> declared_length(const Headers& headers) {
  auto cl = headers.get("content-length");
  if (!cl) return std::nullopt;
  std::uint64_t v = 0;
  auto r = std::from_chars(cl->data(), cl->data() + cl->size(), v);
  if (r.ec != std::errc() || r.ptr != cl->data() + cl->size()) return std::nullopt;
  return v;
}

void Conn::start_body(Response& res) {
  int status = res.status < 100 || res.status > 999 ? 500 : res.status;
  bool no_body = status_has_no_body(status);
  if (auto* s = std::get_if<std::string>(&res.body)) {
    std::optional<std::uint64_t> len = s->size();
    // HEAD answered with an empty body: the Content-Length the app gave is the one a GET would have (ADP-2).
    if (head_ && s->empty()) {
      if (auto d = declared_length(res.headers)) len = d;
    }
    write_head(status, res.headers, no_body ? std::nullopt : len, false);
    if (!head_ && !no_body && !s->empty()) {
      sent_body_ = s->size();
      if (s->size() <= inline_body_max) {
        out_.append(*s);
      } else {
        auto keep = std::make_shared<std::string>(std::move(*s));
        ext_.push_back({out_.size(), *keep, keep});
      }
    }
    finish_response();
    return;
  }
  if (auto* b = std::get_if<SharedBytes>(&res.body)) {
    std::size_t n = *b ? (*b)->size() : 0;
    write_head(status, res.headers, no_body ? std::nullopt : std::optional<std::uint64_t>(n), false);
    if (!head_ && !no_body && n > 0) {
      sent_body_ = n;
      if (n <= 2048)
        out_.append(**b);
      else
        ext_.push_back({out_.size(), std::string_view(**b), *b});
    }
    finish_response();
    return;
  }
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    send_file(*f, status, res.headers);
    return;
  }
  if (auto* sp = std::get_if<StreamPtr>(&res.body)) {
    stream_ = std::move(*sp);
    std::optional<std::uint64_t> declared;
    if (auto cl = res.headers.get("content-length")) {
      std::uint64_t v = 0;
      auto r = std::from_chars(cl->data(), cl->data() + cl->size(), v);
      if (r.ec == std::errc() && r.ptr == cl->data() + cl->size()) declared = v;
    }
    if (no_body || head_ || !stream_) {
      write_head(status, res.headers, no_body ? std::nullopt : declared, false);
      if (stream_) {
        try {
          stream_->close();
        } catch (...) {
        }
        stream_.reset();
      }
      finish_response();
      return;
    }
    // Hold the head back until the first non-empty chunk (PEP 3333; ADP-5): an exception before it is a 500.
    std::string first;
    bool more = false, threw = false;
    try {
      do more = stream_->next(first);
      while (more && first.empty());
    } catch (const std::exception& e) {
      threw = true;
      log_error(std::string("500: the response stream's first next() threw: ") + e.what());
    } catch (...) {
      threw = true;
      log_error("500: the response stream's first next() threw a non-standard exception");
    }
    if (!more || threw) {
      // Ended (or failed) before any byte: close it, then answer as a complete response.
      try {
        stream_->close();
      } catch (...) {
      }
      stream_.reset();
      Response done = threw ? Response::error(500) : Response{status, std::move(res.headers), std::string()};
      start_body(done);
      return;
    }
    chunked_out_ = !declared && !http10_;
    if (!declared && http10_) keep_alive_ = false;  // body ends at close
    write_head(status, res.headers, declared, chunked_out_);
    sent_body_ += first.size();
    if (chunked_out_) {
      append_hex(out_, first.size());
      out_.append("\r\n");
      out_.append(first);
      out_.append("\r\n");
    } else {
      out_.append(first);
    }
    phase_ = Phase::stream;
    pump_stream();
    return;
  }
  // A Delayed body handed to respond(): refuse it.
  write_head(500, Headers{{"Content-Type", "text/plain"}}, 0, false);
  finish_response();
}

void Conn::send_file(FileBody& f, int status, Headers& headers) {
  std::shared_ptr<FileHandle> fh = f.file;
  if (!fh) {
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      write_head(e == ENOENT ? 404 : e == EACCES ? 403 : 500, Headers{{"Content-Type", "text/plain"}}, 0, false);
      finish_response();
      return;
    }
    fh = std::make_shared<FileHandle>(fd);
  }
  struct stat st {};
  if (::fstat(fh->fd(), &st) != 0) {
    write_head(500, Headers{{"Content-Type", "text/plain"}}, 0, false);
    finish_response();
    return;
  }
  std::uint64_t fsize = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t off = std::min(f.offset, fsize);
  std::uint64_t len = f.length == FileBody::npos ? fsize - off : std::min(f.length, fsize - off);
  if (status == 200 && !range_.empty() && (env_->get(keys::REQUEST_METHOD) == "GET" || head_)) {
    bool use_range = true;
    if (!if_range_.empty()) {
      // If-Range: only when it matches the validator of this response exactly (strong comparison).
      auto etag = headers.get("etag");
      auto lm = headers.get("last-modified");
      use_range = (etag && *etag == if_range_ && etag->substr(0, 2) != "W/") || (lm && *lm == if_range_);
    }
    if (use_range) {
      RangeResult rr = parse_range(range_, len);
      if (rr.kind == RangeResult::Kind::unsatisfiable) {
        Headers h;
        h.add("Content-Range", "bytes */" + std::to_string(len));
        h.add("Content-Type", "text/plain; charset=utf-8");
        std::string body = "416 Range Not Satisfiable\n";
        write_head(416, h, body.size(), false);
        if (!head_) out_.append(body);
        finish_response();
        return;
      }
      if (rr.kind == RangeResult::Kind::satisfiable && rr.ranges.size() == 1) {
        const ByteRange& r = rr.ranges.front();
        headers.set("Content-Range", "bytes " + std::to_string(r.first) + "-" + std::to_string(r.last) + "/" +
                                         std::to_string(len));
        status = 206;
        off += r.first;
        len = r.length();
      }
    }
  }
  bool no_body = status_has_no_body(status);
  if (status == 200 && !headers.has("accept-ranges")) headers.add("Accept-Ranges", "bytes");
  write_head(status, headers, no_body ? std::nullopt : std::optional<std::uint64_t>(len), false);
  if (head_ || no_body || len == 0) {
    finish_response();
    return;
  }
  file_ = std::move(fh);
  file_off_ = off;
  file_left_ = len;
  sent_body_ = len;
  phase_ = Phase::file;
  pump_file();
}

// Sends the head (if any) then the file with sendfile(2), as far as the socket takes it.
void Conn::pump_file() {
  if (!flush()) {
    if (!dead_) wait_write();
    return;
  }
  while (file_left_ > 0) {
    off_t off = static_cast<off_t>(file_off_);
    ssize_t n = ::sendfile(fd_, file_->fd(), &off, std::min<std::uint64_t>(file_left_, 1 << 30));
    if (n > 0) {
      file_off_ += static_cast<std::uint64_t>(n);
      file_left_ -= static_cast<std::uint64_t>(n);
      set_deadline(sh_.opt.send_timeout);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      wait_write();
      return;
    }
    // Error, or the file shrank under us: the response cannot be completed.
    keep_alive_ = false;
    dead_ = n < 0;
    file_.reset();
    close_now();
    return;
  }
  file_.reset();
  finish_response();
}

// Pulls chunks from the stream until the output is large, then writes; close() is always called.
void Conn::pump_stream() {
  std::string chunk;
  for (;;) {
    if (out_.size() - out_pos_ >= flush_threshold) {
      if (!flush()) {
        if (!dead_) wait_write();
        return;
      }
    }
    bool more = false;
    try {
      AppScope scope(t_.fault_slot, this);
      more = stream_->next(chunk);
    } catch (const std::exception& e) {
      log_error(std::string("the response stream's next() threw after the head was sent: ") + e.what());
      keep_alive_ = false;
      try {
        stream_->close();
      } catch (...) {
      }
      stream_.reset();
      // The status is out: end the connection so the client sees an incomplete body.
      if (flush()) close_now();
      else phase_ = Phase::lingering, wait_write();
      return;
    }
    if (!more) break;
    if (chunk.empty()) continue;
    sent_body_ += chunk.size();
    if (chunked_out_) {
      append_hex(out_, chunk.size());
      out_.append("\r\n");
      out_.append(chunk);
      out_.append("\r\n");
    } else {
      out_.append(chunk);
    }
  }
  if (chunked_out_) out_.append("0\r\n\r\n");
  try {
    stream_->close();
  } catch (const std::exception& e) {
    sh_.errors.write(std::string("csgi: response stream close failed: ") + e.what());
  }
  stream_.reset();
  chunked_out_ = false;
  finish_response();
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
  std::optional<std::uint64_t> declared;
  if (auto cl = headers.get("content-length")) {
    std::uint64_t v = 0;
    auto r = std::from_chars(cl->data(), cl->data() + cl->size(), v);
    if (r.ec == std::errc() && r.ptr == cl->data() + cl->size()) declared = v;
  }
  bool chunked = !no_body && !head_ && !declared && !http10_;
  if (!no_body && !head_ && !declared && http10_) keep_alive_ = false;
  write_head(status, headers, no_body ? std::nullopt : declared, chunked);
  {
    std::lock_guard lock(st->mu);
    st->chunked = chunked;
    st->head_only = head_ || no_body;
    st->framed = true;
    // Frame what the app wrote before this ran (see WriterState::framed).
    if (st->head_only) {
      st->pending.clear();
    } else if (chunked) {
      std::string early = std::move(st->pending);
      st->pending.clear();
      if (!early.empty()) {
        append_hex(st->pending, early.size());
        st->pending.append("\r\n").append(early).append("\r\n");
      }
      if (st->closed && !st->aborted) st->pending.append("0\r\n\r\n");
    }
  }
  writer_ = std::move(st);
  phase_ = Phase::writer;
  on_writer_flush(writer_);
}

void Conn::on_writer_flush(const std::shared_ptr<WriterState>& st) {
  if (st != writer_ || phase_ != Phase::writer) {
    std::lock_guard lock(st->mu);
    st->flush_posted = false;
    return;
  }
  bool fin, aborted;
  {
    std::lock_guard lock(st->mu);
    st->flush_posted = false;
    aborted = st->aborted;
    if (!st->pending.empty()) {
      sent_body_ += st->pending.size();
      out_.append(st->pending);
      st->pending.clear();
    }
    fin = st->closed;
  }
  bool done = flush();
  {
    std::lock_guard lock(st->mu);
    st->unsent = out_.size() - out_pos_;
    if (dead_) st->dead = true;
  }
  st->cv.notify_all();
  if (phase_ == Phase::closed) return;
  if (dead_) {
    // The client is gone: the writer's next write() says so, and nothing more will be sent.
    writer_.reset();
    keep_alive_ = false;
    close_now();
    return;
  }
  if (!done && !aborted) {
    wait_write();
    return;
  }
  if (aborted) {
    log_error("a streaming Writer was dropped without close(); the response ends as failed");
    keep_alive_ = false;
    writer_.reset();
    close_now();
    return;
  }
  if (fin) {
    writer_.reset();
    phase_ = Phase::reading;
    finish_response();
    if (phase_ == Phase::reading) process();
  }
}

// The response is complete in the output buffer (maybe not yet written).
void Conn::finish_response() {
  self_hold_.reset();
  ServerStats::global().record_response(status_, sent_body_);
  log_access();
  if (cleanup_.size() > 0) {
    // Cleanup handlers run after the response went out: write what we have first.
    flush();
    cleanup_.run(*env_);
  }
  // Back to the thread's pool: an idle keep-alive connection holds no env.
  t_.release_env(std::move(env_));
  active_ = false;
  phase_ = Phase::reading;
  if (keep_alive_ && parser_ && !parser_->is_done()) {
    // The app did not read the whole body: drain a small rest, otherwise close.
    if (!parser_->chunked() && content_length_ <= drain_limit) {
      parser_->discard = true;
      draining_ = true;
    } else {
      keep_alive_ = false;
    }
  }
  if (!draining_) parser_.reset();
  if (!keep_alive_) {
    begin_ = end_;
    if (flush()) {
      linger();
    } else if (!dead_) {
      phase_ = Phase::lingering;
      wait_write();
    }
  }
}

void Conn::log_error(std::string_view what) {
  std::string line = "csgi: ";
  line += what;
  if (env_) {
    line += " (\"";
    line += env_->get(keys::REQUEST_METHOD);
    line += ' ';
    line += env_->get(keys::REQUEST_URI);
    line += ' ';
    line += env_->get(keys::SERVER_PROTOCOL);
    line += "\")";
  }
  sh_.errors.write(line);
}

void Conn::log_access() {
  if (!sh_.access_log.enabled() || !env_) return;
  const Env& env = *env_;
  auto field = [](std::string_view v) { return v.empty() ? std::string("-") : std::string(v); };
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char when[40];
  std::strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S +0000", &tm);
  std::string line;
  line.reserve(256);
  line += remote_addr_[0] ? remote_addr_ : "-";
  line += " - - [";
  line += when;
  line += "] \"";
  line += env.get(keys::REQUEST_METHOD);
  line += ' ';
  line += env.get(keys::REQUEST_URI);
  line += ' ';
  line += env.get(keys::SERVER_PROTOCOL);
  line += "\" ";
  line += std::to_string(status_);
  line += ' ';
  line += std::to_string(sent_body_);
  line += " \"" + field(env.get(keys::HTTP_REFERER)) + "\" \"" + field(env.get(keys::HTTP_USER_AGENT)) + "\"\n";
  sh_.access_log.write(line);
}

// ---------------------------------------------------------------------------------------------------
// Output.

bool Conn::flush() {
  if (dead_) return false;
  for (;;) {
    iovec iov[32];
    int n = 0;
    std::size_t pos = out_pos_;
    for (std::size_t i = ext_done_; i < ext_.size() && n < 30; ++i) {
      if (ext_[i].at > pos) {
        iov[n++] = {out_.data() + pos, ext_[i].at - pos};
        pos = ext_[i].at;
      }
      std::size_t skip = i == ext_done_ ? ext_off_ : 0;
      iov[n++] = {const_cast<char*>(ext_[i].data.data()) + skip, ext_[i].data.size() - skip};
    }
    bool all_ext = n < 30 || ext_.empty();
    if (out_.size() > pos && n < 32) iov[n++] = {out_.data() + pos, out_.size() - pos};
    if (n == 0) {
      out_.clear();
      out_pos_ = 0;
      ext_.clear();
      ext_done_ = ext_off_ = 0;
      return true;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    int flags = MSG_NOSIGNAL;
    if (phase_ == Phase::file && file_left_ > 0) flags |= MSG_MORE;
    ssize_t w = ::sendmsg(fd_, &msg, flags);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      dead_ = true;
      return false;
    }
    set_deadline(sh_.opt.send_timeout);
    // Advance through out_ and the segments by w bytes.
    std::size_t left = static_cast<std::size_t>(w);
    while (left > 0) {
      std::size_t next_at = ext_done_ < ext_.size() ? ext_[ext_done_].at : out_.size();
      if (out_pos_ < next_at) {
        std::size_t k = std::min(left, next_at - out_pos_);
        out_pos_ += k;
        left -= k;
        continue;
      }
      if (ext_done_ < ext_.size()) {
        Ext& e = ext_[ext_done_];
        std::size_t k = std::min(left, e.data.size() - ext_off_);
        ext_off_ += k;
        left -= k;
        if (ext_off_ == e.data.size()) {
          e.keep.reset();
          ++ext_done_;
          ext_off_ = 0;
        }
        continue;
      }
      break;
    }
    (void)all_ext;
    if (out_pos_ == out_.size() && ext_done_ == ext_.size()) {
      out_.clear();
      out_pos_ = 0;
      ext_.clear();
      ext_done_ = ext_off_ = 0;
      if (!active_ && phase_ == Phase::reading) clear_deadline();
      return true;
    }
  }
}

void Conn::wait_write() {
  if (write_waiting_ || phase_ == Phase::closed) return;
  write_waiting_ = true;
  socket_.async_wait(Socket::wait_write, [self = shared_from_this()](error_code ec) {
    self->write_waiting_ = false;
    self->on_writable(ec);
  });
}

void Conn::on_writable(error_code ec) {
  if (ec == asio::error::operation_aborted && phase_ != Phase::closed) return;
  if (ec || phase_ == Phase::closed) {
    close_now();
    return;
  }
  switch (phase_) {
    case Phase::file: pump_file(); return;
    case Phase::stream: pump_stream(); return;
    case Phase::writer:
      if (writer_) on_writer_flush(writer_);
      return;
    case Phase::lingering:
      if (flush()) linger();
      else if (!dead_) wait_write();
      else close_now();
      return;
    default: break;
  }
  if (!flush()) {
    if (dead_) close_now();
    else wait_write();
    return;
  }
  after_flush();
}

void Conn::after_flush() {
  if (phase_ == Phase::reading) process();
}

void Conn::linger() {
  // Half-close and read until the client closes (or 2 s), so the client reads our last response
  // instead of a reset caused by bytes we never read.
  if (dead_) {
    close_now();
    return;
  }
  phase_ = Phase::lingering;
  ::shutdown(fd_, SHUT_WR);
  deadline_ = t_.now + std::chrono::seconds(2);
  if (peer_eof_) {
    close_now();
    return;
  }
  begin_ = end_ = 0;
  wait_read();
}

void Conn::close_now() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  ServerStats::global().connection_closed();
  self_hold_.reset();
  clear_deadline();
  error_code ec;
  socket_.close(ec);
  if (writer_) {
    std::lock_guard lock(writer_->mu);
    writer_->dead = true;
    writer_->cv.notify_all();
  }
  if (stream_) {
    try {
      stream_->close();
    } catch (...) {
    }
    stream_.reset();
  }
  file_.reset();
  if (env_) {
    if (cleanup_.size() > 0) cleanup_.run(*env_);
    env_->clear();
    t_.release_env(std::move(env_));
  }
  node_.unlink();
}

void Conn::on_timeout() {
  if (phase_ == Phase::closed) return;
  clear_deadline();
  if (phase_ == Phase::reading && (end_ > begin_ || active_) && !response_started_ && !draining_) {
    // Slow header or body: 408, then close.
    reject(408, "request timeout");
    return;
  }
  close_now();
}

std::string Conn::abandon() noexcept {
  std::string what;
  try {
    if (env_) what = std::string(env_->get(keys::REQUEST_METHOD)) + " " + std::string(env_->get(keys::REQUEST_URI));
  } catch (...) {
  }
  if (phase_ == Phase::closed || hijacked_) return what;
  // Nothing of this response nor of an earlier pipelined one is pending: a 500 is in order. One
  // non-blocking send; if it does not fit, the client gets the half-close alone.
  if (!response_started_ && !dead_ && out_pos_ == out_.size() && ext_.empty()) {
    static constexpr std::string_view r =
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
        "Connection: close\r\n\r\nInternal Server Error\n";
    (void)::send(fd_, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd_, SHUT_WR);
  // The descriptor stays open until the worker exits (closing it here could reuse the number while the
  // frozen thread still holds it); nothing reads or writes this connection again.
  phase_ = Phase::closed;
  clear_deadline();
  node_.unlink();
  return what;
}

std::string abandon_faulted(Conn& c) noexcept { return c.abandon(); }

void Conn::on_shutdown(bool hurry) {
  keep_alive_ = false;
  // A graceful stop does not close an idle keep-alive connection (nor one accepted whose request has not
  // arrived): its client may be sending a request right now, and closing would race it into a failed
  // request (RFC 9112 §9.6). The connection keeps its deadline (idle or header timeout), bounded by the
  // graceful timeout, and a request that arrives is answered with Connection: close. A second stop
  // request (hurry) closes idle connections at once.
  if (hurry && phase_ == Phase::reading && !active_ && begin_ == end_ && out_.size() == out_pos_ && ext_.empty())
    close_now();
}

// csgi.input: the request body, read from the buffer, then from the socket (poll bounded by body_timeout).
std::size_t Conn::read(char* buf, std::size_t n) {
  if (!parser_ || !active_ || draining_ || n == 0 || !env_) return 0;
  if (parser_->is_done()) return 0;
  if (continue_pending_) {
    continue_pending_ = false;
    if (!blocking_send("HTTP/1.1 100 Continue\r\n\r\n")) throw HttpError(400, "client gone");
  }
  for (;;) {
    parser_->sink = buf;
    parser_->sink_cap = n;
    parser_->sink_len = 0;
    error_code ec;
    std::size_t used = begin_ < end_ || parser_->chunked() ? parser_->put(asio::buffer(buf_.get() + begin_, end_ - begin_), ec) : 0;
    begin_ += used;
    if (ec && ec != http::error::need_more) {
      keep_alive_ = false;
      if (ec == http::error::body_limit)
        throw PayloadTooLarge("request body larger than " + std::to_string(sh_.opt.max_body_bytes) + " bytes");
      throw BadRequest("malformed request body: " + ec.message());
    }
    if (parser_->sink_len > 0) return parser_->sink_len;
    if (parser_->is_done()) return 0;
    if (used > 0) continue;
    // Need bytes from the socket.
    if (!make_room()) {
      keep_alive_ = false;
      throw BadRequest("chunk header too long");
    }
    for (;;) {
      ssize_t r = ::recv(fd_, buf_.get() + end_, cap_ - end_, 0);
      if (r > 0) {
        end_ += static_cast<std::size_t>(r);
        break;
      }
      if (r == 0) {
        keep_alive_ = false;
        peer_eof_ = true;
        throw BadRequest("client closed the connection before the end of the body");
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        keep_alive_ = false;
        dead_ = true;
        throw BadRequest("connection error while reading the body");
      }
      pollfd p{fd_, POLLIN, 0};
      int pr = ::poll(&p, 1, static_cast<int>(sh_.opt.body_timeout.count()));
      if (pr == 0) {
        keep_alive_ = false;
        throw HttpError(408, "timed out reading the request body");
      }
    }
  }
}

bool Conn::blocking_send(std::string_view data) {
  while (!data.empty()) {
    ssize_t w = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (w > 0) {
      data.remove_prefix(static_cast<std::size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(sh_.opt.send_timeout.count())) <= 0) return false;
      continue;
    }
    dead_ = true;
    return false;
  }
  return true;
}

int Conn::take(std::string& pending) {
  if (phase_ != Phase::app || hijacked_ || !on_io_thread()) return -1;
  int fd = ::dup(fd_);
  if (fd < 0) return -1;
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  // Whatever was written (100 Continue, 103) goes out first.
  if (out_pos_ < out_.size()) blocking_send(std::string_view(out_).substr(out_pos_));
  out_.clear();
  out_pos_ = 0;
  pending.append(buf_.get() + begin_, end_ - begin_);
  begin_ = end_;
  hijacked_ = true;
  return fd;
}

bool Conn::send(int status, const Headers& headers) {
  if (phase_ != Phase::app || http10_ || hijacked_ || dead_ || status < 100 || status > 199 || status == 101 ||
      !on_io_thread())
    return false;
  if (status == 100) continue_pending_ = false;
  out_.append(sh_.status_line(status));
  for (const Header& h : headers) {
    if (!valid_name(h.name) || has_ctl(h.value)) continue;
    out_.append(h.name);
    out_.append(": ");
    out_.append(h.value);
    out_.append("\r\n");
  }
  out_.append("\r\n");
  // Interim responses go out now, ahead of the final one (a partial write completes with it).
  flush();
  return !dead_;
}

// ---------------------------------------------------------------------------------------------------

void start_connection(IoThread& t, Socket socket, const ListenSocket& listener) {
  auto c = std::make_shared<Conn>(t, std::move(socket), listener);
  c->start();
}

void IoThread::add(Conn& c) {
  conns_.push_back(c.node());
  if (stopping && !sweeping_) {
    // A connection accepted late in a stop (an accept that had completed, one posted by another thread):
    // served like the others, so the timers that maybe_finish_stop cancelled run again.
    arm_sweep();
    arm_stop_timer();
  }
}

void IoThread::arm_sweep() {
  sweeping_ = true;
  sweeper_.expires_after(std::chrono::milliseconds(stopping ? 100 : 500));
  sweeper_.async_wait([this](error_code ec) {
    if (!ec) sweep();
  });
}

void IoThread::arm_stop_timer() {
  stop_timer_.expires_at(stop_deadline_);
  stop_timer_.async_wait([this](error_code ec) {
    if (!ec) ioc.stop();  // graceful timeout: what is still open is closed with the io thread
  });
}

void IoThread::sweep() {
  now = Clock::now();
  if (index == 0) {
    // After a burst of connections (thousands at once) most of the heap they used is free but still
    // resident; hand it back to the kernel once the burst is over.
    std::size_t open_now = shared.connections.load(std::memory_order_relaxed);
    peak_ = std::max(peak_, open_now);
    if (peak_ > open_now + 500 && open_now < peak_ / 2) {
      ::malloc_trim(0);
      peak_ = open_now;
    }
  }
  std::vector<std::shared_ptr<Conn>> expired;
  for (ConnNode& n : conns_)
    if (n.conn->expired(now)) expired.push_back(n.conn->shared_from_this());
  for (auto& c : expired) c->on_timeout();
  sweeping_ = false;
  if (stopping) {
    maybe_finish_stop();
    if (conns_.empty()) return;
  }
  arm_sweep();
}

void IoThread::begin_stop() {
  if (stopping) {
    // A second stop request: idle connections are closed now instead of at their timeout.
    std::vector<std::shared_ptr<Conn>> all;
    for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
    for (auto& c : all) c->on_shutdown(true);
    maybe_finish_stop();
    return;
  }
  stopping = true;
  stop_deadline_ = Clock::now() + shared.opt.graceful_timeout;
  if (on_stop) on_stop();
  for (auto& l : listeners_) {
    if (l->pause) l->pause->cancel();
    if (l->own) drain_accept_queue(*l);
    error_code ec;
    l->acceptor->close(ec);
  }
  // Once no thread accepts any more, no thread can be handed a connection: the threads may finish.
  if (shared.accepting.fetch_sub(1, std::memory_order_acq_rel) == 1)
    for (IoThread* t : shared.threads) asio::post(t->ioc, [t] { t->hold_.reset(); });
  std::vector<std::shared_ptr<Conn>> all;
  for (ConnNode& n : conns_) all.push_back(n.conn->shared_from_this());
  for (auto& c : all) c->on_shutdown(false);
  arm_stop_timer();
  maybe_finish_stop();
}

void IoThread::drain_accept_queue(Listener& l) {
  // An SO_REUSEPORT socket of this process's own: closing it resets the connections in its accept queue
  // (the other sockets of the group do not inherit them unless net.ipv4.tcp_migrate_req=1). Accept
  // what is queued and serve it first; a handshake completing between this and the close below is
  // still reset (docs/reliability.md §4).
  for (int n = 0; n < 4096; ++n) {
    error_code ec;
    Socket s(ioc);
    l.acceptor->accept(s, ec);
    if (ec) break;
    open.fetch_add(1, std::memory_order_relaxed);
    try {
      start_connection(*this, std::move(s), *l.info);
    } catch (const std::exception& e) {
      shared.errors.write(std::string("csgi: connection setup failed: ") + e.what());
    }
    open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void IoThread::close_all_connections() noexcept {
  std::vector<std::shared_ptr<Conn>> left;
  for (ConnNode& n : conns_) left.push_back(n.conn->shared_from_this());
  for (auto& c : left) {
    try {
      c->force_close();
    } catch (...) {
    }
  }
}

void IoThread::maybe_finish_stop() {
  if (!stopping || !conns_.empty()) return;
  stop_timer_.cancel();
  sweeper_.cancel();
}

void IoThread::stop() {
  shared.stopping = true;
  asio::post(ioc, [this] { begin_stop(); });
}

}  // namespace csgi::standalone::detail
