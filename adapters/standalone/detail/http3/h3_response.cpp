// HTTP/3 responses: the exchange's sink for a stream, its body read out to nghttp3, writers and interim
// responses (see h3_conn.hpp).
#include "csgi/adapters/standalone/detail/http3/h3_conn.hpp"

namespace csgi::standalone::detail::h3 {

// Where a stream's body submits its head.
auto H3::head_of(Stream& s) {
  return BodyHeadFn([this, &s](int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
    submit(s, status, headers, has_body, length);
  });
}

void H3::respond(std::int64_t id, Response res) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || s->responded) return;
  auto head = head_of(*s);
  s->body.respond(res, s->req->head, head, log_);
}

void H3::submit(Stream& s, int status, const Headers& headers, bool has_body, const std::uint64_t* length) {
  s.responded = true;
  s.status = status;
  fields_.start(status);
  fields_.add_all(headers, FieldSection::head, &log_);
  fields_.finish_head(length);
  nghttp3_data_reader dr{&H3::read_data};
  if (nghttp3_conn_submit_response(h3_, s.id, fields_.data(), fields_.size(), has_body ? &dr : nullptr) != 0 && q_)
    q_->reset(s.id, NGHTTP3_H3_INTERNAL_ERROR);
  if (q_) q_->wake();
}

bool H3::submit_trailers(Stream& s) {
  fields_.start(0);
  fields_.add_all(s.body.trailers(), FieldSection::trailers, nullptr);
  return !fields_.empty() && nghttp3_conn_submit_trailers(h3_, s.id, fields_.data(), fields_.size()) == 0;
}

nghttp3_ssize H3::read_data(nghttp3_conn*, std::int64_t id, nghttp3_vec* vec, std::size_t veccnt, std::uint32_t* flags,
                            void* p, void*) {
  H3& h = self(p);
  Stream* s = h.find(id);
  if (!s || veccnt == 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  Chunk& c = s->chunks.emplace_back();
  std::size_t n = s->body.read(c.piece, file_chunk, h.log_);
  if (n == 0 || n == StreamBody::later || n == StreamBody::failed) s->chunks.pop_back();
  if (n == StreamBody::later) return NGHTTP3_ERR_WOULDBLOCK;
  if (n == StreamBody::failed) {
    if (h.q_) h.q_->reset(id, NGHTTP3_H3_INTERNAL_ERROR);
    return NGHTTP3_ERR_WOULDBLOCK;
  }
  if (n > 0) {
    vec->base = (std::uint8_t*)c.piece.data.data();
    vec->len = n;
  }
  if (s->body.ended()) {
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    // The trailing HEADERS frame ends the stream instead of the last DATA frame (ADP-17).
    if (h.submit_trailers(*s)) *flags |= NGHTTP3_DATA_FLAG_NO_END_STREAM;
  }
  return n == 0 ? 0 : 1;
}

void H3::on_writer_start(std::int64_t id, int status, Headers headers, const std::shared_ptr<WriterState>& w) {
  Stream* sp = h3_ ? find(id) : nullptr;
  if (!sp || sp->responded) return w->gone();
  auto head = head_of(*sp);
  sp->body.start_writer(status, headers, sp->req->head, w, head);
}

void H3::on_writer_flush(std::int64_t id) {
  Stream* s = h3_ ? find(id) : nullptr;
  if (!s || !s->body.resume()) return;
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
  fields_.start(status);
  fields_.add_all(headers, FieldSection::interim, nullptr);
  bool sent = nghttp3_conn_submit_info(h3_, id, fields_.data(), fields_.size()) == 0;
  if (sent && q_) q_->wake();
  return sent;
}

}  // namespace csgi::standalone::detail::h3
