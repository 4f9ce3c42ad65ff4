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
  prd.read_callback = &h2_read_body;
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

// Where the exchange hands a stream's response (drive_response): its head submitted, its body set as the
// stream's data source.
struct H2Session::StreamSink final : ResponseSink {
  H2Session& h;
  Stream& s;
  StreamSink(H2Session& session, Stream& stream) : h(session), s(stream) {}
  void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) override {
    std::uint64_t n = length.value_or(0);
    h.submit(s, status, headers, false, length ? &n : nullptr);
  }
  void text(int status, Headers& headers, std::string& body) override {
    s.out = std::move(body);
    s.view = s.out;
    s.src = Stream::Src::view;
    std::uint64_t n = s.out.size();
    h.submit(s, status, headers, true, &n);
  }
  void bytes(int status, Headers& headers, const SharedBytes& body) override {
    s.view = *body;
    s.keep = body;
    s.src = Stream::Src::view;
    std::uint64_t n = body->size();
    h.submit(s, status, headers, true, &n);
  }
  void file(int status, Headers& headers, FileSpan span) override {
    s.file = std::move(span.file);
    s.file_off = span.offset;
    s.file_left = span.length;
    s.src = Stream::Src::file;
    h.submit(s, status, headers, true, &span.length);
  }
  void stream(int status, Headers& headers, StreamPtr stream, std::string first,
              std::optional<std::uint64_t> declared) override {
    s.pull = std::move(stream);
    s.out = std::move(first);
    s.out_pos = 0;
    s.src = Stream::Src::pull;
    s.declared = declared;
    std::uint64_t n = declared.value_or(0);
    h.submit(s, status, headers, true, declared ? &n : nullptr);
  }
  // Trailers only: an empty data source, whose end submits the trailing HEADERS that ends the stream.
  void trailers_only(int status, Headers& headers, Headers trailers) override {
    s.trailers = std::move(trailers);
    s.src = Stream::Src::view;
    std::uint64_t zero = 0;
    h.submit(s, status, headers, true, &zero);
  }
};

void H2Session::respond(std::int32_t id, Response res) {
  Stream* s = find(id);
  if (!s || s->responded) return;
  StreamSink sink(*this, *s);
  drive_response(res, s->req->head, true, sink, log_);
}

void H2Session::start_writer(std::int32_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  Stream* sp = find(id);
  if (!sp || sp->responded) return w->gone();
  Stream& s = *sp;
  if (status < 200 || status > 999) status = 500;
  bool no_body = status_has_no_body(status) || s.req->head;
  std::optional<std::uint64_t> d = declared_length(headers);
  s.writer = w;
  w->begin(no_body, d);
  std::uint64_t dl = d.value_or(0);
  if (no_body) return submit(s, status, headers, false, d && !status_has_no_body(status) ? &dl : nullptr);
  s.src = Stream::Src::writer;
  s.declared = d;
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

}  // namespace csgi::standalone::detail
