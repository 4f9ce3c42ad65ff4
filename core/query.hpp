#pragma once
/// Query strings and application/x-www-form-urlencoded bodies (WHATWG URL §5.1), parsed into Params: an
/// ordered multi-value map (Plack's Hash::MultiValue, Go's url.Values).
///
///   csgi::Params p = csgi::parse_query("a=1&b=x+y&a=%32");
///   p.get("a");      // "1" (the first value)
///   p.get_all("a");  // {"1", "2"}
///
/// Pairs are separated by '&' only (';' is data, as in browsers and Go ≥ 1.17); empty pairs are skipped;
/// a pair without '=' has an empty value; '+' is a space; %XX is decoded once. A '%' not followed by two
/// hex digits throws csgi::BadRequest; more than `max_params` pairs throws csgi::PayloadTooLarge.
///
/// Params keeps every decoded byte in one buffer and the pairs as offsets into it: parsing a query string
/// costs two allocations however many parameters it holds.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace csgi {

struct QueryLimits;

class Params {
public:
  using value_type = std::pair<std::string_view, std::string_view>;

  Params() = default;
  Params(std::initializer_list<value_type> pairs);

  /// Appends one pair (copied); repeats are kept in order.
  void add(std::string_view key, std::string_view value);
  /// Appends every pair of `other`.
  void append(const Params& other);
  /// Replaces every value of `key` with one value (appended at the end when absent).
  void set(std::string_view key, std::string_view value);
  /// Removes every pair named `key`; returns how many.
  std::size_t remove(std::string_view key);
  void clear() noexcept;
  void reserve(std::size_t pairs, std::size_t bytes);

  /// The first value of `key`.
  std::optional<std::string_view> get(std::string_view key) const noexcept;
  /// The first value of `key`, or `fallback`.
  std::string_view value_or(std::string_view key, std::string_view fallback) const noexcept;
  /// Every value of `key`, in order.
  std::vector<std::string_view> get_all(std::string_view key) const;
  bool contains(std::string_view key) const noexcept { return get(key).has_value(); }
  /// The distinct keys, in the order of their first appearance.
  std::vector<std::string_view> keys() const;

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  value_type operator[](std::size_t i) const noexcept { return pair(items_[i]); }

  class iterator {
  public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Params::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;
    iterator() = default;
    iterator(const Params* p, std::size_t i) : p_(p), i_(i) {}
    value_type operator*() const noexcept { return (*p_)[i_]; }
    iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    iterator operator++(int) noexcept { return {p_, i_++}; }
    difference_type operator-(const iterator& o) const noexcept {
      return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_);
    }
    bool operator==(const iterator& o) const noexcept { return i_ == o.i_; }

  private:
    const Params* p_ = nullptr;
    std::size_t i_ = 0;
  };
  iterator begin() const noexcept { return {this, 0}; }
  iterator end() const noexcept { return {this, items_.size()}; }

  bool operator==(const Params& o) const;

private:
  friend void parse_query_into(std::string_view, Params&, const QueryLimits&);
  struct Item {
    std::uint32_t key_off, key_len, value_off, value_len;
  };
  value_type pair(const Item& it) const noexcept {
    return {std::string_view(bytes_.data() + it.key_off, it.key_len),
            std::string_view(bytes_.data() + it.value_off, it.value_len)};
  }
  std::string bytes_;
  std::vector<Item> items_;
};

struct QueryLimits {
  /// More pairs than this throws csgi::PayloadTooLarge (hash-flooding and memory guard).
  std::size_t max_params = 10000;
};

/// Parses a query string or an application/x-www-form-urlencoded body.
Params parse_query(std::string_view s, const QueryLimits& limits = {});
/// Appends the pairs of `s` to `out`.
void parse_query_into(std::string_view s, Params& out, const QueryLimits& limits = {});
/// Encodes `params` as application/x-www-form-urlencoded ("a=1&b=x%20y").
std::string build_query(const Params& params);

}  // namespace csgi
