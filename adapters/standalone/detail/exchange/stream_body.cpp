// A response body read out to a protocol library's data callback (see stream_body.hpp).
#include "csgi/adapters/standalone/detail/exchange/stream_body.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace csgi::standalone::detail {

StreamBody::~StreamBody() {
  if (pull_) close_quietly();
  if (writer_) writer_->gone();
}

void StreamBody::close_quietly() noexcept {
  try {
    pull_->close();
  } catch (...) {
  }
}

// The exchange's sink for the body: the body kept here, the head submitted through the protocol.
struct StreamBody::Sink final : ResponseSink {
  StreamBody& b;
  BodyHead& h;
  Sink(StreamBody& body, BodyHead& head) : b(body), h(head) {}
  void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) override {
    std::uint64_t n = length.value_or(0);
    b.eof_ = true;
    h.submit(status, headers, false, length ? &n : nullptr);
  }
  void text(int status, Headers& headers, std::string& body) override {
    b.out_ = std::move(body);
    b.view_ = b.out_;
    b.src_ = Src::view;
    std::uint64_t n = b.out_.size();
    h.submit(status, headers, true, &n);
  }
  void bytes(int status, Headers& headers, const SharedBytes& body) override {
    b.view_ = *body;
    b.keep_ = body;
    b.src_ = Src::view;
    std::uint64_t n = body->size();
    h.submit(status, headers, true, &n);
  }
  void file(int status, Headers& headers, FileSpan span) override {
    b.file_ = std::move(span.file);
    b.file_off_ = span.offset;
    b.file_left_ = span.length;
    b.src_ = Src::file;
    h.submit(status, headers, true, &span.length);
  }
  void stream(int status, Headers& headers, StreamPtr stream, std::string first,
              std::optional<std::uint64_t> declared) override {
    b.pull_ = std::move(stream);
    b.out_ = std::move(first);
    b.pos_ = 0;
    b.src_ = Src::pull;
    b.declared_ = declared;
    std::uint64_t n = declared.value_or(0);
    h.submit(status, headers, true, declared ? &n : nullptr);
  }
  // Trailers only: an empty body, whose end submits the trailing fields that end the stream.
  void trailers_only(int status, Headers& headers, Headers trailers) override {
    b.trailers_ = std::move(trailers);
    b.src_ = Src::view;
    std::uint64_t zero = 0;
    h.submit(status, headers, true, &zero);
  }
};

void StreamBody::respond(Response& res, bool head_request, BodyHead& head, ExchangeLog& log) {
  Sink sink(*this, head);
  drive_response(res, head_request, true, sink, log);
}

void StreamBody::start_writer(int status, Headers& headers, bool head_request, const std::shared_ptr<WriterState>& w,
                              BodyHead& head) {
  if (status < 200 || status > 999) status = 500;
  bool no_body = status_has_no_body(status) || head_request;
  std::optional<std::uint64_t> d = declared_length(headers);
  writer_ = w;
  w->begin(no_body, d);
  std::uint64_t dl = d.value_or(0);
  if (no_body) {
    eof_ = true;
    return head.submit(status, headers, false, d && !status_has_no_body(status) ? &dl : nullptr);
  }
  src_ = Src::writer;
  declared_ = d;
  head.submit(status, headers, true, d ? &dl : nullptr);
}

// Bytes copied into the library's buffer (HTTP/2): a chunk larger than the buffer is read out over calls.
struct StreamBody::CopyOut {
  std::uint8_t* buf;
  std::size_t max;
  std::size_t take(std::string_view from, std::size_t& pos) {
    std::size_t n = std::min(max, from.size() - pos);
    if (n) std::memcpy(buf, from.data() + pos, n);
    pos += n;
    return n;
  }
  std::size_t take_own(std::string& from, std::size_t& pos) { return take(from, pos); }
  std::size_t read_file(int fd, std::uint64_t off, std::uint64_t left) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(max, left));
    ssize_t r;
    do r = ::pread(fd, buf, want, static_cast<off_t>(off));
    while (r < 0 && errno == EINTR);
    if (r <= 0 && want > 0) throw std::runtime_error(r == 0 ? "the file shrank while it was sent" : std::strerror(errno));
    return static_cast<std::size_t>(r);
  }
};

