#pragma once
// A response body read out piece by piece to a protocol library's data callback (nghttp2's data provider,
// nghttp3's data reader), for HTTP/2 and HTTP/3 alike: the exchange's sink for a stream fills it
// (complete, file, pull stream, Writer, trailers only) and submits the head through the protocol's
// BodyHead; the protocol's callback reads it out. The rules of such a body are here once: a declared
// Content-Length held to (ADP-13), a pull stream's or Writer's trailers taken at its end (ADP-17), a
// Writer's back-pressure told how much is still unsent, a failure logged before the stream is reset.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"

namespace csgi::standalone::detail {

/// Where a stream body's head goes: the protocol submits the status, the app's headers and the
/// Content-Length given (nullptr: none), with a data callback reading the body when `has_body`.
class BodyHead {
public:
  virtual ~BodyHead() = default;
  virtual void submit(int status, const Headers& headers, bool has_body, const std::uint64_t* length) = 0;
};

/// A BodyHead that calls `f(status, headers, has_body, length)`.
template <class F>
class BodyHeadFn final : public BodyHead {
public:
  explicit BodyHeadFn(F f) : f_(std::move(f)) {}
  void submit(int status, const Headers& headers, bool has_body, const std::uint64_t* length) override {
    f_(status, headers, has_body, length);
  }

private:
  F f_;
};

/// One piece of a body handed whole to a library that keeps a pointer to it until the peer acknowledges
/// it: `data` points into `own` or into the body's complete bytes, which outlive the stream's pieces.
struct BodyPiece {
  std::string own;
  std::string_view data;
};

class StreamBody {
public:
  static constexpr std::size_t later = static_cast<std::size_t>(-1);   // nothing yet: a Writer's
  static constexpr std::size_t failed = static_cast<std::size_t>(-2);  // logged: reset the stream

  StreamBody() = default;
  StreamBody(const StreamBody&) = delete;
  StreamBody& operator=(const StreamBody&) = delete;
  ~StreamBody();

  /// Takes the app's response (not delayed; drive_response): the body kept, the head submitted.
  /// `head_request`: a HEAD request.
  void respond(Response& res, bool head_request, BodyHead& head, ExchangeLog& log);
  /// Takes a delayed response's Writer and its head (on the io thread).
  void start_writer(int status, Headers& headers, bool head_request, const std::shared_ptr<WriterState>& w,
                    BodyHead& head);

  /// Copies up to `max` bytes into `buf`: the count, `later` or `failed`.
  std::size_t read(std::uint8_t* buf, std::size_t max, ExchangeLog& log) noexcept;
  /// The next piece whole (a file's up to `max` bytes): its size, `later` or `failed`. Its bytes count as
  /// a Writer's unsent ones until acked().
  std::size_t read(BodyPiece& piece, std::size_t max, ExchangeLog& log) noexcept;
  /// The peer acknowledged `n` bytes of the pieces read.
  void acked(std::uint64_t n);

  /// The body's last byte was given (or there is no body); its trailers, if any, are in trailers().
  bool ended() const noexcept { return eof_; }
  /// A Writer's body that waited for bytes: true once (the protocol resumes the stream's data).
  bool resume() noexcept;
  bool is_writer() const noexcept { return src_ == Src::writer; }
  /// A Writer's body waiting for bytes (its stream's data deferred).
  bool waiting() const noexcept { return deferred_; }
  /// The trailer fields to send after the body (ADP-17).
  const Headers& trailers() const noexcept { return trailers_; }
  std::uint64_t sent() const noexcept { return sent_; }

private:
  enum class Src { none, view, file, pull, writer };
  struct Sink;
  struct CopyOut;
  struct PieceOut;
  void close_quietly() noexcept;
  template <class Out>
  std::size_t read_with(Out& out, ExchangeLog& log) noexcept;
  template <class Out>
  std::size_t fill(Out& out, ExchangeLog& log);

  Src src_ = Src::none;
  std::shared_ptr<const void> keep_;
  std::string_view view_;
  std::string out_;  // a complete body's own bytes, or the pull stream's or Writer's chunk being read out
  std::size_t pos_ = 0;
  std::shared_ptr<FileHandle> file_;
  std::uint64_t file_off_ = 0, file_left_ = 0;
  StreamPtr pull_;
  std::shared_ptr<WriterState> writer_;
  std::optional<std::uint64_t> declared_;  // a pull stream's or Writer's Content-Length (ADP-13)
  std::uint64_t sent_ = 0, in_flight_ = 0;
  Headers trailers_;
  bool eof_ = false, deferred_ = false;
};

}  // namespace csgi::standalone::detail
