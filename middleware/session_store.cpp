#include "csgi/middleware/session_store.hpp"

#include <openssl/rand.h>

#include <charconv>
#include <stdexcept>

#include "csgi/core/text.hpp"

namespace csgi::mw {

std::string encode_session(const SessionData& data) {
  std::string out;
  for (const auto& [k, v] : data) {
    out += std::to_string(k.size());
    out += ':';
    out += k;
    out += std::to_string(v.size());
    out += ':';
    out += v;
  }
  return out;
}

namespace {
bool take_field(std::string_view& in, std::string& out) {
  std::size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 10) return false;
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(in.data(), in.data() + colon, n);
  if (ec != std::errc() || p != in.data() + colon || n > in.size() - colon - 1) return false;
  out.assign(in.substr(colon + 1, n));
  in.remove_prefix(colon + 1 + n);
  return true;
}
}  // namespace

std::optional<SessionData> decode_session(std::string_view bytes) {
  SessionData data;
  std::string k, v;
  while (!bytes.empty()) {
    if (!take_field(bytes, k) || !take_field(bytes, v)) return std::nullopt;
    data[k] = v;
  }
  return data;
}

std::string random_token() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("RAND_bytes failed");
  std::string out(32, '0');
  for (std::size_t i = 0; i < sizeof b; ++i) {
    out[2 * i] = hex_lower[b[i] >> 4];
    out[2 * i + 1] = hex_lower[b[i] & 0xf];
  }
  return out;
}

std::optional<LoadedSession> MemorySessionStore::load(std::string_view cookie) {
  auto e = sessions_.get(cookie);
  if (!e) return std::nullopt;
  if (e->expires <= std::chrono::system_clock::now()) {
    sessions_.erase(cookie);
    return std::nullopt;
  }
  return LoadedSession{std::string(cookie), std::move(e->data), e->expires};
}

std::string MemorySessionStore::save(const std::string& id, const SessionData& data,
                                     std::chrono::system_clock::time_point expires) {
  sessions_.put(id, Entry{data, expires});
  return id;
}

}  // namespace csgi::mw
