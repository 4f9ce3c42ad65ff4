#pragma once
/// Deflate — compresses response bodies with gzip or deflate (zlib) when the client accepts it
/// (Plack::Middleware::Deflater, nginx gzip).
///
/// The coding is chosen from Accept-Encoding by q-value (gzip preferred on a tie; `q=0` refuses a coding,
/// `*` covers unlisted ones, no acceptable coding → identity). Compressed: responses with a body whose
/// Content-Type is compressible (is_compressible_type, or `compressible`) and whose known length is at
/// least `min_length`. Skipped: HEAD, 1xx/204/304, 206 and anything with Content-Range, responses that
/// already have a Content-Encoding, `Cache-Control: no-transform`, and requests whose env has
/// `deflate.skip` set true. Complete bodies are compressed in one go; streams and streaming Writers are
/// compressed chunk by chunk with Z_SYNC_FLUSH after each chunk, so every chunk the app sends reaches the
/// client at once (a file body is read as a stream). A compressed response loses Content-Length and
/// Accept-Ranges, gets Content-Encoding, and a strong ETag becomes weak. Every compressible response
/// gets `Vary: Accept-Encoding`, compressed or not.
///
/// Reads:  REQUEST_METHOD, HTTP_ACCEPT_ENCODING, deflate.skip; response Content-Type, Content-Encoding,
///         Content-Range, Cache-Control, ETag, Vary
/// Writes: response body and Content-Encoding, Content-Length, Accept-Ranges, ETag, Vary
/// Order:  inside content_length (which then measures the compressed string body); conditional_get
///         may sit on either side (weak ETags still match If-None-Match).
#include <functional>
#include <string_view>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct DeflateOptions {
  int level = 6;                  // zlib level 1…9
  std::size_t min_length = 256;   // known lengths below this are sent as they are
  bool gzip = true;               // offer gzip
  bool deflate = true;            // offer deflate (zlib format, RFC 9110 §8.4.1.2)
  std::function<bool(std::string_view content_type)> compressible;  // unset: is_compressible_type
};

class Deflate {
public:
  /// Throws std::invalid_argument for a level outside 1…9.
  explicit Deflate(App next, DeflateOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  DeflateOptions o_;
};

}  // namespace csgi::mw
