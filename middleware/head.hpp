#pragma once
/// Head — for HEAD requests, drops the response body and keeps status and headers (Content-Length
/// included), like Plack::Middleware::Head: apps can answer HEAD as if it were GET. A pull stream is
/// closed without being read; a streaming Writer's chunks are discarded.
///
/// Reads:  REQUEST_METHOD
/// Writes: the response body (emptied)
/// Order:  outside content_length (which then measures the GET body, so HEAD reports the GET length);
///         deflate skips HEAD itself, so their relative order does not matter.
#include "csgi/core/app.hpp"

namespace csgi::mw {

class Head {
public:
  explicit Head(App next);
  Response operator()(Env& env);

private:
  App next_;
};

}  // namespace csgi::mw
