// The responses of an HTTP/2 session: heads, bodies (complete, file, pull stream, writer), trailers,
// interim responses, WebSocket streams (see h2_session.hpp).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_stream.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"

namespace csgi::standalone::detail {

void H2Session::refuse(Stream& s, int status, std::string_view why) {
  respond(s.id, Response::error(status, std::string(why)));
}

// Submits the response head; `length` is the Content-Length to state (nullptr: none). With a body a
// data source reads it (read_body).
void H2Session::submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
  s.responded = true;
  s.status = status;
  fields_.start(status);
  fields_.add_all(headers, FieldSection::head, &log_);
  fields_.finish_head(length);
  nghttp2_data_provider prd;
  prd.source.ptr = &s;
  prd.read_callback = &h2_read_body;
  s.data_open = has_body;
  int rv = nghttp2_submit_response(ng_, s.id, fields_.data(), fields_.size(), has_body ? &prd : nullptr);
  if (rv != 0) {
    s.data_open = false;
    nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
  }
}

// Submits the stream's sendable trailer fields (ADP-17) as the HEADERS frame that ends it, from the data
// source at the end of the body. False when there is none to send (the last DATA frame ends the stream).
bool H2Session::submit_trailers(Stream& s) {
  fields_.start(0);
  fields_.add_all(s.body.trailers(), FieldSection::trailers, nullptr);
  return !fields_.empty() && nghttp2_submit_trailer(ng_, s.id, fields_.data(), fields_.size()) == 0;
}

// Where a stream's body submits its head.
auto H2Session::head_of(Stream& s) {
  return BodyHeadFn([this, &s](int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
    submit(s, status, headers, has_body, length);
  });
}

void H2Session::respond(std::int32_t id, Response res) {
  Stream* s = find(id);
  if (!s || s->responded) return;
  auto head = head_of(*s);
  s->body.respond(res, s->req->head, head, log_);
}

void H2Session::start_writer(std::int32_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  Stream* sp = find(id);
  if (!sp || sp->responded) return w->gone();
  auto head = head_of(*sp);
  sp->body.start_writer(status, headers, sp->req->head, w, head);
}

void H2Session::pull_writer(std::int32_t id) {
  Stream* s = find(id);
  if (s && s->body.resume()) nghttp2_session_resume_data(ng_, id);
}

bool H2Session::interim(std::int32_t id, int status, const Headers& headers) {
  Stream* s = find(id);
  if (!s || s->responded || status < 100 || status > 199 || status == 101) return false;
  fields_.start(status);
  fields_.add_all(headers, FieldSection::interim, nullptr);
  return nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, id, nullptr, fields_.data(), fields_.size(), nullptr) >= 0;
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
  submit(*s, 200, headers, true, nullptr);
  return true;
}

void H2Session::ws_consume(std::int32_t id, std::size_t n) { nghttp2_session_consume(ng_, id, n); }

void H2Session::ws_more(std::int32_t id) {
  Stream* s = find(id);
  if (!s || !s->pipe || !s->ws_deferred) return;
  s->ws_deferred = false;
  nghttp2_session_resume_data(ng_, id);
}

void H2Session::reset(std::int32_t id) {
  if (find(id)) nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
}

H2Request* H2Session::request(std::int32_t id) const {
  Stream* s = find(id);
  return s ? s->req.get() : nullptr;
}

}  // namespace csgi::standalone::detail
