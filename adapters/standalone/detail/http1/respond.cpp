// The standalone server's responses: heads, bodies, files (sendfile), pull streams, and writing (see h1_conn.hpp).
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

namespace csgi::standalone::detail {

// Turns the app's response into bytes (or starts its body), in the order of requests.
void H1Conn::handle(Response&& res) {
  if (link_.hijacked || phase_ == Phase::closed) return;
  if (req_.continue_pending) req_.keep_alive = false;  // the client may still be waiting to send its body
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    phase_ = Phase::delayed;
    self_hold_ = shared_from_this();
    auto keeper = std::make_shared<RequestKeeper>();
    keeper_ = keeper;
    auto responder = delayed_responder(self_hold_, std::move(keeper));
    Delayed fn = std::move(*d);
    AppScope scope(t_.fault_slot, &tr_);
    call_delayed(fn, std::move(responder), log_);  // unanswered, the dropped responder answers 500
    return;
  }
  start_body(res);
}

void H1Conn::write_head(int status, const Headers& headers, std::optional<std::uint64_t> length, bool chunked) {
  req_.status = status;
  if (!req_.keep_alive || sh_.stopping.load(std::memory_order_relaxed)) req_.keep_alive = false;
  Persistence p = status == 101         ? Persistence::upgrade
                  : !req_.keep_alive   ? Persistence::close
                  : req_.http10        ? Persistence::keep_http10
                                       : Persistence::keep;
  append_head(out_.buf, sh_.status_line(status), headers, length, chunked, p, sh_.errors);
}

// The response's body, resolved by the exchange (response_body.hpp), written as HTTP/1 bytes.
void H1Conn::start_body(Response& res) {
  Sink sink(this);
  drive_response(res, req_.head, !req_.http10, sink, log_);
}

void H1Conn::Sink::head_only(int status, Headers& headers, std::optional<std::uint64_t> length) {
  c->write_head(status, headers, length, false);
  c->finish_response();
}

void H1Conn::Sink::text(int status, Headers& headers, std::string& body) {
  c->write_head(status, headers, body.size(), false);
  c->req_.sent_body = body.size();
  if (body.size() <= inline_body_max) {
    c->out_.append(body);
  } else {
    auto keep = std::make_shared<std::string>(std::move(body));
    c->out_.ext.push_back({c->out_.size(), *keep, keep});
  }
  c->finish_response();
}

void H1Conn::Sink::bytes(int status, Headers& headers, const SharedBytes& body) {
  c->write_head(status, headers, body->size(), false);
  c->req_.sent_body = body->size();
  if (body->size() <= 2048) c->out_.append(*body);
  else c->out_.ext.push_back({c->out_.size(), std::string_view(*body), body});
  c->finish_response();
}

void H1Conn::Sink::file(int status, Headers& headers, FileSpan span) {
  c->write_head(status, headers, span.length, false);
  c->body_ = FileBody{std::move(span.file), span.offset, span.length};
  c->req_.sent_body = span.length;
  c->phase_ = Phase::body;
  c->pump_file();
}

// A pull stream past its first chunk: framed by the app's Content-Length (counted, ADP-13), chunked, or
// (HTTP/1.0) ended by closing; pump_stream writes the chunks as the socket takes them.
void H1Conn::Sink::stream(int status, Headers& headers, StreamPtr stream, std::string first,
                        std::optional<std::uint64_t> declared) {
  StreamBody& body = c->body_.emplace<StreamBody>();
  body.stream = std::move(stream);
  body.framing = declared ? Framing::counted : c->req_.http10 ? Framing::until_close : Framing::chunked;
  if (body.framing == Framing::until_close) c->req_.keep_alive = false;
  c->write_head(status, headers, declared, body.framing == Framing::chunked);
  body.declared = body.left = declared.value_or(0);
  c->phase_ = Phase::body;
  if (c->append_counted(first)) c->pump_stream();
  else c->end_stream();
}

// Trailers only: an empty chunked body that carries them.
void H1Conn::Sink::trailers_only(int status, Headers& headers, Headers trailers) {
  c->write_head(status, headers, std::nullopt, true);
  append_last_chunk(c->out_.buf, trailers);
  c->finish_response();
}

// Closes the pull stream (a close() that throws is logged) and lets it go.
void H1Conn::drop_stream() noexcept {
  close_stream(*std::get<StreamBody>(body_).stream, log_);
  body_ = std::monostate{};
}


