#pragma once
/// ConditionalGet — answers 304 Not Modified when the client's cached copy is current (RFC 9110 §13).
///
/// For GET and HEAD requests whose response is 200: If-None-Match (a list of strong or weak tags, or
/// `*`) is compared weakly with the response's ETag; without If-None-Match, If-Modified-Since is compared
/// with Last-Modified (second precision). On a match the status becomes 304, the body is dropped (a pull
/// stream is closed, a streaming Writer's chunks are discarded) and Content-Type, Content-Length,
/// Content-Disposition, Content-Range and Transfer-Encoding are removed; ETag, Last-Modified,
/// Cache-Control, Expires, Vary stay.
///
/// Reads:  REQUEST_METHOD, HTTP_IF_NONE_MATCH, HTTP_IF_MODIFIED_SINCE; response ETag, Last-Modified
/// Writes: response status, headers and body as above
/// Order:  outside anything that sets ETag/Last-Modified; inside deflate is fine either way (deflate
///         weakens the ETag, which still matches weakly).
#include <string_view>

#include "csgi/core/app.hpp"
#include "csgi/core/on_response.hpp"

namespace csgi::mw {

/// True when `etag` matches an entry of the If-None-Match / If-Match style list `list` ("*" matches any
/// tag). `weak` selects weak comparison (W/ prefixes ignored); strong comparison never matches a weak tag.
bool etag_matches(std::string_view list, std::string_view etag, bool weak) noexcept;

/// True when a 200 response with these validators would be answered 304 for this request.
bool not_modified(const Env& env, std::string_view etag, std::string_view last_modified) noexcept;

/// Turns `res` into a 304 in place (status, entity headers, body); returns the filter to use from an
/// on_response callback.
BodyFilter make_not_modified(Response& res);

class ConditionalGet {
public:
  explicit ConditionalGet(App next);
  Response operator()(Env& env);

private:
  App next_;
};

}  // namespace csgi::mw
