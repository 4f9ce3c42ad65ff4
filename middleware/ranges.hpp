#pragma once
/// Ranges — byte range requests (RFC 9110 §14) on responses of known length; the one place csgi answers
/// Range: the Static app calls `apply_ranges`, any other app gets it by adding this middleware. Adapters
/// never do it (ADP-16).
///
/// A response is rangeable when its status is 200, it has no Content-Range and no `Accept-Ranges: none`,
/// and its body is a FileBody or a complete body (std::string, SharedBytes). A rangeable response gets
/// `Accept-Ranges: bytes` (unless it has an Accept-Ranges). For a GET with a Range header whose If-Range
/// (if any) matches (`if_range_matches`):
/// - one range → 206, `Content-Range: bytes first-last/size`, the body narrowed (a FileBody stays a file:
///   adapters still sendfile it);
/// - several → 206 `multipart/byteranges` (each part with the representation's Content-Type and its
///   Content-Range; a file's parts are read with pread as the body is pulled), Content-Length computed;
/// - none satisfiable → 416 with `Content-Range: bytes */size`, a text body; the other headers (ETag,
///   Last-Modified, Cache-Control, Vary, …) are kept, Content-Encoding is dropped;
/// - a malformed Range, another unit, more than `max_ranges` ranges, or ranges adding up to more than
///   the size → ignored (200, the whole body), as `parse_range` says.
/// HEAD and other methods are never ranged (RFC 9110 §14.2: GET only).
///
/// Reads:  REQUEST_METHOD, HTTP_RANGE, HTTP_IF_RANGE; response ETag, Last-Modified, Content-Type,
///         Accept-Ranges, Content-Range
/// Writes: response status, headers (Accept-Ranges, Content-Range, Content-Length, Content-Type) and body
/// Order:  outside ConditionalGet (its 304 is decided before Range, RFC 9110 §13.2.2: ConditionalGet
///         acts on 200s only, so inside a Ranges it never sees a 206) and outside the app that sets
///         ETag/Last-Modified. A Deflate inside turns bodies into streams, which are not ranged.
#include <cstddef>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct RangesOptions {
  std::size_t max_ranges = 16;  // more ranges than this → the whole body
};

/// The Range request of one request, copied out of the env (a delayed response may answer after the
/// request's env is gone).
struct RangeRequest {
  bool get = false;          // REQUEST_METHOD is GET
  bool head = false;         // REQUEST_METHOD is HEAD
  std::string range;         // the Range header; empty when absent
  bool has_if_range = false;
  std::string if_range;

  static RangeRequest from(const Env& env);
};

/// The If-Range rule (RFC 9110 §13.1.5): an entity tag matches only a strong ETag of the response equal
/// to it octet for octet (a weak tag, on either side, never matches); anything else is taken as an
/// HTTP-date and matches only a Last-Modified that is the same instant. An empty or unparsable value
/// matches nothing.
bool if_range_matches(std::string_view if_range, std::string_view etag, std::string_view last_modified) noexcept;

/// Applies the request's Range to `res` in place as described above. Responses that are not rangeable
/// are left untouched.
void apply_ranges(const RangeRequest& req, Response& res, std::size_t max_ranges = 16);

class Ranges {
public:
  explicit Ranges(App next, RangesOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  RangesOptions o_;
};

}  // namespace csgi::mw
