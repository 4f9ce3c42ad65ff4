// HTTP/3 responses: the exchange's sink for a stream, its body read out to nghttp3, writers and interim
// responses (see h3_conn.hpp).
#include "csgi/adapters/standalone/detail/http3/h3_conn.hpp"

namespace csgi::standalone::detail::h3 {

// Where the exchange hands a stream's response (drive_response): its head submitted, its body kept as
// what read_data gives nghttp3.
struct H3::Sink final : ResponseSink {
  H3& h;
  Stream& s;
  Sink(H3& c, Stream& st) : h(c), s(st) {}
  void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) override {
    std::uint64_t n = length.value_or(0);
    s.eof = true;
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
    s.src = Stream::Src::pull;
    s.declared = declared;
    std::uint64_t n = declared.value_or(0);
    h.submit(s, status, headers, true, declared ? &n : nullptr);
  }
  void trailers_only(int status, Headers& headers, Headers trailers) override {
    s.trailers = std::move(trailers);
    s.src = Stream::Src::view;
    std::uint64_t zero = 0;
    h.submit(s, status, headers, true, &zero);
  }
};

void H3::respond(std::int64_t id, Response res) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->responded) return;
  Sink sink(*this, *s);
  drive_response(res, s->req->head, true, sink, log_);
}

void H3::submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
  s.responded = true;
  s.status = status;
  std::vector<nghttp3_nv> nva;
  std::vector<std::string> names;
  names.reserve(headers.size());
  char code[4];
  std::to_chars(code, code + 3, status);
  auto add = [&](std::string_view n, std::string_view v) {
    nva.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)v.data(), n.size(), v.size(), NGHTTP3_NV_FLAG_NONE});
  };
  add(":status", std::string_view(code, 3));
  bool has_date = false;
  for (const Header& hd : headers) {
    if (iequals(hd.name, "content-length") || connection_specific(hd.name)) continue;
    if (!is_token(hd.name) || has_ctl(hd.value, true)) {
      log_error("response header \"" + hd.name + "\" has a bad name or control characters; dropped");
      continue;
    }
    names.push_back(to_lower(hd.name));
  }
  std::size_t k = 0;
  for (const Header& hd : headers) {
    if (iequals(hd.name, "content-length") || connection_specific(hd.name)) continue;
    if (!is_token(hd.name) || has_ctl(hd.value, true)) continue;
    const std::string& n = names[k++];
    if (n == "date") has_date = true;
    add(n, hd.value);
  }
  std::string_view date = has_date ? std::string_view() : http_date_now();
  if (!has_date) add("date", date);
  char len[24];
  if (length) {
    auto r = std::to_chars(len, len + sizeof len, *length);
    add("content-length", std::string_view(len, r.ptr - len));
  }
  nghttp3_data_reader dr{&H3::read_data};
  if (nghttp3_conn_submit_response(h3_, s.id, nva.data(), nva.size(), has_body ? &dr : nullptr) != 0 && q_)
    q_->reset(s.id, NGHTTP3_H3_INTERNAL_ERROR);
  if (q_) q_->wake();
}

bool H3::submit_trailers(Stream& s) {
  std::vector<std::string> names;
  std::vector<const Header*> fields;
  for (const Header& hd : s.trailers) {
    if (trailer_field_forbidden(hd.name) || connection_specific(hd.name) || !is_token(hd.name) ||
        has_ctl(hd.value, true))
      continue;
    names.push_back(to_lower(hd.name));
    fields.push_back(&hd);
  }
  if (names.empty()) return false;
  std::vector<nghttp3_nv> nva;
  for (std::size_t i = 0; i < names.size(); ++i)
    nva.push_back({(std::uint8_t*)names[i].data(), (std::uint8_t*)fields[i]->value.data(), names[i].size(),
                   fields[i]->value.size(), NGHTTP3_NV_FLAG_NONE});
  return nghttp3_conn_submit_trailers(h3_, s.id, nva.data(), nva.size()) == 0;
}