// Sends the head (if any) then the file with sendfile(2), as far as the socket takes it. The head goes
// with MSG_MORE (flush), so it waits in the socket and fills the first segment with the file's first
// bytes; sendfile marks each piece but its last "more" itself, so full segments leave as they fill and
// the last one leaves at once (TCP_NODELAY). That is what TCP_CORK around the response gives, without
// its two setsockopt calls per response; a body that fills the socket may leave one short segment where
// a call stopped, one per wait for writability.
void H1Conn::pump_file() {
  if (!flush()) {
    if (tr_.dead()) close_now();
    else wait_write();
    return;
  }
  FileBody& f = std::get<FileBody>(body_);
  while (f.left > 0) {
    off_t off = static_cast<off_t>(f.off);
    std::size_t want = std::min<std::uint64_t>(f.left, 1 << 30);
    ssize_t n = tr_.sendfile(f.file->fd(), &off, want);
    if (n > 0) {
      f.off += static_cast<std::uint64_t>(n);
      f.left -= static_cast<std::uint64_t>(n);
      set_deadline(sh_.opt.send_timeout);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      wait_write();
      return;
    }
    // Error, or the file shrank under us: the response cannot be completed.
    if (n == 0) log_length_error(req_.sent_body, req_.sent_body - f.left, false);
    req_.keep_alive = false;
    if (n < 0) tr_.mark_dead();
    close_now();
    return;
  }
  body_ = std::monostate{};
  finish_response();
}

// Pulls chunks from the stream until the output is large, then writes; close() is always called.
void H1Conn::pump_stream() {
  std::string chunk;
  for (;;) {
    if (out_.unsent() >= flush_threshold) {
      if (!flush()) {
        if (tr_.dead()) close_now();
        else wait_write();
        return;
      }
    }
    bool more = false;
    try {
      AppScope scope(t_.fault_slot, &tr_);
      more = std::get<StreamBody>(body_).stream->next(chunk);
    } catch (const std::exception& e) {
      log_error(std::string("the response stream's next() threw after the head was sent: ") + e.what());
      req_.keep_alive = false;
      drop_stream();
      // The status is out: end the connection so the client sees an incomplete body.
      if (flush()) close_now();
      else phase_ = Phase::lingering, wait_write();
      return;
    }
    if (!more) break;
    if (chunk.empty()) continue;
    if (!append_counted(chunk)) break;
  }
  end_stream();
}

// The stream ended (or ran past its declared length): close it and finish the response. A body short of
// its declared length is not passed off as complete: the connection closes after it (ADP-13).
void H1Conn::end_stream() {
  StreamBody& s = std::get<StreamBody>(body_);
  if (s.framing == Framing::counted && s.left > 0) {
    log_length_error(s.declared, s.declared - s.left, false);
    req_.keep_alive = false;
  }
  if (s.framing == Framing::chunked) append_last_chunk(out_.buf, pull_trailers());
  drop_stream();
  finish_response();
}

// The trailer fields of the pull stream that ended (RES-15).
Headers H1Conn::pull_trailers() {
  AppScope scope(t_.fault_slot, &tr_);
  return stream_trailers(*std::get<StreamBody>(body_).stream, log_);
}


// Appends a streamed chunk, framed. Under a declared Content-Length nothing goes past it (ADP-13): the
// excess is dropped and logged, the connection closes after the response, and false says to stop.
bool H1Conn::append_counted(std::string_view chunk) {
  StreamBody& s = std::get<StreamBody>(body_);
  if (s.framing == Framing::counted) {
    if (chunk.size() > s.left) {
      log_length_error(s.declared, s.declared - s.left + chunk.size(), true);
      chunk = chunk.substr(0, s.left);
      s.left = 0;
      req_.keep_alive = false;
      req_.sent_body += chunk.size();
      out_.append(chunk);
      return false;
    }
    s.left -= chunk.size();
  }
  req_.sent_body += chunk.size();
  append_body(out_.buf, chunk, s.framing == Framing::chunked);
  return true;
}

void H1Conn::log_length_error(std::uint64_t declared, std::uint64_t produced, bool over) {
  log_error(length_error(declared, produced, over, "the connection is closed"));
}

// The response is complete in the output buffer (maybe not yet written).
void H1Conn::finish_response() {
  end_request();
  settle_request_body();
  if (!req_.keep_alive) {
    in_.begin = in_.end;
    if (flush()) {
      linger();
    } else if (!tr_.dead()) {
      phase_ = Phase::lingering;
      wait_write();
    } else {
      close_now();
    }
  }
}

// The request is answered: counted, logged, its cleanup handlers run, its env back to the thread's pool
// (an idle keep-alive connection holds no env).
void H1Conn::end_request() {
  self_hold_.reset();
  keeper_.reset();
  response_done(sh_, cleanup_, req_.status, req_.sent_body);
  if (cleanup_.size() > 0) {
    // Cleanup handlers run after the response went out: write what we have first.
    flush();
    cleanup_.run(*env_);
  }
  t_.release_env(std::move(env_));
  release_head();
  req_.stage = Request::none;
  phase_ = Phase::reading;
}

