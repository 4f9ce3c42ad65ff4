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

Env::Env() { entries_.reserve(48); }

void Env::clear() noexcept {
  entries_.clear();
  arena_.reset();
}

const Value* Env::find(std::string_view key) const noexcept {
  for (const Entry& e : entries_)
    if (e.key.size() == key.size() && std::memcmp(e.key.data(), key.data(), key.size()) == 0) return &e.value;
  return nullptr;
}

Value* Env::find(std::string_view key) noexcept {
  return const_cast<Value*>(static_cast<const Env*>(this)->find(key));
}

void Env::put(std::string_view key, Value v) {
  if (Value* existing = find(key)) {
    *existing = std::move(v);
    return;
  }
  entries_.push_back(Entry{arena_.copy(key), std::move(v)});
}

void Env::set(std::string_view key, std::string_view value) {
  if (Value* existing = find(key)) {
    *existing = Value::of_text(arena_.copy(value));
    return;
  }
  std::string_view k = arena_.copy(key);
  entries_.push_back(Entry{k, Value::of_text(arena_.copy(value))});
}

void Env::set_view(std::string_view key, std::string_view value) {
  if (Value* existing = find(key)) {
    *existing = Value::of_text(value);
    return;
  }
  entries_.push_back(Entry{key, Value::of_text(value)});
}

void Env::set_int(std::string_view key, std::int64_t value) { put(key, Value::of_int(value)); }
void Env::set_bool(std::string_view key, bool value) { put(key, Value::of_bool(value)); }

bool Env::erase(std::string_view key) noexcept {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.erase(it);
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
