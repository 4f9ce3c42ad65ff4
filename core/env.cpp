#include "csgi/core/env.hpp"

#include <cstring>

namespace csgi {

void Arena::grow(std::size_t n) {
  while (next_block_ < blocks_.size() && blocks_[next_block_].size < n) ++next_block_;
  if (next_block_ == blocks_.size()) {
    std::size_t size = std::max<std::size_t>(n, blocks_.empty() ? 8192 : blocks_.back().size * 2);
    blocks_.push_back(Block{std::unique_ptr<char[]>(new char[size]), size});
  }
  Block& b = blocks_[next_block_++];
  cur_ = b.data.get();
  end_ = cur_ + b.size;
}

namespace {
// Equal-length keys compared 8 (or 4) bytes at a time, the last chunk overlapping: no call for the short
// keys an env holds.
inline bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
  auto l8 = [](const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto l4 = [](const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8)
      if (l8(a + i) != l8(b + i)) return false;
    return l8(a + n - 8) == l8(b + n - 8);
  }
  if (n >= 4) return l4(a) == l4(b) && l4(a + n - 4) == l4(b + n - 4);
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

inline bool same_key(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size());
}

constexpr std::uint32_t kPositionMask = 0xFF;
}  // namespace

Env::Env() {
  entries_.reserve(48);
  std::memset(index_, 0, sizeof index_);
}

void Env::clear() noexcept {
  source_ = nullptr;
  entries_.clear();
  keep_.clear();
  arena_.reset();
  forget_index();
}

void Env::forget_index() noexcept {
  if (++epoch_ == 0x10000) {
    std::memset(index_, 0, sizeof index_);
    epoch_ = 1;
  }
}

// The index slot holding `key`, or the empty slot where it would go. Only while the index is in use
// (entries_.size() <= kMaxIndexed, so at least half the slots are empty and the probe ends).
[[gnu::always_inline]] inline std::uint32_t* Env::probe(std::string_view key, std::uint64_t hash) const noexcept {
  std::uint32_t tagged = tag_of(epoch_, hash);
  for (std::size_t i = hash >> 56;; i = (i + 1) & (kSlots - 1)) {
    std::uint32_t at = index_[i];
    if (!live(at)) return &index_[i];
    if ((at & ~kPositionMask) == tagged && same_key(entries_[(at & kPositionMask) - 1].key, key)) return &index_[i];
  }
}

void Env::reindex() noexcept {
  forget_index();
  if (entries_.size() > kMaxIndexed) return;
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    std::uint64_t hash = key_hash(entries_[k].key);
    *probe(entries_[k].key, hash) = tag_of(epoch_, hash) | static_cast<std::uint32_t>(k + 1);
  }
}

const Value* Env::find_hashed(std::string_view key, std::uint64_t hash) const noexcept {
  if (entries_.size() <= kMaxIndexed) {
    std::uint32_t at = *probe(key, hash);
    return live(at) ? &entries_[(at & kPositionMask) - 1].value : missed(key);
  }
  for (const Entry& e : entries_)
    if (same_key(e.key, key)) return &e.value;
  return missed(key);
}

void Env::attach(EnvSource& source, std::size_t room) {
  entries_.reserve(entries_.size() + room);
  source_ = &source;
}

void Env::resolve() noexcept {
  if (EnvSource* s = std::exchange(source_, nullptr)) s->fetch_all(*this);
}

// An env with a source attached is not a const object (attach() took it non-const), so adding the
// source's entry from a const lookup is well defined; the source is detached meanwhile, so the lookups
// and insertions below do not come back here.
const Value* Env::from_source(std::string_view key) const noexcept {
  Env& self = const_cast<Env&>(*this);
  EnvSource* s = std::exchange(self.source_, nullptr);
  bool keep = s->fetch(self, key);
  if (!keep) s->fetch_all(self);
  const Value* v = find(key);
  if (keep) self.source_ = s;
  return v;
}

std::pair<Value*, bool> Env::slot_probed(std::string_view key, std::uint64_t hash, bool copy_key) {
  std::size_t n = entries_.size();
  std::uint32_t* at = nullptr;
  if (n <= kMaxIndexed) {
    at = probe(key, hash);
    if (live(*at)) return {&entries_[(*at & kPositionMask) - 1].value, false};
  } else if (Value* v = find(key)) {
    return {v, false};
  }
  std::string_view k = copy_key ? arena_.copy(key) : key;
  Entry& e = entries_.emplace_back();
  e.key = k;
  if (n < kMaxIndexed) *at = tag_of(epoch_, hash) | static_cast<std::uint32_t>(n + 1);
  return {&e.value, true};
}

std::pair<Value*, bool> Env::slot_over_source(std::string_view key, bool copy_key) {
  if (Value* v = find(key)) return {v, false};  // also what the source holds
  return slot_probed(key, key_hash(key), copy_key);
}

bool Env::erase(std::string_view key) noexcept {
  bool held = source_ && source_->forget(key);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (same_key(it->key, key)) {
      entries_.erase(it);
      reindex();
      return true;
    }
  }
  return held;
}

Input& Env::input() const noexcept {
  if (Input* in = object<Input>(keys::input)) return *in;
  thread_local StringInput empty;
  empty.rewind();
  return empty;
}

ErrorStream& Env::errors() const noexcept {
  if (ErrorStream* e = object<ErrorStream>(keys::errors)) return *e;
  return stderr_stream();
}

}  // namespace csgi
