// The csgi side of bench/suites/fastcgi.sh: the same "Hello, World!" as bench/peers/fcgi_hello.c, as an
// app library served by csgi-fcgi.
#include "csgi/core/app_library.hpp"

namespace {
csgi::App make_app(const csgi::AppArgs&) {
  return [](csgi::Env&) { return csgi::Response::text(200, "Hello, World!", "text/plain"); };
}
}  // namespace

CSGI_APP(make_app)
