#include "csgi/middleware/request_id.hpp"

#include <random>
#include <stdexcept>

#include "csgi/core/on_response.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

bool RequestId::valid(std::string_view id) noexcept {
  if (id.empty() || id.size() > 200) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.' || c == ':' || c == '+' || c == '/' || c == '=' || c == '@';
    if (!ok) return false;
  }
  return true;
}

std::string RequestId::random_id() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  std::string out(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t v = rng();
    for (int i = 0; i < 16; ++i) out[static_cast<std::size_t>(half * 16 + i)] = hex_lower[(v >> (i * 4)) & 0xf];
  }
  return out;
}

RequestId::RequestId(App next, RequestIdOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("RequestId: no next app");
  if (options_.header.empty()) throw std::invalid_argument("RequestId: empty header name");
  env_header_ = "HTTP_";
  for (char c : options_.header) {
    if (c == '-') {
      env_header_ += '_';
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      env_header_ += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    } else {
      throw std::invalid_argument("RequestId: bad header name: " + options_.header);
    }
  }
  if (!options_.generate) options_.generate = &RequestId::random_id;
}

Response RequestId::operator()(Env& env) {
  std::string id;
  if (options_.trust_incoming) {
    std::string_view in = env.get(env_header_);
    if (valid(in)) id = in;
  }
  if (id.empty()) {
    id = options_.generate();
    if (!valid(id)) id = random_id();
  }
  env.set(env_key, id);
  env.set(env_header_, id);
  Response res = next_(env);
  return on_response(std::move(res), [this, id = std::move(id)](Response& r) -> BodyFilter {
    r.headers.set(options_.header, id);
    return {};
  });
}

}  // namespace csgi::mw
