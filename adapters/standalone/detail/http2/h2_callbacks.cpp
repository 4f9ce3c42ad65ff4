// nghttp2's callbacks of an HTTP/2 session: request heads and bodies into streams, response bodies out of
// them (see h2_session.hpp).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "csgi/adapters/standalone/detail/http2/h2_stream.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"

namespace csgi::standalone::detail {

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
        if (++h.empty_frames_ > h2::empty_frame_budget) {
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
      h.host_.on_response_done(*s->req, s->status, s->sent(), true);
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
      h.host_.on_response_done(*s.req, s.status, s.sent(), false);
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

  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* src, void* p) {
    H2Session& h = self(p);
    auto* s = static_cast<H2Session::Stream*>(src->ptr);
    std::size_t n = s->pipe ? ws_fill(*s, buf, length) : s->body.read(buf, length, h.log_);
    if (n == StreamBody::later) return NGHTTP2_ERR_DEFERRED;
    if (n == StreamBody::failed) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    h.data_sent_ += n;
    if (s->pipe ? s->ws_eof : s->body.ended()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      s->data_open = false;
      // The trailing HEADERS frame ends the stream instead of this DATA frame.
      if (!s->pipe && h.submit_trailers(*s)) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return static_cast<ssize_t>(n);
  }

  // A WebSocket stream's bytes from its session: up to `length` copied into `buf`, `later` when none.
  static std::size_t ws_fill(H2Session::Stream& s, std::uint8_t* buf, std::size_t length) {
    H2WsPipe& p = *s.pipe;
    std::size_t n = std::min(length, p.unsent());
    if (n) std::memcpy(buf, p.out.data() + p.out_pos, n);
    p.out_pos += n;
    s.ws_sent += n;
    if (n) p.wake_writer();
    if (p.unsent() == 0 && p.out_end) {
      s.ws_eof = true;
      return n;
    }
    if (n == 0) {
      s.ws_deferred = true;
      return StreamBody::later;
    }
    return n;
  }
};


void install_h2_callbacks(nghttp2_session_callbacks* cb) {
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &H2Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &H2Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &H2Callbacks::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &H2Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Callbacks::on_stream_close);
}

ssize_t h2_read_body(nghttp2_session* ng, std::int32_t id, std::uint8_t* buf, std::size_t length,
                     std::uint32_t* flags, nghttp2_data_source* src, void* p) {
  return H2Callbacks::read_body(ng, id, buf, length, flags, src, p);
}

}  // namespace csgi::standalone::detail
