#pragma once
/// The request environment: a hash from key names to values (spec/csgi.md §Env).
///
/// Any key can be read and written by name (`env["PATH_INFO"]`, `env.set(...)`); values are text,
/// integers, booleans or typed objects (`env.object<T>(key)`), so middleware can attach their own values
/// under their own namespace. Text is kept in a per-request arena and entries in a reused vector: an
/// adapter that reuses one Env per connection builds each request's env with no heap allocation.
///
/// An Env is not copyable and not thread-safe; it lives for one request at a time.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "csgi/core/arena.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"

namespace csgi {

class Value {
public:
  enum class Type : std::uint8_t { text, integer, boolean, object };

  Value() = default;
  static Value of_text(std::string_view t) {
    Value v;
    v.type_ = Type::text;
    v.text_ = t;
    return v;
  }
  static Value of_int(std::int64_t i) {
    Value v;
    v.type_ = Type::integer;
    v.int_ = i;
    return v;
  }
  static Value of_bool(bool b) {
    Value v;
    v.type_ = Type::boolean;
    v.int_ = b;
    return v;
  }
  template <class T>
  static Value of_object(T* p, std::shared_ptr<void> keep = {}) {
    Value v;
    v.type_ = Type::object;
    v.ptr_ = const_cast<void*>(static_cast<const void*>(p));
    v.ti_ = &typeid(T);
    v.keep_ = std::move(keep);
    return v;
  }

  Type type() const noexcept { return type_; }
  bool is_text() const noexcept { return type_ == Type::text; }
  /// The text of a text value; "" for other types.
  std::string_view text() const noexcept { return type_ == Type::text ? text_ : std::string_view{}; }
  std::int64_t integer() const noexcept { return type_ == Type::text ? 0 : int_; }
  /// Booleans and integers by value; text is true unless empty or "0"; objects are true.
  bool truthy() const noexcept {
    switch (type_) {
      case Type::text: return !text_.empty() && text_ != "0";
      case Type::object: return ptr_ != nullptr;
      default: return int_ != 0;
    }
  }
  /// The object if this value holds exactly a T; nullptr otherwise.
  template <class T>
  T* object() const noexcept {
    return type_ == Type::object && *ti_ == typeid(T) ? static_cast<T*>(ptr_) : nullptr;
  }
  const std::type_info* object_type() const noexcept { return type_ == Type::object ? ti_ : nullptr; }

private:
  Type type_ = Type::text;
  std::string_view text_;
  std::int64_t int_ = 0;
  void* ptr_ = nullptr;
  const std::type_info* ti_ = nullptr;
  std::shared_ptr<void> keep_;
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

  /// Empties the env for the next request; keeps its memory.
  void clear() noexcept;

  const Value* find(std::string_view key) const noexcept;
  Value* find(std::string_view key) noexcept;
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// The text of `key`, or `fallback` when it is missing or not text.
  std::string_view get(std::string_view key, std::string_view fallback = {}) const noexcept {
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
  void set(std::string_view key, std::string_view value);
  /// Sets a text value without copying: both views must stay valid until clear() or the env's end.
  void set_view(std::string_view key, std::string_view value);
  void set_int(std::string_view key, std::int64_t value);
  void set_bool(std::string_view key, bool value);
  /// Stores a pointer the env does not own (it must outlive the request).
  template <class T>
  void set_object(std::string_view key, T* object) {
    put(key, Value::of_object(object));
  }
  /// Stores an object the env keeps alive until clear().
  template <class T>
  void set_object(std::string_view key, std::shared_ptr<T> object) {
    T* p = object.get();
    put(key, Value::of_object(p, std::move(object)));
  }
  void set_value(std::string_view key, Value value) { put(key, std::move(value)); }
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

  std::span<const Entry> entries() const noexcept { return entries_; }
  std::size_t size() const noexcept { return entries_.size(); }
  auto begin() const noexcept { return entries_.begin(); }
  auto end() const noexcept { return entries_.end(); }

  /// csgi.input, or an empty input when the adapter set none.
  Input& input() const noexcept;
  /// csgi.errors, or stderr when the adapter set none.
  ErrorStream& errors() const noexcept;

private:
  void put(std::string_view key, Value v);
  Arena arena_;
  std::vector<Entry> entries_;
};

}  // namespace csgi