// The request's body once its response is complete: read whole before the app ran, it goes now. A
// request answered before its body was read (a framing error, an unsupported expectation) closes the
// connection after the response.
void H1Conn::settle_request_body() {
  if (parser_ && !parser_->is_done()) req_.keep_alive = false;
  parser_.reset();
  body_in_.reset();
}

ExchangeLog::FaultScope H1Conn::Log::fault_scope() const noexcept { return {c->t_.fault_slot, &c->tr_}; }

void H1Conn::Log::error(std::string_view what) noexcept {
  try {
    c->log_error(what);
  } catch (...) {
  }
}

void H1Conn::log_error(std::string_view what) {
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

// The connection closes with the response's head written and its body not complete: counted and logged
// with the body bytes it got, as the complete ones are.
void H1Conn::log_cut_short() noexcept {
  if (auto* f = std::get_if<FileBody>(&body_)) req_.sent_body -= f->left;
  response_done(sh_, cleanup_, req_.status, req_.sent_body);
}

// Output.

int H1Conn::Output::gather_segments(iovec* iov, int max) const noexcept {
  int n = 0;
  std::size_t at = pos;
  for (std::size_t i = ext_done; i < ext.size() && n < max - 2; ++i) {
    if (ext[i].at > at) {
      iov[n++] = {const_cast<char*>(buf.data()) + at, ext[i].at - at};
      at = ext[i].at;
    }
    std::size_t skip = i == ext_done ? ext_off : 0;
    iov[n++] = {const_cast<char*>(ext[i].data.data()) + skip, ext[i].data.size() - skip};
  }
  if (buf.size() > at && n < max) iov[n++] = {const_cast<char*>(buf.data()) + at, buf.size() - at};
  return n;
}

// Moves past `n` written bytes, through buf and the segments (a written segment lets its bytes go).
void H1Conn::Output::advance_segments(std::size_t n) noexcept {
  while (n > 0) {
    std::size_t next_at = ext_done < ext.size() ? ext[ext_done].at : buf.size();
    if (pos < next_at) {
      std::size_t k = std::min(n, next_at - pos);
      pos += k;
      n -= k;
      continue;
    }
    if (ext_done == ext.size()) break;
    Ext& e = ext[ext_done];
    std::size_t k = std::min(n, e.data.size() - ext_off);
    ext_off += k;
    n -= k;
    if (ext_off == e.data.size()) {
      e.keep.reset();
      ++ext_done;
      ext_off = 0;
    }
  }
}

// What is unwritten, copied out; the output is empty after.
std::string H1Conn::Output::take() {
  std::string o;
  std::size_t at = pos;
  for (std::size_t i = ext_done; i < ext.size(); ++i) {
    if (ext[i].at > at) {
      o.append(buf, at, ext[i].at - at);
      at = ext[i].at;
    }
    o.append(ext[i].data.substr(i == ext_done ? ext_off : 0));
  }
  if (buf.size() > at) o.append(buf, at);
  clear();
  return o;
}

bool H1Conn::flush() {
  if (tr_.dead()) return false;
  for (;;) {
    iovec iov[32];
    int n = out_.gather(iov, 32);
    if (n == 0) {
      out_.clear();
      return true;
    }
    auto* file = std::get_if<FileBody>(&body_);
    ssize_t w = tr_.writev(iov, n, file && file->left > 0);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      tr_.mark_dead();
      return false;
    }
    set_deadline(sh_.opt.send_timeout);
    out_.advance(static_cast<std::size_t>(w));
    if (out_.written()) {
      out_.clear();
      if (req_.stage != Request::active && phase_ == Phase::reading) clear_deadline();
      return true;
    }
  }
}

void H1Conn::wait_write() {
  if (tr_.writing() || phase_ == Phase::closed) return;
  tr_.wait_writable();
}

void H1Conn::on_writable(error_code ec) {
  if (ec == asio::error::operation_aborted && phase_ != Phase::closed) return;
  if (ec || phase_ == Phase::closed) {
    close_now();
    return;
  }
  switch (phase_) {
    case Phase::body:
      // A body that ends here ends a response that process() is not waiting on: what is left of the
      // output, a pipelined request in the buffer and the next read are taken up here.
      if (auto* w = std::get_if<WriterBody>(&body_)) {
        std::shared_ptr<WriterState> writer = w->writer;  // the body may end inside
        return on_writer_flush(writer);
      }
      if (std::holds_alternative<FileBody>(body_)) pump_file();
      else pump_stream();
      if (phase_ == Phase::reading) process();
      return;
    case Phase::lingering:
      if (flush()) linger();
      else if (!tr_.dead()) wait_write();
      else close_now();
      return;
    default: break;
  }
  if (!flush()) {
    if (tr_.dead()) close_now();
    else wait_write();
    return;
  }
  after_flush();
}

void H1Conn::after_flush() {
  if (phase_ == Phase::reading) process();
}

}  // namespace csgi::standalone::detail
