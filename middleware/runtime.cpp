#include "csgi/middleware/runtime.hpp"

#include <charconv>
#include <chrono>
#include <stdexcept>

#include "csgi/core/on_response.hpp"

namespace csgi::mw {

std::string runtime_text(double seconds) {
  char buf[400];  // the longest double in fixed notation with six decimals fits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, seconds, std::chars_format::fixed, 6);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

Runtime::Runtime(App next, RuntimeOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Runtime: no next app");
  if (options_.header.empty()) throw std::invalid_argument("Runtime: empty header name");
}

Response Runtime::operator()(Env& env) {
  auto start = std::chrono::steady_clock::now();
  Response res = next_(env);
  return on_response(std::move(res), [start, this](Response& r) -> BodyFilter {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    r.headers.set(options_.header, runtime_text(took.count()));
    return nullptr;
  });
}

}  // namespace csgi::mw
