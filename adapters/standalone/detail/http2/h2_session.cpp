// An HTTP/2 connection as an nghttp2 server session: request streams to envs, responses to frames (see
// h2_session.hpp).
#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <fcntl.h>

#include "csgi/adapters/standalone/detail/http2/h2_websocket.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace {
// DATA frames with neither payload nor END_STREAM a connection may send (CVE-2019-9518), plus one per
// request it completes.
constexpr std::uint64_t empty_frame_budget = 1000;

std::optional<std::uint64_t> parse_length(std::string_view v) {
  std::uint64_t n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size()) return std::nullopt;
  return n;
}

// Fields that RFC 9113 §8.2.2 forbids in HTTP/2: an app's response may still carry them (HTTP/1 habits).
bool connection_specific(std::string_view name) {
  return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "proxy-connection") ||
         iequals(name, "transfer-encoding") || iequals(name, "upgrade") || iequals(name, "te");
}
}  // namespace

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

H2Request::~H2Request() {
  if (env && cleanup.size() > 0) cleanup.run(*env);
}

bool H2Request::upgrade(websocket::Handler handler) {
  if (!websocket || !in_app.load() || ws_handler) return false;
  ws_handler = std::make_unique<websocket::Handler>(std::move(handler));
  return true;
}

H2Limits H2Limits::from(const ServerOptions& opt) {
  H2Limits l;
  l.max_streams = opt.h2_max_streams;
  l.initial_window = opt.h2_initial_window;
  l.max_header_bytes = opt.max_header_bytes;
  l.max_header_count = opt.max_header_count;
  l.max_request_line = opt.max_request_line;
  l.max_body_bytes = opt.max_body_bytes;
  l.websocket = opt.h2_websocket;
  l.body.memory_bytes = opt.body_buffer_bytes;
  l.ws_allowed_origins = &opt.ws_allowed_origins;
  return l;
}

struct H2Session::Stream {
  std::int32_t id = 0;
  std::shared_ptr<H2Request> req;  // set by new_stream()
  // The request head as it comes.
  std::size_t header_bytes = 0, header_count = 0;
  std::string_view method, path, authority, host, cookie, protocol;
  int bad_status = 0;
  std::string why;
  std::optional<std::uint64_t> content_length;
  bool head_done = false, request_done = false, dispatched = false, responded = false, reported = false;
  bool body_over = false;
  bool refused = false;         // reset with REFUSED_STREAM: the connection's body budget was spent
  std::uint64_t buffered = 0;   // body bytes counted against the connection's budget
  // The response.
  int status = 0;
  std::uint64_t sent = 0;
  enum class Src { none, view, file, pull, writer, ws } src = Src::none;
  std::shared_ptr<const void> keep;
  std::string_view view;
  std::size_t pos = 0;
  std::shared_ptr<FileHandle> file;
  std::uint64_t file_off = 0, file_left = 0;
  StreamPtr pull;
  std::string out;
  std::size_t out_pos = 0;
  bool eof = false, deferred = false, data_open = false;
  std::optional<std::uint64_t> declared;  // a pull stream's or writer's Content-Length (ADP-13)
  std::shared_ptr<H2WriterState> writer;
  Headers trailers;  // a pull stream's or writer's, taken at the end of its body (ADP-17)
  // WebSocket (RFC 8441): an extended CONNECT with `:protocol websocket`; its DATA before the app's
  // answer (window held), then the pipe to the WebSocket session.
  bool ws = false, ws_early_end = false;
  std::string ws_early;
  std::shared_ptr<H2WsPipe> pipe;

  ~Stream() {
    if (pipe) pipe->closed();
    if (pull) {
      try {
        pull->close();
      } catch (...) {
      }
    }
    if (writer) {
      std::lock_guard lock(writer->mu);
      writer->dead = true;
      writer->cv.notify_all();
    }
  }
};

// The nghttp2 callbacks: each one catches what it calls (no exception crosses into C).
struct H2Callbacks {
  static H2Session& self(void* p) { return *static_cast<H2Session*>(p); }

