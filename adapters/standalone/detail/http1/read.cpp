// An HTTP/1 connection reading requests: the buffer, the head (parsed by request_parser.hpp), the body
// into its store, the keep-alive wait for the next request (see h1_conn.hpp).
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_conn.hpp"

namespace csgi::standalone::detail {

// The connection's own bytes begin: requests are read.
void H1Conn::serve() {
  phase_ = Phase::reading;
  wait_read();
}

void H1Conn::wait_read() {
  if (tr_.reading() || phase_ == Phase::closed || link_.peer_eof) return;
  if (!make_room()) {
    if (phase_ == Phase::lingering) in_.begin = in_.end = 0;
    else {
      reject(431, "request header too large");
      return;
    }
  }
  tr_.read_some(in_.buf.get() + in_.end, in_.cap - in_.end);
}

void H1Conn::on_read(error_code ec, std::size_t n) {
  if (phase_ == Phase::closed || ec == asio::error::operation_aborted) return;
  if (phase_ == Phase::lingering) {
    if (ec) {
      close_now();
      return;
    }
    in_.begin = in_.end = 0;  // discard
    wait_read();
    return;
  }
  if (ec == asio::error::eof) {
    link_.peer_eof = true;
  } else if (ec) {
    tr_.mark_dead();
    close_now();
    return;
  } else {
    in_.end += n;
  }
  if (phase_ == Phase::reading) process();
}

bool H1Conn::make_room() {
  if (in_.end < in_.cap) return true;
  if (req_.stage != Request::active && in_.begin > 0) {
    std::memmove(in_.buf.get(), in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin;
    in_.begin = 0;
    return in_.end < in_.cap;
  }
  if (req_.stage != Request::active) {
    std::size_t limit = sh_.opt.max_header_bytes + 1024;
    if (in_.cap >= limit) return false;
    std::size_t ncap = std::min(in_.cap * 2, limit);
    std::unique_ptr<char[]> nb(new char[ncap]);
    std::memcpy(nb.get(), in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin;
    in_.begin = 0;
    in_.buf = std::move(nb);
    in_.cap = ncap;
    return true;
  }
  // An active request: only the body region behind its header may be compacted.
  if (in_.begin > in_.body_base) {
    std::memmove(in_.buf.get() + in_.body_base, in_.at(in_.begin), in_.end - in_.begin);
    in_.end -= in_.begin - in_.body_base;
    in_.begin = in_.body_base;
  }
  return in_.end < in_.cap;
}

void H1Conn::begin_request() {
  if (!env_) env_ = t_.acquire_env();
  csgi::ConnectionInfo conn;
  const Transport::Peer& peer = tr_.peer();
  const ListenSocket& listener = tr_.listener();
  conn.server_name = listener.server_name;
  conn.server_port = peer.server_port[0] ? std::string_view(peer.server_port) : std::string_view(listener.server_port);
  if (peer.https || tr_.tls()) conn.url_scheme = "https";
  conn.remote_addr = peer.addr;
  conn.remote_port = peer.port;
  conn.script_name = sh_.opt.script_name;
  req_ = {};
  body_in_.reset();
  parser_.emplace(*env_, sh_.opt, conn);
  ws_handler_.reset();  // a handler an earlier request took but did not answer with its 101
}

// Parses and serves every complete request in the buffer, then waits for more bytes. Each step says
// what comes next: the following step, the loop again, waiting for bytes, or nothing (it took over).
void H1Conn::process() {
  while (phase_ == Phase::reading) {
    Step step = req_.stage != Request::active ? read_head() : Step::next;
    if (step == Step::next) step = read_body();
    if (step == Step::stop) return;
    if (step == Step::again) continue;
    if (step == Step::wait) break;
    request_ready();
    if (phase_ != Phase::reading) return;  // a delayed, pooled, streaming, file or closing response took over
    if (out_.unsent() > flush_threshold || !out_.ext.empty()) {
      if (!flush()) {
        wait_write();
        return;
      }
    }
  }
  if (phase_ == Phase::reading) wait_for_request();
}

// Parses the next request's head once it is all in the buffer (the env's views point into it), within
// the request-line and header limits.
H1Conn::Step H1Conn::read_head() {
  if (!parser_) {
    Step step = start_request();
    if (step != Step::next) return step;
  }
  if (!head_complete(in_.unparsed(), req_.scanned, req_.folded)) return head_incomplete();
  return parse_head();
}

// The first bytes of a request: HTTP/1 (a new request begins) or, on a new connection, maybe HTTP/2.
H1Conn::Step H1Conn::start_request() {
  // RFC 9112 §2.2: ignore empty lines before a request-line.
  while (in_.begin < in_.end && (in_.buf[in_.begin] == '\r' || in_.buf[in_.begin] == '\n')) ++in_.begin;
  if (in_.begin == in_.end) {
    in_.begin = in_.end = 0;
    return Step::wait;
  }
  if (link_.h2_possible) {
    // Plain: the preface starts HTTP/2 (prior knowledge). TLS: ALPN chose, during the handshake that
    // the first read made; the session checks the preface (RFC 9113 §3.3, §3.4).
    int m = tr_.tls() ? (tr_.alpn() == "h2" ? 1 : -1) : h2_preface_match(in_.unparsed());
    if (m == 0) return Step::wait;
    link_.h2_possible = false;
    if (m > 0) return start_h2(), Step::stop;
  }
  begin_request();
  set_idle(false);
  set_deadline(sh_.opt.header_timeout);
  return Step::next;
}

// Header incomplete: enforce the request-line and header-size limits on what we have.
H1Conn::Step H1Conn::head_incomplete() {
  std::string_view have = in_.unparsed();
  std::size_t eol = have.find('\n');
  if (eol == std::string_view::npos ? have.size() > sh_.opt.max_request_line : eol > sh_.opt.max_request_line + 1) {
    reject(414, "request line too long");
    return Step::stop;
  }
  if (have.size() > sh_.opt.max_header_bytes) {
    reject(431, "request header too large");
    return Step::stop;
  }
  return Step::wait;
}

// The whole head is buffered: Beast parses it in one call, so env views into it stay valid.
H1Conn::Step H1Conn::parse_head() {
  // RFC 9112 §5.2: obs-fold is refused. Before parsing: Beast unfolds such a value into a buffer of its
  // own, and the env's views (and the parser's checks of Host, Content-Length, Expect) would point there.
  if (req_.folded) {
    reject(400, "obs-fold in header");
    return Step::stop;
  }
  error_code ec;
  std::size_t used = parser_->put(asio::buffer(in_.unparsed()), ec);
  if (ec == http::error::need_more) ec = http::error::bad_line_ending;
  req_.http10 = parser_->http10;
  req_.head = parser_->head;
  if (ec) {
    reject(parser_->status_for(ec), parser_->reject_why[0] ? parser_->reject_why : "malformed request");
    return Step::stop;
  }
  in_.begin += used;
  in_.body_base = in_.begin;
  req_.stage = Request::active;
  if (parser_->reject_status) {
    reject(parser_->reject_status, parser_->reject_why);
    return Step::stop;
  }
  req_.expect = parser_->expect;
  bool has_body = !parser_->is_done();
  if (has_body && !parser_->chunked()) req_.content_length = parser_->content_length().value_or(0);
  // Expect: 100-continue (RFC 9110 §10.1.1): the 100 goes out when read_body() begins the body.
  if (!req_.expect.empty() && iequals(req_.expect, "100-continue")) req_.continue_pending = !req_.http10 && has_body;
  return Step::next;
}

// The request's body is read whole into body_in_ (memory, then a temporary file) before the app runs,
// as the bytes come, whatever the app's mode: no app ever waits on the network. Chunked bodies are
// decoded. The body ends in 413 past --max-body-bytes, 400 when malformed, 408 when slower than
// body_deadline() allows (on_timeout).
H1Conn::Step H1Conn::read_body() {
  if (parser_->is_done()) return Step::next;
  if (!req_.body_begun) {
    req_.body_begun = true;
    pace_.begin(t_.now);
    if (req_.continue_pending) {
      req_.continue_pending = false;
      out_.append("HTTP/1.1 100 Continue\r\n\r\n");
    }
    std::string why;
    if (!body_in_.expect(req_.content_length, sh_.body_limits, why)) {
      log_error(why);
      reject(500, "cannot store the request body");
      return Step::stop;
    }
  }
  char chunk[16384];
  return store_body(chunk, sizeof chunk);
}

H1Conn::Step H1Conn::store_body(char* chunk, std::size_t cap) {
  for (;;) {
    parser_->sink = chunk;
    parser_->sink_cap = cap;
    parser_->sink_len = 0;
    error_code ec;
    std::size_t used = in_.begin < in_.end || parser_->chunked() ? parser_->put(asio::buffer(in_.unparsed()), ec) : 0;
    in_.begin += used;
    pace_.received(used);
    if (ec && ec != http::error::need_more) {
      if (ec == http::error::body_limit)
        reject(413, "request body larger than " + std::to_string(sh_.opt.max_body_bytes) + " bytes");
      else reject(400, "malformed request body: " + ec.message());
      return Step::stop;
    }
    std::string why;
    if (!body_in_.append(chunk, parser_->sink_len, sh_.body_limits, why)) {
      log_error(why);
      reject(500, "cannot store the request body");
      return Step::stop;
    }
    if (parser_->is_done()) return Step::next;
    if (used > 0 || parser_->sink_len > 0) continue;
    if (link_.peer_eof) {
      reject(400, "connection closed before the end of the body");
      return Step::stop;
    }
    if (!body_room()) {
      reject(400, "chunk header too long");
      return Step::stop;
    }
    body_deadline();
    return Step::wait;
  }
}

// Room for more of the body (false: the buffer is full of a chunk header). When the rest of the body does
// not fit in the buffer's room, it is read through a buffer of its own, sized to that rest (a chunked
// body's: body_read_chunked) within body_read_max, so that a large body takes a few reads; the head's
// buffer, which the env's views point into, is kept until the request ends (release_head). The body
// buffer counts in the process's body memory (--body-memory-bytes): past that, the body is read through
// the connection's buffer.
bool H1Conn::body_room() {
  bool room = make_room();
  if (in_.charged) return room;
  std::size_t have = in_.end - in_.begin;
  std::uint64_t rest = parser_->chunked() ? body_read_chunked : parser_->content_length_remaining().value_or(0);
  if (rest <= in_.cap - in_.end) return room;
  std::size_t size = static_cast<std::size_t>(std::min<std::uint64_t>(have + rest, body_read_max));
  if (size <= in_.cap - in_.body_base) return room;
  BodyMemory* memory = sh_.body_limits.memory;
  if (memory && !memory->reserve(size)) return room;
  std::unique_ptr<char[]> buf(new (std::nothrow) char[size]);
  if (!buf) {
    if (memory) memory->release(size);
    return room;
  }
  std::memcpy(buf.get(), in_.at(in_.begin), have);
  in_.head_cap = in_.cap;
  in_.head = std::exchange(in_.buf, std::move(buf));
  in_.cap = in_.charged = size;
  in_.begin = in_.body_base = 0;
  in_.end = have;
  return true;
}

// The request's env is gone: the head's buffer is the connection's again, with the bytes read past the
// body. When those do not fit in it, or a read is under way into the body buffer (a body that timed out),
// the body buffer stays the connection's until it is idle (wait_for_request) or closed.
void H1Conn::release_head() noexcept {
  if (!in_.head) return;
  std::size_t have = in_.end - in_.begin;
  if (have > in_.head_cap || tr_.reading()) {
    in_.head.reset();
    return;
  }
  std::memcpy(in_.head.get(), in_.at(in_.begin), have);
  in_.buf = std::move(in_.head);
  in_.cap = in_.head_cap;
  in_.begin = in_.body_base = 0;
  in_.end = have;
  release_body_buffer();
}

// The body buffer's bytes no longer count in the process's body memory (it is gone, or going).
void H1Conn::release_body_buffer() noexcept {
  if (in_.charged && sh_.body_limits.memory) sh_.body_limits.memory->release(in_.charged);
  in_.charged = 0;
}

// The body's deadline after a piece: --body-timeout from now, within what --body-min-rate allows.
void H1Conn::body_deadline() {
  tr_.set_deadline_at(pace_.deadline(t_.now, sh_.opt.body_timeout, sh_.opt.body_min_rate));
}

// Every complete request is answered: write what is pending, then wait for the next request (or close
// after a client's half-close).
void H1Conn::wait_for_request() {
  if (out_.pending()) {
    if (!flush()) {
      wait_write();
      return;
    }
  }
  if (link_.peer_eof) {
    // Client half-closed and every complete request is answered.
    close_now();
    return;
  }
  // Idle: also while stopping, when the connection is kept until its idle timeout or the graceful timeout
  // (see on_shutdown); a request that still comes is answered with Connection: close.
  if (req_.stage != Request::active && in_.begin == in_.end) {
    if (in_.charged && !tr_.reading()) {
      // An idle connection holds no body buffer.
      in_.buf.reset(new char[initial_buffer]);
      in_.cap = initial_buffer;
      in_.begin = in_.end = 0;
      release_body_buffer();
    }
    set_deadline(sh_.opt.idle_timeout);
    set_idle(true);
  }
  wait_read();
}

}  // namespace csgi::standalone::detail
