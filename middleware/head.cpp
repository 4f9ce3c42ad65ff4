#include "csgi/middleware/head.hpp"

#include "csgi/core/on_response.hpp"
#include "csgi/middleware/discard_body.hpp"

namespace csgi::mw {

Head::Head(App next) : next_(std::move(next)) {}

Response Head::operator()(Env& env) {
  if (env.get(keys::REQUEST_METHOD) != "HEAD") return next_(env);
  return on_response(next_(env), [](Response& res) { return discard_body(res); });
}

}  // namespace csgi::mw
