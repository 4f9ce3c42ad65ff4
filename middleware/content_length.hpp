#pragma once
/// ContentLength — adds Content-Length when the body's size is known without reading it (a string,
/// shared bytes or a file body), like Plack::Middleware::ContentLength. Streams and streaming Writers are
/// left alone (the adapter chunks them).
///
/// Reads:  response status, Content-Length, Transfer-Encoding, body kind/size
/// Writes: response header Content-Length
/// Order:  outside deflate (it measures what it is given), inside head (so HEAD gets the GET length).
#include "csgi/core/app.hpp"

namespace csgi::mw {

class ContentLength {
public:
  explicit ContentLength(App next);
  Response operator()(Env& env);

private:
  App next_;
};

}  // namespace csgi::mw
