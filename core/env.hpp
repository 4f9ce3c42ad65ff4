#pragma once
/// The request environment: a hash from key names to values (spec/csgi.md §Env).
///
/// Any key can be read and written by name (`env["PATH_INFO"]`, `env.set(...)`); values are text,
/// integers, booleans or typed objects (`env.object<T>(key)`), so middleware can attach their own values
/// under their own namespace. Text is kept in a per-request arena and entries in a reused vector: an
/// adapter that reuses one Env per connection builds each request's env with no heap allocation.
///
/// An adapter may also attach an EnvSource: entries it holds are then added on first use (a lookup that
/// misses asks the source; iterating adds everything first), so a request costs nothing for the entries
/// its app never reads. Apps see no difference.
///
/// An Env is not copyable and not thread-safe; it lives for one request at a time. While a source is
/// attached even a lookup may add an entry: read such an env from one thread at a time.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "csgi/core/arena.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"

namespace csgi {

/// One env value: text (a view), an integer, a boolean, or a typed object pointer. Trivially copyable
/// (24 bytes); objects the env owns are kept alive by the env, not by the value.
class Value {
public:
  enum class Type : std::uint8_t { text, integer, boolean, object };

  Value() noexcept : type_(Type::text), len_(0), text_("") {}
  static Value of_text(std::string_view t) noexcept {
    Value v;
    v.len_ = t.size();
    v.text_ = t.data();
    return v;
  }
  static Value of_int(std::int64_t i) noexcept {
    Value v;
    v.type_ = Type::integer;
    v.int_ = i;
    return v;
  }
  static Value of_bool(bool b) noexcept {
    Value v = of_int(b);
    v.type_ = Type::boolean;
    return v;
  }
  template <class T>
  static Value of_object(T* p) noexcept {
    Value v;
    v.type_ = Type::object;
    v.obj_.ptr = const_cast<void*>(static_cast<const void*>(p));
    v.obj_.ti = &typeid(T);
    return v;
  }

  Type type() const noexcept { return type_; }
  bool is_text() const noexcept { return type_ == Type::text; }
  /// The text of a text value; "" for other types.
  std::string_view text() const noexcept { return type_ == Type::text ? std::string_view(text_, len_) : std::string_view{}; }
  std::int64_t integer() const noexcept {
    return type_ == Type::integer || type_ == Type::boolean ? int_ : 0;
  }
  /// Booleans and integers by value; text is true unless empty or "0"; objects are true.
  bool truthy() const noexcept {
    switch (type_) {
      case Type::text: return len_ != 0 && !(len_ == 1 && text_[0] == '0');
      case Type::object: return obj_.ptr != nullptr;
      default: return int_ != 0;
    }
  }
  /// The object if this value holds exactly a T; nullptr otherwise.
  template <class T>
  T* object() const noexcept {
    return type_ == Type::object && *obj_.ti == typeid(T) ? static_cast<T*>(obj_.ptr) : nullptr;
  }
  const std::type_info* object_type() const noexcept { return type_ == Type::object ? obj_.ti : nullptr; }

private:
  Type type_;
  std::uint32_t len_;  // text length (text is capped at 4 GiB)
  union {
    const char* text_;
    std::int64_t int_;
    struct {
      void* ptr;
      const std::type_info* ti;
    } obj_;
  };
};

class Env;

/// Entries an adapter lends an Env to be added when first used instead of up front (Env::attach). The env
/// calls these with the source detached, so what they do to the env does not call back; they add entries
/// with env.emplace() (never overwriting one the env has) and must not throw.
class EnvSource {
public:
  /// A lookup of `key` missed: add it when the source has it and was not told to forget it. Returns
  /// false to be resolved now (fetch_all() and detached) instead of being asked again.
  virtual bool fetch(Env& env, std::string_view key) noexcept = 0;
  /// Adds every entry the env lacks and the source was not told to forget.
  virtual void fetch_all(Env& env) noexcept = 0;
  /// `key` was erased: never add it. Returns whether the source held it.
  virtual bool forget(std::string_view key) noexcept = 0;

protected:
  ~EnvSource() = default;
};

class Env {
public:
  struct Entry {
    std::string_view key;
    Value value;
  };

  Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  /// Empties the env for the next request (and detaches its source); keeps its memory.
  void clear() noexcept;

  /// Lends the env `source` until clear() or resolve(). `room`: how many entries it may add at most;
  /// that many are reserved here, so adding them later neither allocates nor moves the entries.
  void attach(EnvSource& source, std::size_t room);
  /// Adds what the attached source still holds and detaches it (iterating the env does this first).
  void resolve() noexcept;

