// An HTTP/2 connection as an nghttp2 server session: request streams to envs, responses to frames (see
// h2_session.hpp).
#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_stream.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <sys/stat.h>
#include <fcntl.h>

#include "csgi/adapters/standalone/detail/http2/h2_websocket.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {



H2Request::~H2Request() {
  if (env && cleanup.size() > 0) cleanup.run(*env);
}

bool H2Request::take(websocket::Handler handler) {
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
  install_h2_callbacks(cb);
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
      host_.on_response_done(*s->req, s->status, s->sent(), false);
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
    if (s->data_open && !s->body.waiting() && !s->ws_deferred && (conn_closed || nghttp2_session_get_stream_remote_window_size(ng_, id) <= 0))
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
