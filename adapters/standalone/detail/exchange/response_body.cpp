// A response's body for every protocol (see response_body.hpp).
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "csgi/adapters/standalone/detail/process/fault.hpp"

namespace csgi::standalone::detail {

std::optional<std::uint64_t> declared_length(const Headers& headers) noexcept {
  if (const HeaderBlock* b = headers.sealed(); b && b->wire_ok) return b->content_length;
  auto cl = headers.get("content-length");
  if (!cl || cl->empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto r = std::from_chars(cl->data(), cl->data() + cl->size(), v);
  if (r.ec != std::errc() || r.ptr != cl->data() + cl->size()) return std::nullopt;
  return v;
}

FileSpan open_file_body(const FileBody& f) {
  FileSpan span;
  span.file = f.file;
  if (!span.file) {
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      span.status = e == ENOENT ? 404 : e == EACCES ? 403 : 500;
      return span;
    }
    span.file = std::make_shared<FileHandle>(fd);
  }
  struct stat st {};
  if (::fstat(span.file->fd(), &st) != 0) {
    span.file.reset();
    span.status = 500;
    return span;
  }
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  span.offset = std::min(f.offset, size);
  span.length = f.length == FileBody::npos ? size - span.offset : std::min(f.length, size - span.offset);
  return span;
}

void check_complete_length(const Headers& headers, std::uint64_t length, ExchangeLog& log) {
  auto d = declared_length(headers);
  if (!d || *d == length) return;
  log.error("the app's Content-Length (" + std::to_string(*d) + ") differs from its body's length (" +
            std::to_string(length) + "); the body's length was sent (ADP-13)");
}

namespace {

void drive_stream(StreamPtr stream, int status, Headers& headers, bool can_trail, ResponseSink& sink,
                  ExchangeLog& log) {
  std::optional<std::uint64_t> declared = declared_length(headers);
  std::string first;
  int got;
  Headers trailers;
  {
    ExchangeLog::FaultScope f = log.fault_scope();
    AppScope scope(f.slot, f.conn);
    got = first_chunk(*stream, first, log);
    // Ended before any byte: with trailers and no declared length, an empty body that carries them.
    if (got == 0 && can_trail && !declared) trailers = stream_trailers(*stream, log);
  }
  if (got > 0) return sink.stream(status, headers, std::move(stream), std::move(first), declared);
  close_stream(*stream, log);
  if (!trailers.empty()) return sink.trailers_only(status, headers, std::move(trailers));
  Response done = got < 0 ? Response::error(500) : Response{status, std::move(headers), std::string()};
  drive_response(done, false, can_trail, sink, log);
}

}  // namespace

void drive_response(Response& res, bool head, bool can_trail, ResponseSink& sink, ExchangeLog& log) {
  int status = res.status;
  if (status < 200 || status > 999) {
    log.error("final response status " + std::to_string(status) + " is not one; 500 sent");
    status = 500;
  }
  bool no_body = status_has_no_body(status);
  bool send = !head && !no_body;
  auto stated = [&](std::uint64_t n) { return no_body ? std::nullopt : std::optional<std::uint64_t>(n); };
  Headers& headers = res.headers;
  if (auto* s = std::get_if<std::string>(&res.body)) {
    std::uint64_t n = s->size();
    // HEAD answered with an empty body: the Content-Length the app gave is the one a GET would have (ADP-2).
    if (head && s->empty()) n = declared_length(headers).value_or(0);
    if (send) check_complete_length(headers, s->size(), log);
    if (!send || s->empty()) return sink.head_only(status, headers, stated(n));
    return sink.text(status, headers, *s);
  }
  if (auto* b = std::get_if<SharedBytes>(&res.body)) {
    std::uint64_t n = *b ? (*b)->size() : 0;
    if (send) check_complete_length(headers, n, log);
    if (!send || n == 0) return sink.head_only(status, headers, stated(n));
    return sink.bytes(status, headers, *b);
  }
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    FileSpan span = open_file_body(*f);
    if (span.status) {
      Response failed = Response::error(span.status);
      return drive_response(failed, head, can_trail, sink, log);
    }
    if (send) check_complete_length(headers, span.length, log);
    if (!send || span.length == 0) return sink.head_only(status, headers, stated(span.length));
    return sink.file(status, headers, std::move(span));
  }
  if (auto* sp = std::get_if<StreamPtr>(&res.body)) {
    StreamPtr stream = std::move(*sp);
    if (!send || !stream) {
      if (stream) close_stream(*stream, log);
      auto d = declared_length(headers);
      return sink.head_only(status, headers, no_body ? std::nullopt : d);
    }
    return drive_stream(std::move(stream), status, headers, can_trail, sink, log);
  }
  // A delayed body where a response was expected (handed to Responder::respond): refused.
  Response refused = Response::error(500);
  drive_response(refused, head, can_trail, sink, log);
}

}  // namespace csgi::standalone::detail