  static int on_begin_headers(nghttp2_session* ng, const nghttp2_frame* f, void* p) {
    H2Session& h = self(p);
    h.heading_ = nullptr;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    try {
      auto s = h.new_stream();
      s->id = f->hd.stream_id;
      s->req->id = s->id;
      s->req->env = h.host_.acquire_env();
      nghttp2_session_set_stream_user_data(ng, s->id, s.get());
      H2Session::Stream* at = s.get();
      h.insert(std::move(s));
      h.heading_ = at;
      ++h.open_;
      ++h.awaiting_;
    } catch (...) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  static int on_header(nghttp2_session* ng, const nghttp2_frame* f, const std::uint8_t* n, std::size_t nlen,
                       const std::uint8_t* v, std::size_t vlen, std::uint8_t, void* p) {
    H2Session& h = self(p);
    auto* s = h.heading(ng, f->hd.stream_id);
    if (!s) return 0;
    // RFC 9113 §6.5.2: each field counts its name, value and 32 bytes. Far past the limit (an HPACK
    // bomb: small frames that decode to huge lists) the connection ends.
    s->header_bytes += nlen + vlen + 32;
    if (s->header_bytes > 4 * h.limits_.max_header_bytes + 65536) {
      h.calm_ = true;
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (s->head_done || s->bad_status) return 0;  // trailers are not part of the env
    if (s->header_bytes > h.limits_.max_header_bytes) {
      s->bad_status = 431;
      s->why = "request header too large";
      return 0;
    }
    if (++s->header_count > h.limits_.max_header_count + 4) {
      s->bad_status = 431;
      s->why = "too many header fields";
      return 0;
    }
    try {
      Env& env = *s->req->env;
      auto copy = [&](const std::uint8_t* b, std::size_t len) {
        char* c = env.allocate(len);
        if (len) std::memcpy(c, b, len);
        return std::string_view(c, len);
      };
      std::string_view name(reinterpret_cast<const char*>(n), nlen);
      if (!name.empty() && name[0] == ':') {
        std::string_view value = copy(v, vlen);
        if (name == ":method") s->method = value;
        else if (name == ":path") s->path = value;
        else if (name == ":authority") s->authority = value;
        else if (name == ":protocol") s->protocol = value;
        return 0;
      }
      std::string_view value = copy(v, vlen);
      if (name == "host") {
        if (!s->host.empty() && s->host != value) {
          s->bad_status = 400;
          s->why = "repeated Host";
        }
        s->host = value;
        return 0;
      }
      if (name == "cookie") {
        // RFC 9113 §8.2.3: split cookie fields are joined with "; ".
        if (s->cookie.empty()) {
          s->cookie = value;
        } else {
          char* c = env.allocate(s->cookie.size() + 2 + value.size());
          std::memcpy(c, s->cookie.data(), s->cookie.size());
          std::memcpy(c + s->cookie.size(), "; ", 2);
          if (!value.empty()) std::memcpy(c + s->cookie.size() + 2, value.data(), value.size());
          s->cookie = {c, s->cookie.size() + 2 + value.size()};
        }
        return 0;
      }
      if (name == "content-length") {
        auto len = parse_length(value);
        if (!len) {
          s->bad_status = 400;
          s->why = "malformed Content-Length";
          return 0;
        }
        s->content_length = len;
      }
      add_header(env, copy(n, nlen), value);
    } catch (...) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session* ng, const nghttp2_frame* f, void* p) {
    H2Session& h = self(p);
    auto* s = h.heading(ng, f->hd.stream_id);
    if (f->hd.type == NGHTTP2_HEADERS) h.heading_ = nullptr;  // its header block is over
    bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    try {
      if (f->hd.type == NGHTTP2_DATA && f->hd.length == 0 && !end) {
        if (++h.empty_frames_ > empty_frame_budget) {
          h.calm_ = true;
          return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
      }
      if (!s) return 0;
      if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) h.finish_head(*s, end);
      if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && end) {
        if (s->ws) ws_end(*s);
        else h.request_complete(*s);
      }
    } catch (...) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  static int on_data_chunk(nghttp2_session* ng, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                           std::size_t len, void* p) {
    H2Session& h = self(p);
    auto* s = static_cast<H2Session::Stream*>(nghttp2_session_get_stream_user_data(ng, id));
    if (s && s->ws) return ws_data(h, *s, data, len);
    // A request body is read whole (within the limits) into its store, memory then a temporary file:
    // its window goes back as it comes.
    nghttp2_session_consume(ng, id, len);
    if (!s || s->body_over || s->bad_status || s->responded || s->refused) return 0;
    try {
      RequestBody& body = s->req->body;
      if (body.size() + len <= h.limits_.max_body_bytes && h.buffered_ + len > h.limits_.max_body_bytes) {
        // The bodies buffered on this connection at once stay within one --max-body-bytes: this one is
        // refused unprocessed (the client may retry it).
        s->refused = true;
        h.buffered_ -= s->buffered;
        s->buffered = 0;
        body.reset();
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
        return 0;
      }
      if (body.size() + len > h.limits_.max_body_bytes) {
        s->body_over = true;
        h.buffered_ -= s->buffered;
        s->buffered = 0;
        body.reset();
        s->bad_status = 413;
        s->why = "request body larger than " + std::to_string(h.limits_.max_body_bytes) + " bytes";
        h.ready_.push_back(s->id);
        return 0;
      }
      std::string why;
      if (!body.append(reinterpret_cast<const char*>(data), len, h.limits_.body, why)) {
        h.host_.log_error(why);
        s->body_over = true;
        h.buffered_ -= s->buffered;
        s->buffered = 0;
        body.reset();
        s->bad_status = 500;
        s->why = "cannot store the request body";
        h.ready_.push_back(s->id);
        return 0;
      }
      s->buffered += len;
      h.buffered_ += len;
    } catch (...) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  // DATA of a WebSocket stream: for its session, whose reads give the window back; before the app's
  // answer, kept; after an answer without WebSocket, dropped.
  static int ws_data(H2Session& h, H2Session::Stream& s, const std::uint8_t* data, std::size_t len) {
    try {
      if (s.pipe) {
        s.pipe->in.append(reinterpret_cast<const char*>(data), len);
        s.pipe->wake_reader();
      } else if (!s.responded) {
        s.ws_early.append(reinterpret_cast<const char*>(data), len);
      } else {
        nghttp2_session_consume(h.ng_, s.id, len);
      }
    } catch (...) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
  }

  // The peer ended its side of a WebSocket stream (END_STREAM: its TCP FIN).
  static void ws_end(H2Session::Stream& s) {
    s.request_done = true;
    if (s.pipe) {
      s.pipe->in_end = true;
      s.pipe->wake_reader();
    } else {
      s.ws_early_end = true;
    }
  }

  static int on_frame_send(nghttp2_session* ng, const nghttp2_frame* f, void* p) {
    H2Session& h = self(p);
    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
      return 0;
    auto* s = static_cast<H2Session::Stream*>(nghttp2_session_get_stream_user_data(ng, f->hd.stream_id));
    if (!s) return 0;
    if (!s->reported) {
      s->reported = true;
      h.host_.on_response_done(*s->req, s->status, s->sent, true);
    }
    // RFC 9113 §8.1: the response is complete before the request: the rest of it is not wanted.
    if (!s->request_done) nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* p) {
    H2Session& h = self(p);
    auto it = h.streams_.find(id);
    if (it == h.streams_.end()) return 0;
    H2Session::Stream& s = *it->second;
    if (h.heading_ == &s) h.heading_ = nullptr;
    if (s.responded && !s.reported) {
      s.reported = true;
      h.host_.on_response_done(*s.req, s.status, s.sent, false);
    }
    if (!s.request_done && !s.ws && h.awaiting_ > 0) --h.awaiting_;
    --h.open_;
    // What the peer sent on a WebSocket stream and nobody will read: its connection window goes back.
    std::size_t unread = s.ws_early.size();
    if (s.pipe && !s.pipe->released) unread += s.pipe->in.size() - s.pipe->in_pos;
    if (s.pipe) s.pipe->released = true;
    if (unread) nghttp2_session_consume(h.ng_, id, unread);
    h.buffered_ -= s.buffered;
    // The stream holds its request alone (no app, Responder or Writer does): its env is recycled here.
    if (!s.req->escaped && s.req.use_count() == 1 && s.req->env) {
      if (s.req->cleanup.size() > 0) s.req->cleanup.run(*s.req->env);
      h.host_.release_env(std::move(s.req->env));
    }
    h.recycle(h.streams_.extract(it));
    return 0;
  }

  static ssize_t read_body(nghttp2_session* ng, std::int32_t id, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* src, void* p) {
    H2Session& h = self(p);
    auto* s = static_cast<H2Session::Stream*>(src->ptr);
    try {
      std::size_t n = fill(h, *s, buf, length);
      if (n == static_cast<std::size_t>(-1)) return NGHTTP2_ERR_DEFERRED;
      if (s->declared && s->sent + n > *s->declared) {
        h.host_.log_error("the response body ran past its Content-Length; the stream is reset (ADP-13)");
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      s->sent += n;
      h.data_sent_ += n;
      if (s->eof) {  // nothing left (fill() sets it only then)
        if (s->declared && s->sent < *s->declared) {
          h.host_.log_error("the response body fell short of its Content-Length; the stream is reset (ADP-13)");
          return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        // The trailing HEADERS frame ends the stream instead of this DATA frame.
        if (h.submit_trailers(*s)) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      }
      if (*flags & NGHTTP2_DATA_FLAG_EOF) s->data_open = false;
      (void)ng;
      (void)id;
      return static_cast<ssize_t>(n);
    } catch (const std::exception& e) {
      h.host_.log_error(std::string("the response body failed: ") + e.what() + "; the stream is reset");
    } catch (...) {
      h.host_.log_error("the response body failed; the stream is reset");
    }
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }

  // Copies up to `length` body bytes into `buf`; -1 when none is there yet (deferred). Sets eof at the
  // end of a pull stream or writer; a complete or file body sets the EOF flag through data_open.
  static std::size_t fill(H2Session& h, H2Session::Stream& s, std::uint8_t* buf, std::size_t length) {
    using Src = H2Session::Stream::Src;
    switch (s.src) {
      case Src::view: {
        std::size_t n = std::min(length, s.view.size() - s.pos);
        if (n) std::memcpy(buf, s.view.data() + s.pos, n);
        s.pos += n;
        if (s.pos == s.view.size()) s.eof = true;
        return n;
      }
      case Src::file: {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(length, s.file_left));
        ssize_t r;
        do r = ::pread(s.file->fd(), buf, want, static_cast<off_t>(s.file_off));
        while (r < 0 && errno == EINTR);
        if (r <= 0 && want > 0) throw std::runtime_error(r == 0 ? "the file shrank while it was sent" : std::strerror(errno));
        s.file_off += static_cast<std::uint64_t>(r);
        s.file_left -= static_cast<std::uint64_t>(r);
        if (s.file_left == 0) s.eof = true;
        return static_cast<std::size_t>(r);
      }
      case Src::pull: {
        if (s.out_pos == s.out.size() && !s.eof) {
          s.out.clear();
          s.out_pos = 0;
          bool more;
          do more = s.pull->next(s.out);
          while (more && s.out.empty());
          if (!more) {
            s.eof = true;
            s.out.clear();
            s.trailers = pull_trailers(h, *s.pull);
            try {
              s.pull->close();
            } catch (...) {
            }
            s.pull.reset();
          }
        }
        return take_out(s, buf, length);
      }
      case Src::writer: {
        std::lock_guard lock(s.writer->mu);
        if (s.out_pos == s.out.size()) {
          s.out.clear();
          s.out.swap(s.writer->pending);
          s.out_pos = 0;
        }
        if (s.writer->aborted) throw std::runtime_error("a streaming Writer was dropped without close()");
        std::size_t n = take_out(s, buf, length);
        if (s.out_pos == s.out.size() && s.writer->pending.empty() && s.writer->closed) {
          s.eof = true;
          s.trailers = std::move(s.writer->trailers);
        }
        s.writer->unsent = s.out.size() - s.out_pos;
        s.writer->cv.notify_all();
        if (n == 0 && !s.eof) {
          s.deferred = true;
          return static_cast<std::size_t>(-1);
        }
        return n;
      }
      case Src::ws: {
        H2WsPipe& p = *s.pipe;
        std::size_t n = std::min(length, p.unsent());
        if (n) std::memcpy(buf, p.out.data() + p.out_pos, n);
        p.out_pos += n;
        if (n) p.wake_writer();
        if (p.unsent() == 0 && p.out_end) {
          s.eof = true;
          return n;
        }
        if (n == 0) {
          s.deferred = true;
          return static_cast<std::size_t>(-1);
        }
        return n;
      }
      case Src::none: break;
    }
    (void)h;
    s.eof = true;
    return 0;
  }

  // A pull stream's trailers() (RES-15); one that throws is logged and the body ends without them.
  static Headers pull_trailers(H2Session& h, csgi::Stream& pull) {
    std::string error;
    Headers trailers = ended_stream_trailers(pull, error);
    if (!error.empty()) h.host_.log_error(error);
    return trailers;
  }

  static std::size_t take_out(H2Session::Stream& s, std::uint8_t* buf, std::size_t length) {
    std::size_t n = std::min(length, s.out.size() - s.out_pos);
    if (n) std::memcpy(buf, s.out.data() + s.out_pos, n);
    s.out_pos += n;
    return n;
  }
};

// nghttp2's memory for one session: blocks of up to 1 KiB the session frees are kept by size class (64,
// 128, … 1024 bytes; kCacheBytes in all) for its next ones. A busy connection opens and closes streams by
// the hundred, a few blocks each, more than malloc's per-size caches hold. Under AddressSanitizer the
// session uses malloc itself.
struct H2Session::Blocks {
  static constexpr std::size_t kHeader = 16;  // the block's class and size, before what nghttp2 gets
  static constexpr std::size_t kClasses = 5, kMin = 64, kCacheBytes = 128 * 1024;
  std::vector<char*> spare[kClasses];
  std::size_t cached = 0;

  Blocks() = default;
  Blocks(const Blocks&) = delete;
  Blocks& operator=(const Blocks&) = delete;
  ~Blocks() {
    for (auto& list : spare)
      for (char* b : list) std::free(b);
  }
  static std::size_t class_of(std::size_t n) noexcept {
    std::size_t c = 0;
    while (c < kClasses && n > (kMin << c)) ++c;
    return c;
  }
  void* alloc(std::size_t n) noexcept {
    std::size_t c = class_of(n);
    if (c < kClasses && !spare[c].empty()) {
      char* b = spare[c].back();
      spare[c].pop_back();
      cached -= kMin << c;
      return b + kHeader;
    }
    std::size_t size = c < kClasses ? kMin << c : n;
    if (size > SIZE_MAX - kHeader) return nullptr;
    auto* b = static_cast<char*>(std::malloc(kHeader + size));
    if (!b) return nullptr;
    std::size_t head[2] = {c, size};
    std::memcpy(b, head, sizeof head);
    return b + kHeader;
  }
  void release(void* p) noexcept {
    if (!p) return;
    char* b = static_cast<char*>(p) - kHeader;
    std::size_t head[2];
    std::memcpy(head, b, sizeof head);
    if (head[0] < kClasses && cached + head[1] <= kCacheBytes) {
      try {
        spare[head[0]].push_back(b);
        cached += head[1];
        return;
      } catch (...) {
      }
    }
    std::free(b);
  }
  void* resize(void* p, std::size_t n) noexcept {
    if (!p) return alloc(n);
    std::size_t head[2];
    std::memcpy(head, static_cast<char*>(p) - kHeader, sizeof head);
    if (n <= head[1]) return p;
    void* q = alloc(n);
    if (!q) return nullptr;
    std::memcpy(q, p, head[1]);
    release(p);
    return q;
  }
  static void* on_malloc(std::size_t n, void* self) { return static_cast<Blocks*>(self)->alloc(n); }
  static void on_free(void* p, void* self) { static_cast<Blocks*>(self)->release(p); }
  static void* on_calloc(std::size_t k, std::size_t n, void* self) {
    if (n != 0 && k > SIZE_MAX / n) return nullptr;
    void* p = static_cast<Blocks*>(self)->alloc(k * n);
    if (p) std::memset(p, 0, k * n);
    return p;
  }
  static void* on_realloc(void* p, std::size_t n, void* self) { return static_cast<Blocks*>(self)->resize(p, n); }
};

H2Session::H2Session(H2Host& host, const H2Limits& limits, const csgi::ConnectionInfo& conn)
    : host_(host), limits_(limits), conn_(conn) {
  // The connection's values, copied once: each request's env points into them and holds them, as it may
  // outlive the connection (APP-4).
  std::string_view* parts[] = {&conn_.server_name, &conn_.server_port, &conn_.remote_addr,
                               &conn_.remote_port, &conn_.url_scheme,  &conn_.script_name};
  auto text = std::make_shared<std::string>();
  for (std::string_view* v : parts) *text += *v;
  std::size_t at = 0;
  for (std::string_view* v : parts) {
    *v = std::string_view(*text).substr(at, v->size());
    at += v->size();
  }
  conn_text_ = std::move(text);
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &H2Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &H2Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &H2Callbacks::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &H2Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Callbacks::on_stream_close);
  nghttp2_option* opt = nullptr;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    throw std::bad_alloc();
  }
  // The peer's flood limits (nghttp2's defaults, stated): queued ACKs, SETTINGS entries, resets per
  // second (CVE-2023-44487), CONTINUATION frames per header block (CVE-2024-27316).
  nghttp2_option_set_max_outbound_ack(opt, 1000);
  nghttp2_option_set_max_settings(opt, 32);
  nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
  nghttp2_option_set_max_continuations(opt, 8);
  nghttp2_option_set_no_closed_streams(opt, 1);
  // The window is given back by hand (nghttp2_session_consume): a request body's at once, a WebSocket
  // stream's as its session reads.
  nghttp2_option_set_no_auto_window_update(opt, 1);
#if defined(__SANITIZE_ADDRESS__)
  nghttp2_mem* mem = nullptr;
#else
  blocks_ = std::make_unique<Blocks>();
  nghttp2_mem blocks = {blocks_.get(), &Blocks::on_malloc, &Blocks::on_free, &Blocks::on_calloc, &Blocks::on_realloc};
  nghttp2_mem* mem = &blocks;
#endif
  int rv = nghttp2_session_server_new3(&ng_, cb, this, opt, mem);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) throw std::bad_alloc();
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.initial_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(std::min<std::size_t>(limits_.max_header_bytes, INT32_MAX))},
  };
  nghttp2_settings_entry connect_protocol{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1};
  std::vector<nghttp2_settings_entry> entries(std::begin(settings), std::end(settings));
  if (limits_.websocket) entries.push_back(connect_protocol);
  nghttp2_submit_settings(ng_, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  std::int32_t conn_window = static_cast<std::int32_t>(std::max<std::uint32_t>(limits_.initial_window, 1u << 20));
  nghttp2_session_set_local_window_size(ng_, NGHTTP2_FLAG_NONE, 0, conn_window);
}

