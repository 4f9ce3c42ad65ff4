#include "csgi/middleware/runtime.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "csgi/core/on_response.hpp"

namespace csgi::mw {

Runtime::Runtime(App next, RuntimeOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Runtime: no next app");
  if (options_.header.empty()) throw std::invalid_argument("Runtime: empty header name");
}

Response Runtime::operator()(Env& env) {
  auto start = std::chrono::steady_clock::now();
  Response res = next_(env);
  return on_response(std::move(res), [start, this](Response& r) -> BodyFilter {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    char buf[32];
    int n = std::snprintf(buf, sizeof buf, "%.6f", took.count());
    r.headers.set(options_.header, std::string(buf, static_cast<std::size_t>(n)));
    return {};
  });
}

}  // namespace csgi::mw
