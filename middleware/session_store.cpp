#include "csgi/middleware/session_store.hpp"

#include <openssl/rand.h>

#include <charconv>
#include <functional>
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

MemorySessionStore::MemorySessionStore(std::size_t max_sessions) {
  if (max_sessions == 0) throw std::invalid_argument("MemorySessionStore: max_sessions must be at least 1");
  per_shard_ = (max_sessions + std::size(shards_) - 1) / std::size(shards_);
}

MemorySessionStore::Shard& MemorySessionStore::shard(std::string_view id) {
  return shards_[std::hash<std::string_view>{}(id) % std::size(shards_)];
}

std::optional<LoadedSession> MemorySessionStore::load(std::string_view cookie) {
  Shard& s = shard(cookie);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(std::string(cookie));
  if (it == s.map.end()) return std::nullopt;
  if (it->second.expires <= std::chrono::system_clock::now()) {
    s.lru.erase(it->second.lru);
    s.map.erase(it);
    return std::nullopt;
  }
  s.lru.splice(s.lru.end(), s.lru, it->second.lru);
  return LoadedSession{it->first, it->second.data, it->second.expires};
}

std::string MemorySessionStore::save(const std::string& id, const SessionData& data,
                                     std::chrono::system_clock::time_point expires) {
  Shard& s = shard(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  if (it != s.map.end()) {
    it->second.data = data;
    it->second.expires = expires;
    s.lru.splice(s.lru.end(), s.lru, it->second.lru);
    return id;
  }
  while (s.map.size() >= per_shard_) {
    s.map.erase(s.lru.front());
    s.lru.pop_front();
  }
  s.lru.push_back(id);
  s.map.emplace(id, Entry{data, expires, std::prev(s.lru.end())});
  return id;
}

void MemorySessionStore::erase(const std::string& id) {
  Shard& s = shard(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  if (it == s.map.end()) return;
  s.lru.erase(it->second.lru);
  s.map.erase(it);
}

std::size_t MemorySessionStore::size() const {
  std::size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.map.size();
  }
  return n;
}

}  // namespace csgi::mw
