#include "csgi/core/query.hpp"

#include <algorithm>
#include <cstring>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"

namespace csgi {

namespace {
constexpr std::size_t max_bytes = 0xffffffffu;

void check_size(std::size_t n) {
  if (n > max_bytes) throw PayloadTooLarge("parameters hold more than 4 GiB");
}
}  // namespace

Params::Params(std::initializer_list<value_type> pairs) {
  for (const auto& [k, v] : pairs) add(k, v);
}

void Params::add(std::string_view key, std::string_view value) {
  check_size(bytes_.size() + key.size() + value.size());
  Item it;
  it.key_off = static_cast<std::uint32_t>(bytes_.size());
  it.key_len = static_cast<std::uint32_t>(key.size());
  bytes_.append(key);
  it.value_off = static_cast<std::uint32_t>(bytes_.size());
  it.value_len = static_cast<std::uint32_t>(value.size());
  bytes_.append(value);
  items_.push_back(it);
}

void Params::append(const Params& other) {
  if (&other == this) {
    Params copy = other;
    append(copy);
    return;
  }
  reserve(items_.size() + other.items_.size(), bytes_.size() + other.bytes_.size());
  for (auto [k, v] : other) add(k, v);
}

void Params::set(std::string_view key, std::string_view value) {
  // `key`/`value` may point into bytes_: copy them before remove() compacts the buffer.
  std::string k(key), v(value);
  remove(k);
  add(k, v);
}

std::size_t Params::remove(std::string_view key) {
  std::size_t before = items_.size();
  if (std::none_of(items_.begin(), items_.end(), [&](const Item& it) { return pair(it).first == key; })) return 0;
  std::string bytes;
  bytes.reserve(bytes_.size());
  std::vector<Item> items;
  items.reserve(items_.size());
  for (const Item& it : items_) {
    auto [k, v] = pair(it);
    if (k == key) continue;
    Item n{static_cast<std::uint32_t>(bytes.size()), it.key_len, 0, it.value_len};
    bytes.append(k);
    n.value_off = static_cast<std::uint32_t>(bytes.size());
    bytes.append(v);
    items.push_back(n);
  }
  bytes_ = std::move(bytes);
  items_ = std::move(items);
  return before - items_.size();
}

void Params::clear() noexcept {
  bytes_.clear();
  items_.clear();
}

void Params::reserve(std::size_t pairs, std::size_t bytes) {
  items_.reserve(pairs);
  bytes_.reserve(bytes);
}

std::optional<std::string_view> Params::get(std::string_view key) const noexcept {
  for (const Item& it : items_) {
    auto [k, v] = pair(it);
    if (k == key) return v;
  }
  return std::nullopt;
}

std::string_view Params::value_or(std::string_view key, std::string_view fallback) const noexcept {
  return get(key).value_or(fallback);
}

std::vector<std::string_view> Params::get_all(std::string_view key) const {
  std::vector<std::string_view> out;
  for (const Item& it : items_) {
    auto [k, v] = pair(it);
    if (k == key) out.push_back(v);
  }
  return out;
}

std::vector<std::string_view> Params::keys() const {
  std::vector<std::string_view> out;
  for (const Item& it : items_) {
    std::string_view k = pair(it).first;
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

bool Params::operator==(const Params& o) const {
  if (size() != o.size()) return false;
  for (std::size_t i = 0; i < size(); ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

void parse_query_into(std::string_view s, Params& out, const QueryLimits& limits) {
  if (s.empty()) return;
  std::size_t pairs = static_cast<std::size_t>(std::count(s.begin(), s.end(), '&')) + 1;
  std::size_t base = out.bytes_.size();
  check_size(base + s.size());
  out.items_.reserve(out.items_.size() + std::min(pairs, limits.max_params + 1));
  // Decoded text is never longer than the input: decode straight into the buffer, then trim it.
  out.bytes_.resize(base + s.size());
  char* buf = out.bytes_.data();
  std::size_t n = base;
  std::size_t added = 0;
  auto decode = [&](std::string_view part) -> std::uint32_t {
    try {
      return static_cast<std::uint32_t>(percent_decode_to(part, buf + n, true));
    } catch (const BadRequest&) {
      out.bytes_.resize(base);
      throw BadRequest("malformed percent-escape in parameter \"" + std::string(part.substr(0, 64)) + "\"");
    }
  };
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t amp = s.find('&', pos);
    if (amp == std::string_view::npos) amp = s.size();
    std::string_view piece = s.substr(pos, amp - pos);
    pos = amp + 1;
    if (piece.empty()) continue;
    if (++added > limits.max_params) {
      out.bytes_.resize(base);
      out.items_.resize(out.items_.size() - (added - 1));
      throw PayloadTooLarge("more than " + std::to_string(limits.max_params) + " parameters");
    }
    std::size_t eq = piece.find('=');
    std::string_view key = piece.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view{} : piece.substr(eq + 1);
    Params::Item it;
    it.key_off = static_cast<std::uint32_t>(n);
    try {
      it.key_len = decode(key);
      n += it.key_len;
      it.value_off = static_cast<std::uint32_t>(n);
      it.value_len = decode(value);
      n += it.value_len;
    } catch (...) {
      out.items_.resize(out.items_.size() - (added - 1));
      throw;
    }
    out.items_.push_back(it);
  }
  out.bytes_.resize(n);
}

Params parse_query(std::string_view s, const QueryLimits& limits) {
  Params p;
  parse_query_into(s, p, limits);
  return p;
}

std::string build_query(const Params& params) {
  std::string out;
  for (auto [k, v] : params) {
    if (!out.empty()) out.push_back('&');
    out += percent_encode(k);
    out.push_back('=');
    out += percent_encode(v);
  }
  return out;
}

}  // namespace csgi