  /// The value under `key`, or nullptr. The pointer is valid until the env is next changed (with a source
  /// attached, also a lookup that adds more entries than attach() made room for).
  [[gnu::always_inline]] const Value* find(std::string_view key) const noexcept { return find_home(key, key_hash(key)); }
  [[gnu::always_inline]] Value* find(std::string_view key) noexcept { return const_cast<Value*>(find_home(key, key_hash(key))); }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// The text of `key`, or `fallback` when it is missing or not text.
  [[gnu::always_inline]] std::string_view get(std::string_view key, std::string_view fallback = {}) const noexcept {
    const Value* v = find(key);
    return v && v->is_text() ? v->text() : fallback;
  }
  bool flag(std::string_view key) const noexcept {
    const Value* v = find(key);
    return v && v->truthy();
  }
  template <class T>
  T* object(std::string_view key) const noexcept {
    const Value* v = find(key);
    return v ? v->template object<T>() : nullptr;
  }

  /// Sets a text value; key and value are copied into the env.
  void set(std::string_view key, std::string_view value) { put(key, Value::of_text(arena_.copy(value)), true); }
  /// Sets a text value without copying: both views must stay valid until clear() or the env's end.
  void set_view(std::string_view key, std::string_view value) { put(key, Value::of_text(value), false); }
  void set_int(std::string_view key, std::int64_t value) { put(key, Value::of_int(value), true); }
  void set_bool(std::string_view key, bool value) { put(key, Value::of_bool(value), true); }
  /// Stores a pointer the env does not own (it must outlive the request).
  template <class T>
  void set_object(std::string_view key, T* object) {
    put(key, Value::of_object(object), true);
  }
  /// Stores an object the env keeps alive until clear() (also when the key is later overwritten).
  template <class T>
  void set_object(std::string_view key, std::shared_ptr<T> object) {
    T* p = object.get();
    keep_.push_back(std::move(object));
    put(key, Value::of_object(p), true);
  }
  void set_value(std::string_view key, Value value) { put(key, value, true); }
  /// The value under `key`, inserting `value` first when the key is absent (one lookup). With
  /// copy_key the key is copied into the env on insertion, else it must outlive the request.
  /// Returns the value and whether it was inserted.
  std::pair<Value*, bool> emplace(std::string_view key, Value value, bool copy_key = true) {
    auto at = source_ ? slot_over_source(key, copy_key) : slot(key, key_hash(key), copy_key);
    if (at.second) *at.first = value;
    return at;
  }
  /// Removes `key`; returns whether it was there.
  bool erase(std::string_view key) noexcept;

  /// Copies bytes into the env's arena: the view lives until clear().
  std::string_view intern(std::string_view s) { return arena_.copy(s); }
  char* allocate(std::size_t n) { return arena_.allocate(n); }

  /// Read access by name; a missing key reads as "". Write access through the proxy copies the text.
  class Ref {
  public:
    Ref(Env& env, std::string_view key) : env_(env), key_(key) {}
    operator std::string_view() const noexcept { return env_.get(key_); }
    std::string_view view() const noexcept { return env_.get(key_); }
    std::string str() const { return std::string(view()); }
    bool exists() const noexcept { return env_.contains(key_); }
    Ref& operator=(std::string_view v) {
      env_.set(key_, v);
      return *this;
    }
    bool operator==(std::string_view v) const noexcept { return view() == v; }

  private:
    Env& env_;
    std::string_view key_;
  };
  Ref operator[](std::string_view key) noexcept { return Ref(*this, key); }
  std::string_view operator[](std::string_view key) const noexcept { return get(key); }

  std::span<const Entry> entries() const noexcept { return resolved(); }
  std::size_t size() const noexcept { return resolved().size(); }
  auto begin() const noexcept { return resolved().begin(); }
  auto end() const noexcept { return resolved().end(); }

  /// csgi.input, or an empty input when the adapter set none.
  Input& input() const noexcept;
  /// csgi.errors, or stderr when the adapter set none.
  ErrorStream& errors() const noexcept;

private:
  // Lookups go through a small open-addressing index (linear probing) over the entries. A slot holds the
  // index's epoch (bits 16-31), 8 bits of the key's hash (bits 8-15) and the entry's position + 1 (bits
  // 0-7); a slot of another epoch is empty, so clear() empties the index by bumping the epoch. The hash
  // reads a key's length and at most 24 of its bytes, and is inline: for a constant key such as
  // keys::PATH_INFO the compiler computes it at the call site. Past kMaxIndexed entries lookups fall
  // back to a linear scan.
  static constexpr std::size_t kSlots = 256;
  static constexpr std::size_t kMaxIndexed = kSlots / 2;

