#include "csgi/middleware/discard_body.hpp"

namespace csgi::mw {

BodyFilter discard_body(Response& res) {
  if (auto* s = std::get_if<StreamPtr>(&res.body)) {
    if (!*s) return [](std::string_view, bool) { return std::string(); };  // Writer: chunks come later
    StreamPtr stream = std::move(*s);
    res.body = std::string();
    stream->close();
    return nullptr;
  }
  if (std::holds_alternative<Delayed>(res.body)) return nullptr;  // not reached through on_response
  res.body = std::string();
  return nullptr;
}

}  // namespace csgi::mw
