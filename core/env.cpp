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

Env::Env() {
  entries_.reserve(48);
  std::memset(index_, 0, sizeof index_);
}

void Env::clear() noexcept {
  entries_.clear();
  keep_.clear();
  arena_.reset();
  std::memset(index_, 0, sizeof index_);
}

std::size_t Env::slot_of(std::string_view key) noexcept {
  std::size_t n = key.size();
  if (n == 0) return 0;
  auto at = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(key[i])); };
  std::uint32_t h = (static_cast<std::uint32_t>(n) << 16) ^ (at(n - 1) << 8) ^ at(n / 2) ^ (at(n - 1 - n / 4) << 4);
  h *= 0x9E3779B1u;
  return h >> (32 - 8);
}

// The slot holding `key`, or the empty slot where it would go; nullptr when the index is not in use.
std::uint16_t* Env::probe(std::string_view key) const noexcept {
  if (entries_.size() > kMaxIndexed) return nullptr;
  for (std::size_t i = slot_of(key);; i = (i + 1) & (kSlots - 1)) {
    std::uint16_t at = index_[i];
    if (at == 0) return &index_[i];
    const Entry& e = entries_[at - 1];
    if (e.key.size() == key.size() && std::memcmp(e.key.data(), key.data(), key.size()) == 0) return &index_[i];
  }
}

void Env::reindex() noexcept {
  std::memset(index_, 0, sizeof index_);
  if (entries_.size() > kMaxIndexed) return;
  for (std::size_t k = 0; k < entries_.size(); ++k) *probe(entries_[k].key) = static_cast<std::uint16_t>(k + 1);
}

const Value* Env::find(std::string_view key) const noexcept {
  if (std::uint16_t* slot = probe(key)) return *slot ? &entries_[*slot - 1].value : nullptr;
  for (const Entry& e : entries_)
    if (e.key.size() == key.size() && std::memcmp(e.key.data(), key.data(), key.size()) == 0) return &e.value;
  return nullptr;
}

Value* Env::find(std::string_view key) noexcept {
  return const_cast<Value*>(static_cast<const Env*>(this)->find(key));
}

std::pair<Value*, bool> Env::emplace(std::string_view key, Value value, bool copy_key) {
  std::uint16_t* slot = probe(key);
  if (slot ? *slot != 0 : find(key) != nullptr) return {slot ? &entries_[*slot - 1].value : find(key), false};
  entries_.push_back(Entry{copy_key ? arena_.copy(key) : key, std::move(value)});
  if (slot && entries_.size() <= kMaxIndexed)
    *slot = static_cast<std::uint16_t>(entries_.size());
  else if (entries_.size() == kMaxIndexed + 1)
    std::memset(index_, 0, sizeof index_);
  return {&entries_.back().value, true};
}

void Env::put(std::string_view key, Value v) {
  auto [value, inserted] = emplace(key, v, true);
  if (!inserted) *value = v;
}

void Env::set(std::string_view key, std::string_view value) {
  Value v = Value::of_text(arena_.copy(value));
  auto [slot, inserted] = emplace(key, v, true);
  if (!inserted) *slot = v;
}

void Env::set_view(std::string_view key, std::string_view value) {
  Value v = Value::of_text(value);
  auto [slot, inserted] = emplace(key, v, false);
  if (!inserted) *slot = v;
}

void Env::set_int(std::string_view key, std::int64_t value) { put(key, Value::of_int(value)); }
void Env::set_bool(std::string_view key, bool value) { put(key, Value::of_bool(value)); }

bool Env::erase(std::string_view key) noexcept {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.erase(it);
      reindex();
      return true;
    }
  }
  return false;
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