// The next piece of a stream's body into `v` (kept in its chunks until acknowledged): its size, or -1
// when none is there yet (a writer's).
std::size_t H3::fill(Stream& s, nghttp3_vec* v) {
  auto give = [&](std::string own, std::string_view data) {
    Chunk& back = s.chunks.emplace_back();
    back.own = std::move(own);
    back.data = back.own.empty() ? data : std::string_view(back.own);
    v->base = (std::uint8_t*)back.data.data();
    v->len = back.data.size();
    s.inflight += back.data.size();
    return back.data.size();
  };
  switch (s.src) {
    case Stream::Src::view:
      s.eof = true;
      if (s.view_given || s.view.empty()) return 0;
      s.view_given = true;
      return give({}, s.view);
    case Stream::Src::file: {
      std::string buf(static_cast<std::size_t>(std::min<std::uint64_t>(file_chunk, s.file_left)), '\0');
      ssize_t r;
      do r = ::pread(s.file->fd(), buf.data(), buf.size(), static_cast<off_t>(s.file_off));
      while (r < 0 && errno == EINTR);
      if (r <= 0 && !buf.empty())
        throw std::runtime_error(r == 0 ? "the file shrank while it was sent" : std::strerror(errno));
      buf.resize(static_cast<std::size_t>(r));
      s.file_off += buf.size();
      s.file_left -= buf.size();
      if (s.file_left == 0) s.eof = true;
      return buf.empty() ? 0 : give(std::move(buf), {});
    }
    case Stream::Src::pull: {
      std::string chunk = std::move(s.out);
      s.out.clear();
      if (chunk.empty()) {
        bool more;
        do more = s.pull->next(chunk);
        while (more && chunk.empty());
        if (!more) {
          s.eof = true;
          s.trailers = stream_trailers(*s.pull, log_);
          close_stream(*s.pull, log_);
          s.pull.reset();
          return 0;
        }
      }
      return give(std::move(chunk), {});
    }
    case Stream::Src::writer: {
      std::lock_guard lock(s.writer->mu);
      std::string chunk;
      chunk.swap(s.writer->pending);
      if (s.writer->aborted) throw std::runtime_error("a streaming Writer was dropped without close()");
      if (chunk.empty() && s.writer->overrun > 0)
        throw std::length_error(length_error(s.writer->declared, s.writer->overrun, true, "the stream is reset"));
      if (chunk.empty() && s.writer->closed) {
        s.eof = true;
        s.trailers = std::move(s.writer->trailers);
        return 0;
      }
      if (chunk.empty()) {
        s.deferred = true;
        return static_cast<std::size_t>(-1);
      }
      std::size_t n = give(std::move(chunk), {});
      s.writer->unsent = s.inflight;
      s.writer->cv.notify_all();
      return n;
    }
    case Stream::Src::none:
      break;
  }
  s.eof = true;
  return 0;
}

nghttp3_ssize H3::read_data(nghttp3_conn*, std::int64_t id, nghttp3_vec* vec, std::size_t veccnt, std::uint32_t* flags,
                            void* p, void*) {
  H3& h = self(p);
  Stream* s = h.find(id);
  if (!s || veccnt == 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  try {
    std::size_t n = h.fill(*s, vec);
    if (n == static_cast<std::size_t>(-1)) return NGHTTP3_ERR_WOULDBLOCK;
    if (s->declared && s->sent + n > *s->declared) {
      h.log_error(length_error(*s->declared, s->sent + n, true, "the stream is reset"));
      return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    s->sent += n;
    if (s->eof) {
      if (s->declared && s->sent < *s->declared) {
        h.log_error(length_error(*s->declared, s->sent, false, "the stream is reset"));
        return NGHTTP3_ERR_CALLBACK_FAILURE;
      }
      *flags |= NGHTTP3_DATA_FLAG_EOF;
      // The trailing HEADERS frame ends the stream instead of the last DATA frame (ADP-17).
      if (h.submit_trailers(*s)) *flags |= NGHTTP3_DATA_FLAG_NO_END_STREAM;
    }
    return n == 0 ? 0 : 1;
  } catch (const std::length_error& e) {
    h.log_error(e.what());
  } catch (const std::exception& e) {
    h.log_error(std::string("the response body failed: ") + e.what() + "; the stream is reset");
  } catch (...) {
    h.log_error("the response body failed; the stream is reset");
  }
  if (h.q_) h.q_->reset(id, NGHTTP3_H3_INTERNAL_ERROR);
  return NGHTTP3_ERR_WOULDBLOCK;
}

void H3::on_writer_start(std::int64_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  Stream* sp = h3_ ? find(id) : nullptr;
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

void H3::on_writer_flush(std::int64_t id) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->src != Stream::Src::writer || !s->deferred) return;
  s->deferred = false;
  nghttp3_conn_resume_stream(h3_, id);
  if (q_) q_->wake();
}

void H3::on_responder_dropped(std::int64_t id) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s) return;
  log_error("500: the delayed response's Responder was dropped without an answer (ADP-11)");
  if (!s->responded) return respond(id, Response::error(500));
  if (q_) q_->reset(id, NGHTTP3_H3_INTERNAL_ERROR);
}

bool H3::interim(std::int64_t id, int status, const Headers& headers) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->responded || status < 100 || status > 199 || status == 101) return false;
  std::vector<std::string> names;
  std::vector<const Header*> fields;
  for (const Header& hd : headers) {
    if (!is_token(hd.name) || has_ctl(hd.value, true) || connection_specific(hd.name)) continue;
    names.push_back(to_lower(hd.name));
    fields.push_back(&hd);
  }
  char code[4];
  std::to_chars(code, code + 3, status);
  std::vector<nghttp3_nv> nva;
  nva.push_back({(std::uint8_t*)":status", (std::uint8_t*)code, 7, 3, NGHTTP3_NV_FLAG_NONE});
  for (std::size_t i = 0; i < names.size(); ++i)
    nva.push_back({(std::uint8_t*)names[i].data(), (std::uint8_t*)fields[i]->value.data(), names[i].size(),
                   fields[i]->value.size(), NGHTTP3_NV_FLAG_NONE});
  bool sent = nghttp3_conn_submit_info(h3_, id, nva.data(), nva.size()) == 0;
  if (sent && q_) q_->wake();
  return sent;
}

}  // namespace csgi::standalone::detail::h3