void H2Session::report_cut_short() noexcept {
  for (auto& [id, s] : streams_) {
    if (!s->responded || s->reported) continue;
    s->reported = true;
    try {
      host_.on_response_done(*s->req, s->status, s->sent, false);
    } catch (...) {
    }
  }
}

H2Session::~H2Session() {
  streams_.clear();
  nghttp2_session_del(ng_);
}

// A stream's object, with a new request: a closed stream's (emptied by recycle()) or a new one. On a busy
// connection streams come and go by the hundred, more than malloc's per-size caches hold.
std::unique_ptr<H2Session::Stream> H2Session::new_stream() {
  std::unique_ptr<Stream> s;
  if (spare_streams_.empty()) {
    s = std::make_unique<Stream>();
  } else {
    StreamMap::node_type node = std::move(spare_streams_.back());
    spare_streams_.pop_back();
    s = std::move(node.mapped());
    spare_nodes_.push_back(std::move(node));  // for insert()
  }
  s->req = std::make_shared<H2Request>();
  return s;
}

// A closed stream's object is emptied (its source and writer end as on deletion) and kept for the next
// stream with its node of streams_, up to the streams a connection may have open.
void H2Session::recycle(StreamMap::node_type node) noexcept {
  if (spare_streams_.size() >= limits_.max_streams) return;
  Stream* s = node.mapped().get();
  std::destroy_at(s);
  std::construct_at(s);
  try {
    spare_streams_.push_back(std::move(node));
  } catch (...) {
  }
}

