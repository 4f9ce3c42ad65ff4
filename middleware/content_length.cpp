#include "csgi/middleware/content_length.hpp"

#include "csgi/core/on_response.hpp"

namespace csgi::mw {

ContentLength::ContentLength(App next) : next_(std::move(next)) {}

Response ContentLength::operator()(Env& env) {
  return on_response(next_(env), [](Response& res) -> BodyFilter {
    if (status_has_no_body(res.status)) return nullptr;
    if (res.headers.has("Content-Length") || res.headers.has("Transfer-Encoding")) return nullptr;
    if (auto n = res.known_length()) res.headers.set("Content-Length", std::to_string(*n));
    return nullptr;
  });
}

}  // namespace csgi::mw
