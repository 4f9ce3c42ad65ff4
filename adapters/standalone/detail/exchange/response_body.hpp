#pragma once
// A response's body for every protocol: the exchange resolves what the app returned (the status, the
// Content-Length to state, the body's kind) and hands it to the protocol's ResponseSink, which only frames
// and writes. The rules are here once: a final status (ADP-11's 500 otherwise), HEAD's length (ADP-2), the
// real length of a complete body (ADP-13), a file opened (404, 403, 500), a pull stream's first non-empty
// chunk before the head (ADP-5), an empty stream's trailers (ADP-17).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone::detail {

/// The Content-Length the app declared, when it is one well-formed number.
std::optional<std::uint64_t> declared_length(const Headers& headers) noexcept;

/// A file body opened for sending: the handle and the span of it to send, or the status to answer
/// instead (404, 403 or 500: the file cannot be opened or read).
struct FileSpan {
  std::shared_ptr<FileHandle> file;
  std::uint64_t offset = 0, length = 0;
  int status = 0;
};
FileSpan open_file_body(const FileBody& f);

/// A complete body is framed by its real length; a Content-Length the app gave that says otherwise is
/// logged (ADP-13).
void check_complete_length(const Headers& headers, std::uint64_t length, ExchangeLog& log);

/// What a protocol does with a resolved response. Exactly one call per response; each writes the head
/// (status, the app's headers, the Content-Length given) and then the body it names.
class ResponseSink {
public:
  virtual ~ResponseSink() = default;
  /// No body to send (HEAD, a status without one, an empty body). `length`: the Content-Length to state
  /// (none for a status without a body; for a stream, the one the app declared, if any).
  virtual void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) = 0;
  /// A complete, non-empty body (the sink may move from it).
  virtual void text(int status, Headers& headers, std::string& body) = 0;
  virtual void bytes(int status, Headers& headers, const SharedBytes& body) = 0;
  /// A non-empty span of an open file.
  virtual void file(int status, Headers& headers, FileSpan span) = 0;
  /// A pull stream, with its first non-empty chunk, and the Content-Length the app declared (ADP-13).
  virtual void stream(int status, Headers& headers, StreamPtr stream, std::string first,
                      std::optional<std::uint64_t> declared) = 0;
  /// An empty body whose trailer fields go after it (ADP-17).
  virtual void trailers_only(int status, Headers& headers, Headers trailers) = 0;
};

/// Resolves `res` (not delayed) for a request (`head`: a HEAD request; `can_trail`: the protocol can send
/// trailers after an empty body) and hands it to `sink`. App code it calls (a stream's next() and
/// trailers()) runs in the log's fault scope; what goes wrong is logged there.
void drive_response(Response& res, bool head, bool can_trail, ResponseSink& sink, ExchangeLog& log);

}  // namespace csgi::standalone::detail