void H2Session::insert(std::unique_ptr<Stream> s) {
  if (spare_nodes_.empty()) {
    streams_[s->id] = std::move(s);
    return;
  }
  StreamMap::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.key() = s->id;
  node.mapped() = std::move(s);
  streams_.insert(std::move(node));
}

// The stream `id`: the one whose request header block is being received (no lookup for each of its
// fields), else nghttp2's.
H2Session::Stream* H2Session::heading(nghttp2_session* ng, std::int32_t id) const {
  if (heading_ && heading_->id == id) return heading_;
  return static_cast<Stream*>(nghttp2_session_get_stream_user_data(ng, id));
}

H2Session::Stream* H2Session::find(std::int32_t id) const {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

bool H2Session::receive(const char* data, std::size_t n) {
  if (fatal_) return false;
  ssize_t r = nghttp2_session_mem_recv(ng_, reinterpret_cast<const std::uint8_t*>(data), n);
  if (r < 0) {
    fatal_ = true;
    std::uint32_t code = calm_ || r == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR;
    if (r != NGHTTP2_ERR_BAD_CLIENT_MAGIC) nghttp2_session_terminate_session(ng_, code);
    ready_.clear();
    return false;
  }
  dispatch();
  return true;
}

bool H2Session::produce(std::string& out, std::size_t max) {
  while (out.size() < max) {
    const std::uint8_t* data = nullptr;
    ssize_t r = nghttp2_session_mem_send(ng_, &data);
    if (r < 0) {
      fatal_ = true;
      return false;
    }
    if (r == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(r));
  }
  return true;
}

bool H2Session::alive() const {
  return nghttp2_session_want_read(ng_) || nghttp2_session_want_write(ng_);
}

bool H2Session::want_write() const { return nghttp2_session_want_write(ng_) != 0; }

bool H2Session::blocked_on_window() const {
  bool conn_closed = nghttp2_session_get_remote_window_size(ng_) <= 0;
  for (const auto& [id, s] : streams_)
    if (s->data_open && !s->deferred && (conn_closed || nghttp2_session_get_stream_remote_window_size(ng_, id) <= 0))
      return true;
  return false;
}

// The head is complete: the env's CGI part, or a refusal.
void H2Session::finish_head(Stream& s, bool end_stream) {
  s.head_done = true;
  Env& env = *s.req->env;
  if (!s.bad_status) {
    if (s.method.size() + s.path.size() + 10 > limits_.max_request_line) {
      s.bad_status = 414;
      s.why = "request line too long";
    } else if (s.content_length && *s.content_length > limits_.max_body_bytes) {
      s.bad_status = 413;
      s.why = "request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes";
    } else if (std::string why; s.content_length && !s.req->body.expect(*s.content_length, limits_.body, why)) {
      host_.log_error(why);
      s.bad_status = 500;
      s.why = "cannot store the request body";
    }
  }
  // RFC 8441: an extended CONNECT for a WebSocket is presented as the HTTP/1.1 GET handshake (EXT-11).
  bool ws = !s.bad_status && s.method == "CONNECT" && !s.protocol.empty();
  if (ws && !iequals(s.protocol, "websocket")) {
    s.bad_status = 501;
    s.why = "unsupported :protocol";
  } else if (ws && end_stream) {
    s.bad_status = 400;
    s.why = "a WebSocket CONNECT ended its stream";
  }
  ws = ws && !s.bad_status;
  if (!s.bad_status) {
    std::string_view host = s.authority.empty() ? s.host : s.authority;
    if (!s.authority.empty() && !s.host.empty() && s.host != s.authority) {
      s.bad_status = 400;
      s.why = "Host differs from :authority";
    } else if (host.empty()) {
      s.bad_status = 400;
      s.why = "missing :authority and Host";
    } else if (!valid_host(host)) {
      s.bad_status = 400;
      s.why = "malformed :authority";
    } else {
      try {
        // The connection's values stay with the request (conn_text_): the env may outlive the
        // connection (a delayed response, APP-4).
        populate_env(env, RequestHead{ws ? std::string_view("GET") : s.method, s.path, "HTTP/2"}, conn_);
        s.req->keep_conn = conn_text_;
        env.set_view(keys::HTTP_HOST, host);
        if (!s.cookie.empty()) env.set_view(keys::HTTP_COOKIE, s.cookie);
        set_server_from_host(env);
        if (ws) {
          // No key travels over HTTP/2: this one is the adapter's, for the handshake's form only.
          env.set("HTTP_UPGRADE", "websocket");
          env.set("HTTP_CONNECTION", "Upgrade");
          env.set("HTTP_SEC_WEBSOCKET_KEY", "dGhlIHNhbXBsZSBub25jZQ==");
        }
      } catch (const HttpError& e) {
        s.bad_status = e.status();
        s.why = "bad request target";
      }
    }
  }
  s.req->head = s.method == "HEAD";
  if (s.bad_status) {
    ready_.push_back(s.id);
    return;
  }
  if (ws && !s.bad_status) {
    // The app runs now: the stream's DATA is the WebSocket's, not a body to wait for.
    s.ws = s.req->websocket = true;
    s.req->origins = limits_.ws_allowed_origins;
    if (awaiting_ > 0) --awaiting_;
    ready_.push_back(s.id);
    return;
  }
  auto expect = env.get(keys::HTTP_EXPECT);
  if (!end_stream && iequals(expect, "100-continue")) {
    nghttp2_nv nv[] = {{(std::uint8_t*)":status", (std::uint8_t*)"100", 7, 3, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, s.id, nullptr, nv, 1, nullptr);
  }
}

void H2Session::request_complete(Stream& s) {
  if (s.request_done) return;
  s.request_done = true;
  if (awaiting_ > 0) --awaiting_;
  if (empty_frames_ > 0) --empty_frames_;
  if (!s.dispatched) ready_.push_back(s.id);
}

// Hands the requests completed by the last receive() to the host (refusals are answered here).
void H2Session::dispatch() {
  std::vector<std::int32_t> ready;
  ready.swap(ready_);
  for (std::int32_t id : ready) {
    Stream* s = find(id);
    if (!s || s->dispatched || s->refused) continue;
    s->dispatched = true;
    if (s->bad_status) {
      refuse(*s, s->bad_status, s->why);
      continue;
    }
    host_.on_request(s->req);
  }
}

void H2Session::refuse(Stream& s, int status, std::string_view why) {
  respond(s.id, Response::error(status, std::string(why)));
}

// Submits the response head; `length` is the Content-Length to state (nullptr: none). With a body a
// data source reads it (read_body).
void H2Session::submit(Stream& s, int status, const Headers& headers, bool has_body, std::uint64_t* length) {
  s.responded = true;
  s.status = status;
  std::vector<nghttp2_nv>& nva = nva_;
  nva.clear();
  char code[4];
  std::to_chars(code, code + 3, status);
  auto add = [&](std::string_view n, std::string_view v) {
    nva.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)v.data(), n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
  };
  add(":status", std::string_view(code, 3));
  // The lower-cased names go into one buffer, sized first so that the views into it stay put.
  std::size_t total = 0;
  for (const Header& h : headers) total += h.name.size();
  names_.clear();
  names_.reserve(total);
  bool has_date = false;
  for (const Header& h : headers) {
    if (iequals(h.name, "content-length") || connection_specific(h.name)) continue;
    if (!is_token(h.name) || has_ctl(h.value, true)) {
      host_.log_error("response header \"" + h.name + "\" has a bad name or control characters; dropped");
      continue;
    }
    std::size_t at = names_.size();
    for (char c : h.name) names_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    std::string_view name(names_.data() + at, h.name.size());
    if (name == "date") has_date = true;
    add(name, h.value);
  }
  std::string_view date = has_date ? std::string_view() : http_date_now();
  if (!has_date) add("date", date);
  char len[24];
  if (length) {
    auto r = std::to_chars(len, len + sizeof len, *length);
    add("content-length", std::string_view(len, r.ptr - len));
  }
  nghttp2_data_provider prd;
  prd.source.ptr = &s;
  prd.read_callback = &H2Callbacks::read_body;
  s.data_open = has_body;
  int rv = nghttp2_submit_response(ng_, s.id, nva.data(), nva.size(), has_body ? &prd : nullptr);
  if (rv != 0) {
    s.data_open = false;
    nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
  }
}

// Submits the stream's sendable trailer fields (ADP-17) as the HEADERS frame that ends it, from the data
// source at the end of the body. False when there is none to send (the last DATA frame ends the stream).
bool H2Session::submit_trailers(Stream& s) {
  auto sendable = [](const Header& h) {
    return !trailer_field_forbidden(h.name) && !connection_specific(h.name) && is_token(h.name) &&
           !has_ctl(h.value, true);
  };
  std::vector<std::string> names;
  std::vector<nghttp2_nv> nva;
  for (const Header& h : s.trailers) {
    if (!sendable(h)) continue;
    names.push_back(to_lower(h.name));
  }
  if (names.empty()) return false;
  std::size_t k = 0;
  for (const Header& h : s.trailers) {
    if (!sendable(h)) continue;
    const std::string& n = names[k++];
    nva.push_back(
        {(std::uint8_t*)n.data(), (std::uint8_t*)h.value.data(), n.size(), h.value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nghttp2_submit_trailer(ng_, s.id, nva.data(), nva.size()) == 0;
}

void H2Session::respond(std::int32_t id, Response res) {
  Stream* sp = find(id);
  if (!sp || sp->responded) return;
  Stream& s = *sp;
  int status = res.status < 200 || res.status > 999 ? 500 : res.status;
  if (status != res.status) host_.log_error("final response status " + std::to_string(res.status) + " is not one; 500 sent");
  bool no_body = status_has_no_body(status) || s.req->head;
  auto declared = [&]() -> std::optional<std::uint64_t> {
    auto v = res.headers.get("content-length");
    return v ? parse_length(*v) : std::nullopt;
  };
  std::uint64_t n = 0;
  bool has_length = !status_has_no_body(status);
  if (auto* str = std::get_if<std::string>(&res.body)) {
    n = str->size();
    if (s.req->head && str->empty()) n = declared().value_or(0);
    if (!no_body && n > 0) {
      s.out = std::move(*str);
      s.view = s.out;
      s.src = Stream::Src::view;
    }
  } else if (auto* b = std::get_if<SharedBytes>(&res.body)) {
    n = *b ? (*b)->size() : 0;
    if (!no_body && n > 0) {
      s.view = **b;
      s.keep = *b;
      s.src = Stream::Src::view;
    }
  } else if (auto* f = std::get_if<FileBody>(&res.body)) {
    std::shared_ptr<FileHandle> fh = f->file;
    if (!fh) {
      int fd = ::open(f->path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        int e = errno;
        return respond(id, Response::error(e == ENOENT ? 404 : e == EACCES ? 403 : 500));
      }
      fh = std::make_shared<FileHandle>(fd);
    }
    struct stat st {};
    if (::fstat(fh->fd(), &st) != 0) return respond(id, Response::error(500));
    std::uint64_t fsize = static_cast<std::uint64_t>(st.st_size);
    std::uint64_t off = std::min(f->offset, fsize);
    n = f->length == FileBody::npos ? fsize - off : std::min(f->length, fsize - off);
    if (!no_body && n > 0) {
      s.file = std::move(fh);
      s.file_off = off;
      s.file_left = n;
      s.src = Stream::Src::file;
    }
  } else if (auto* sp2 = std::get_if<StreamPtr>(&res.body)) {
    StreamPtr stream = std::move(*sp2);
    if (no_body || !stream) {
      if (stream) {
        try {
          stream->close();
        } catch (...) {
        }
      }
      std::optional<std::uint64_t> d = declared();
      std::uint64_t dl = d.value_or(0);
      return submit(s, status, res.headers, false, d && has_length ? &dl : nullptr);
    }
    // ADP-5: the head waits for the first non-empty chunk; an exception before it is a 500.
    std::string first;
    bool more = false;
    try {
      do more = stream->next(first);
      while (more && first.empty());
    } catch (const std::exception& e) {
      host_.log_error(std::string("500: the response stream's first next() threw: ") + e.what());
      try {
        stream->close();
      } catch (...) {
      }
      return respond(id, Response::error(500));
    } catch (...) {
      try {
        stream->close();
      } catch (...) {
      }
      return respond(id, Response::error(500));
    }
    if (!more) {
      std::string error;
      Headers trailers = ended_stream_trailers(*stream, error);
      if (!error.empty()) host_.log_error(error);
      try {
        stream->close();
      } catch (...) {
      }
      if (trailers.empty()) return respond(id, Response{status, std::move(res.headers), std::string()});
      // Trailers-only: an empty data source, whose end submits the trailing HEADERS that ends the stream.
      s.trailers = std::move(trailers);
      s.src = Stream::Src::view;
      std::uint64_t zero = 0;
      return submit(s, status, res.headers, true, &zero);
    }
    s.pull = std::move(stream);
    s.out = std::move(first);
    s.out_pos = 0;
    s.src = Stream::Src::pull;
    s.declared = declared();
    std::uint64_t dl = s.declared.value_or(0);
    return submit(s, status, res.headers, true, s.declared ? &dl : nullptr);
  } else {
    return respond(id, Response::error(500));
  }
  if (!no_body && n > 0 && s.src == Stream::Src::none) s.src = Stream::Src::view;
  if (!s.req->head && !no_body) {
    auto d = declared();
    if (d && *d != n)
      host_.log_error("the response's Content-Length " + std::to_string(*d) + " differs from its body of " +
                      std::to_string(n) + " bytes; the body's length is sent");
  }
  submit(s, status, res.headers, !no_body && n > 0, has_length ? &n : nullptr);
}

void H2Session::start_writer(std::int32_t id, int status, Headers headers, std::shared_ptr<H2WriterState> w) {
  Stream* sp = find(id);
  if (!sp || sp->responded) {
    std::lock_guard lock(w->mu);
    w->dead = true;
    w->cv.notify_all();
    return;
  }
  Stream& s = *sp;
  if (status < 200 || status > 999) status = 500;
  bool no_body = status_has_no_body(status) || s.req->head;
  auto v = headers.get("content-length");
  std::optional<std::uint64_t> d = v ? parse_length(*v) : std::nullopt;
  s.writer = std::move(w);
  if (no_body) {
    {
      std::lock_guard lock(s.writer->mu);
      s.writer->head_only = true;
      s.writer->pending.clear();
    }
    std::uint64_t dl = d.value_or(0);
    return submit(s, status, headers, false, d && !status_has_no_body(status) ? &dl : nullptr);
  }
  s.src = Stream::Src::writer;
  s.declared = d;
  std::uint64_t dl = d.value_or(0);
  submit(s, status, headers, true, d ? &dl : nullptr);
}

void H2Session::pull_writer(std::int32_t id) {
  Stream* s = find(id);
  if (!s || s->src != Stream::Src::writer || !s->deferred) return;
  s->deferred = false;
  nghttp2_session_resume_data(ng_, id);
}

bool H2Session::interim(std::int32_t id, int status, const Headers& headers) {
  Stream* s = find(id);
  if (!s || s->responded || status < 100 || status > 199 || status == 101) return false;
  std::vector<std::string> names;
  std::vector<nghttp2_nv> nva;
  names.reserve(headers.size());
  char code[4];
  std::to_chars(code, code + 3, status);
  nva.push_back({(std::uint8_t*)":status", (std::uint8_t*)code, 7, 3, NGHTTP2_NV_FLAG_NONE});
  for (const Header& h : headers) {
    if (!is_token(h.name) || has_ctl(h.value, true) || connection_specific(h.name)) continue;
    names.push_back(to_lower(h.name));
  }
  std::size_t k = 0;
  for (const Header& h : headers) {
    if (!is_token(h.name) || has_ctl(h.value, true) || connection_specific(h.name)) continue;
    const std::string& n = names[k++];
    nva.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)h.value.data(), n.size(), h.value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, id, nullptr, nva.data(), nva.size(), nullptr) >= 0;
}

void H2Session::fail(std::int32_t id) {
  Stream* s = find(id);
  if (!s) return;
  if (!s->responded) return respond(id, Response::error(500));
  nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
}

bool H2Session::start_websocket(std::int32_t id, const Headers& headers, const std::shared_ptr<H2WsPipe>& pipe) {
  Stream* s = find(id);
  if (!s || s->responded || !s->ws) return false;
  s->pipe = pipe;
  pipe->in = std::move(s->ws_early);
  pipe->in_end = s->ws_early_end;
  s->src = Stream::Src::ws;
  submit(*s, 200, headers, true, nullptr);
  return true;
}

void H2Session::ws_consume(std::int32_t id, std::size_t n) { nghttp2_session_consume(ng_, id, n); }

void H2Session::ws_more(std::int32_t id) {
  Stream* s = find(id);
  if (!s || s->src != Stream::Src::ws || !s->deferred) return;
  s->deferred = false;
  nghttp2_session_resume_data(ng_, id);
}

void H2Session::reset(std::int32_t id) {
  if (find(id)) nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
}

H2Request* H2Session::request(std::int32_t id) const {
  Stream* s = find(id);
  return s ? s->req.get() : nullptr;
}

bool H2Session::upgrade(std::string_view settings, std::unique_ptr<Env> env, bool head) {
  auto s = new_stream();
  s->id = 1;
  s->req->id = 1;
  s->req->env = std::move(env);
  s->req->head = head;
  s->head_done = s->request_done = true;
  if (nghttp2_session_upgrade2(ng_, reinterpret_cast<const std::uint8_t*>(settings.data()), settings.size(), head,
                               s.get()) != 0)
    return false;
  ++open_;
  insert(std::move(s));
  ready_.push_back(1);
  dispatch();
  return true;
}

void H2Session::shutdown() {
  nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

}  // namespace csgi::standalone::detail