// Pieces handed whole (HTTP/3): the library points into them until the peer acknowledges them.
struct StreamBody::PieceOut {
  BodyPiece& piece;
  std::size_t max;
  std::uint64_t& in_flight;
  std::size_t give(std::string_view data) {
    piece.data = data;
    in_flight += data.size();
    return data.size();
  }
  std::size_t take(std::string_view from, std::size_t& pos) {
    std::string_view rest = from.substr(pos);
    pos = from.size();
    return give(rest);
  }
  std::size_t take_own(std::string& from, std::size_t& pos) {
    if (pos == 0) piece.own = std::move(from);
    else piece.own = from.substr(pos);
    from.clear();
    pos = 0;
    return give(piece.own);
  }
  std::size_t read_file(int fd, std::uint64_t off, std::uint64_t left) {
    piece.own.resize(static_cast<std::size_t>(std::min<std::uint64_t>(max, left)));
    CopyOut copy{reinterpret_cast<std::uint8_t*>(piece.own.data()), piece.own.size()};
    piece.own.resize(copy.read_file(fd, off, left));
    return give(piece.own);
  }
};

// The next bytes into `out`; `later` when a Writer has none yet. Sets eof_ once nothing is left.
template <class Out>
std::size_t StreamBody::fill(Out& out, ExchangeLog& log) {
  switch (src_) {
    case Src::view: {
      std::size_t n = out.take(view_, pos_);
      if (pos_ == view_.size()) eof_ = true;
      return n;
    }
    case Src::file: {
      std::size_t n = out.read_file(file_->fd(), file_off_, file_left_);
      file_off_ += n;
      file_left_ -= n;
      if (file_left_ == 0) eof_ = true;
      return n;
    }
    case Src::pull: {
      if (pos_ == out_.size() && !eof_) {
        out_.clear();
        pos_ = 0;
        bool more;
        do more = pull_->next(out_);
        while (more && out_.empty());
        if (!more) {
          eof_ = true;
          out_.clear();
          trailers_ = stream_trailers(*pull_, log);
          close_stream(*pull_, log);
          pull_.reset();
        }
      }
      return out.take_own(out_, pos_);
    }
    case Src::writer: {
      WriterState& w = *writer_;
      std::lock_guard lock(w.mu);
      if (pos_ == out_.size()) {
        out_.clear();
        out_.swap(w.pending);
        pos_ = 0;
      }
      if (w.aborted) throw std::runtime_error("a streaming Writer was dropped without close()");
      if (pos_ == out_.size() && w.overrun > 0)
        throw std::length_error(length_error(w.declared, w.overrun, true, "the stream is reset"));
      std::size_t n = out.take_own(out_, pos_);
      if (pos_ == out_.size() && w.pending.empty() && w.closed) {
        eof_ = true;
        trailers_ = std::move(w.trailers);
      }
      w.unsent = out_.size() - pos_ + in_flight_;
      w.cv.notify_all();
      if (n == 0 && !eof_) return later;
      return n;
    }
    case Src::none:
      break;
  }
  eof_ = true;
  return 0;
}

template <class Out>
std::size_t StreamBody::read_with(Out& out, ExchangeLog& log) noexcept {
  try {
    std::size_t n = fill(out, log);
    if (n == later) {
      deferred_ = true;
      return later;
    }
    if (declared_ && sent_ + n > *declared_) {
      log.error(length_error(*declared_, sent_ + n, true, "the stream is reset"));
      return failed;
    }
    sent_ += n;
    if (eof_ && declared_ && sent_ < *declared_) {
      log.error(length_error(*declared_, sent_, false, "the stream is reset"));
      return failed;
    }
    return n;
  } catch (const std::length_error& e) {
    log.error(e.what());
  } catch (const std::exception& e) {
    log.error(std::string("the response body failed: ") + e.what() + "; the stream is reset");
  } catch (...) {
    log.error("the response body failed; the stream is reset");
  }
  return failed;
}

std::size_t StreamBody::read(std::uint8_t* buf, std::size_t max, ExchangeLog& log) noexcept {
  CopyOut out{buf, max};
  return read_with(out, log);
}

std::size_t StreamBody::read(BodyPiece& piece, std::size_t max, ExchangeLog& log) noexcept {
  PieceOut out{piece, max, in_flight_};
  return read_with(out, log);
}

void StreamBody::acked(std::uint64_t n) {
  in_flight_ -= std::min(in_flight_, n);
  if (!writer_) return;
  std::lock_guard lock(writer_->mu);
  writer_->unsent = out_.size() - pos_ + in_flight_;
  writer_->cv.notify_all();
}

bool StreamBody::resume() noexcept {
  if (src_ != Src::writer || !deferred_) return false;
  deferred_ = false;
  return true;
}

}  // namespace csgi::standalone::detail
