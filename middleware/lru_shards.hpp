#pragma once
/// LruShards<V>: a thread-safe map from string keys to V holding at most `capacity` entries, spread over
/// 16 shards with a mutex each; a shard that is full drops its least recently used entry. The in-process
/// session store and rate limiter keep their entries in it, so their memory stays bounded.
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace csgi::mw {

template <class V>
class LruShards {
public:
  /// Throws std::invalid_argument for a capacity of 0.
  explicit LruShards(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("LruShards: capacity must be at least 1");
    per_shard_ = (capacity + shard_count - 1) / shard_count;
  }

  /// Calls `f(value, inserted)` under the shard's lock on the entry of `key`, inserting a V{} first when
  /// absent (inserted = true); the entry becomes the most recently used. Returns what `f` returns.
  template <class F>
  auto apply(std::string_view key, F&& f) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    bool inserted = it == s.map.end();
    if (inserted) {
      while (s.map.size() >= per_shard_) {
        s.map.erase(s.lru.front());
        s.lru.pop_front();
      }
      s.lru.emplace_back(key);
      it = s.map.emplace(s.lru.back(), Entry{V{}, std::prev(s.lru.end())}).first;
    } else {
      s.lru.splice(s.lru.end(), s.lru, it->second.lru);
    }
    return f(it->second.value, inserted);
  }
  /// A copy of the entry of `key` (made the most recently used), or nullopt.
  std::optional<V> get(std::string_view key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return std::nullopt;
    s.lru.splice(s.lru.end(), s.lru, it->second.lru);
    return it->second.value;
  }
  void put(std::string_view key, V value) {
    apply(key, [&](V& v, bool) { v = std::move(value); });
  }
  void erase(std::string_view key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return;
    auto at = it->second.lru;
    s.map.erase(it);  // first: the map's key views the list's string
    s.lru.erase(at);
  }
  std::size_t size() const {
    std::size_t n = 0;
    for (const Shard& s : shards_) {
      std::lock_guard lock(s.mu);
      n += s.map.size();
    }
    return n;
  }

private:
  static constexpr std::size_t shard_count = 16;
  struct Entry {
    V value;
    std::list<std::string>::iterator lru;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string_view, Entry, Hash, std::equal_to<>> map;  // keys view the list's strings
    std::list<std::string> lru;  // least recently used first
  };
  Shard& shard(std::string_view key) { return shards_[std::hash<std::string_view>{}(key) % shard_count]; }

  std::size_t per_shard_;
  Shard shards_[shard_count];
};

}  // namespace csgi::mw