  static std::uint64_t load8(const char* p) noexcept {
    std::uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
  }
  static std::uint32_t load4(const char* p) noexcept {
    std::uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
  }
  static std::uint64_t key_hash(std::string_view key) noexcept {
    const char* p = key.data();
    std::size_t n = key.size();
    std::uint64_t a = 0, b = 0;
    if (n >= 8) {
      a = load8(p);
      b = load8(p + n - 8);
      if (n > 16) a ^= load8(p + 8) << 1;
    } else if (n >= 4) {
      a = load4(p);
      b = load4(p + n - 4);
    } else if (n > 0) {
      auto at = [p](std::size_t i) { return static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])); };
      a = at(0) | at(n / 2) << 8 | at(n - 1) << 16;
    }
    return (((a + n) * 0x9E3779B97F4A7C15u) ^ b) * 0xC2B2AE3D27D4EB4Fu;
  }
  // An index slot's bits above the entry position: the epoch and 8 bits of the key's hash.
  static constexpr std::uint32_t tag_of(std::uint32_t epoch, std::uint64_t hash) noexcept {
    return epoch << 16 | static_cast<std::uint32_t>(hash >> 48 & 0xFF) << 8;
  }
  const Value* find_hashed(std::string_view key, std::uint64_t hash) const noexcept;
  // find_hashed, with the common cases inline: a missing key whose home slot is empty, and a key found in
  // its home slot (for a constant key the comparison is a few loads of known length).
  [[gnu::always_inline]] const Value* find_home(std::string_view key, std::uint64_t hash) const noexcept {
    if (entries_.size() <= kMaxIndexed) {
      std::uint32_t at = index_[hash >> 56];
      if (!live(at)) return missed(key);
      if ((at & ~std::uint32_t{0xFF}) == tag_of(epoch_, hash)) {
        const Entry& e = entries_[(at & 0xFF) - 1];
        if (e.key == key) return &e.value;
      }
    }
    return find_hashed(key, hash);
  }
  // The value under `key` and false (also the attached source's entry), or a new entry's value ("") and
  // true; callers store the value.
  // Inline for the common case, a new key kept by view (not copied) whose home slot is empty, with room
  // in the entries: the vector never grows here, so no reallocation code is inlined at each call.
  std::pair<Value*, bool> slot(std::string_view key, std::uint64_t hash, bool copy_key) {
    std::size_t n = entries_.size();
    std::uint32_t& home = index_[hash >> 56];
    if (copy_key || live(home) || n >= kMaxIndexed || n == entries_.capacity()) return slot_probed(key, hash, copy_key);
    if (entries_.size() == entries_.capacity()) __builtin_unreachable();
    Entry& e = entries_.emplace_back();
    e.key = key;
    home = tag_of(epoch_, hash) | static_cast<std::uint32_t>(n + 1);
    return {&e.value, true};
  }
  std::pair<Value*, bool> slot_probed(std::string_view key, std::uint64_t hash, bool copy_key);
  // A lookup that found nothing: the attached source's entry, if any.
  [[gnu::always_inline]] const Value* missed(std::string_view key) const noexcept {
    return source_ ? from_source(key) : nullptr;
  }
  const Value* from_source(std::string_view key) const noexcept;
  // slot() when a source is attached: its entry counts as present.
  [[gnu::cold, gnu::noinline]] std::pair<Value*, bool> slot_over_source(std::string_view key, bool copy_key);
  const std::vector<Entry>& resolved() const noexcept {
    if (source_) [[unlikely]] const_cast<Env*>(this)->resolve();
    return entries_;
  }
  void put(std::string_view key, Value v, bool copy_key) { *slot(key, key_hash(key), copy_key).first = v; }
  std::uint32_t* probe(std::string_view key, std::uint64_t hash) const noexcept;
  bool live(std::uint32_t slot) const noexcept { return slot >> 16 == epoch_; }
  void forget_index() noexcept;
  void reindex() noexcept;

  Arena arena_;
  std::vector<Entry> entries_;
  EnvSource* source_ = nullptr;
  std::vector<std::shared_ptr<void>> keep_;
  std::uint32_t epoch_ = 1;
  mutable std::uint32_t index_[kSlots];
};

}  // namespace csgi
