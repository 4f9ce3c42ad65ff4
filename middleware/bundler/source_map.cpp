#include "csgi/middleware/bundler/detail/source_map.hpp"

#include <algorithm>
#include <cctype>

#include <boost/beast/core/detail/base64.hpp>
#include <nlohmann/json.hpp>

namespace csgi::mw::bundler {

namespace {

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void put_vlq(std::string& out, std::int64_t v) {
  std::uint64_t u = v < 0 ? (std::uint64_t(-v) << 1) | 1 : std::uint64_t(v) << 1;
  do {
    unsigned digit = u & 31;
    u >>= 5;
    out.push_back(kBase64[digit | (u ? 32 : 0)]);
  } while (u);
}

// UTF-16 code units of UTF-8 text: one per sequence, two for a four-byte one.
std::uint32_t utf16_units(std::string_view s) noexcept {
  std::uint32_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? (c >= 0xF0 ? 2 : 1) : 0;
  return n;
}

// Generated-position tracking for edit_mappings.
class Emitter {
public:
  Emitter(std::string_view src, std::uint32_t first_column) : src_(src), col_(first_column) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < src.size(); ++i)
      if (src[i] == '\n') starts_.push_back(i + 1);
  }

  // A run copied as it is: a mapping at its start, at each line's start and at each word's start (the
  // positions stack traces and devtools name), each to the same place in the source.
  void copy(std::size_t from, std::size_t to) {
    std::size_t at = from;
    while (at < to) {
      auto [line, col] = where(at);
      std::size_t nl = src_.find('\n', at);
      const std::size_t end = nl == std::string_view::npos || nl >= to ? to : nl;
      bool prev_word = false;
      for (std::size_t k = at; k < end; ++k) {
        const unsigned char c = static_cast<unsigned char>(src_[k]);
        const bool word = std::isalnum(c) || c == '_' || c == '$' || c >= 0x80;
        if (k == at || (word && !prev_word)) out.push_back({line_, col_, line, col});
        const std::uint32_t units = (c & 0xC0) == 0x80 ? 0 : c >= 0xF0 ? 2 : 1;
        col_ += units;
        col += units;
        prev_word = word;
      }
      if (end == to) return;
      ++line_;
      col_ = 0;
      at = nl + 1;
    }
  }

  void replace(std::size_t begin, std::string_view text) {
    auto [line, col] = where(begin);
    std::size_t at = 0;
    while (true) {
      if (at < text.size()) out.push_back({line_, col_, line, col});
      std::size_t nl = text.find('\n', at);
      if (nl == std::string_view::npos) {
        col_ += utf16_units(text.substr(at));
        return;
      }
      ++line_;
      col_ = 0;
      ++line;
      col = 0;
      at = nl + 1;
    }
  }

  std::vector<Mapping> out;

private:
  std::pair<std::uint32_t, std::uint32_t> where(std::size_t at) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), at) - 1;
    return {std::uint32_t(it - starts_.begin()), utf16_units(src_.substr(*it, at - *it))};
  }

  std::string_view src_;
  std::vector<std::size_t> starts_;
  std::uint32_t line_ = 0, col_ = 0;
};

}  // namespace

std::vector<Mapping> edit_mappings(std::string_view src, const std::vector<EsmEdit>& edits, std::string_view prefix,
                                   std::uint32_t first_column) {
  Emitter e(src, first_column);
  e.replace(0, prefix);
  std::size_t at = 0;
  for (const auto& ed : edits) {
    if (ed.begin < at) continue;
    if (ed.end > src.size()) break;
    e.copy(at, ed.begin);
    e.replace(ed.begin, ed.text);
    at = ed.end;
  }
  e.copy(at, src.size());
  return std::move(e.out);
}

std::optional<std::vector<Mapping>> decode_mappings(std::string_view s) {
  std::vector<Mapping> out;
  std::int64_t line = 0, gen_col = 0, src_idx = 0, src_line = 0, src_col = 0, name = 0;
  std::size_t i = 0;
  while (i <= s.size()) {
    if (i == s.size()) break;
    if (s[i] == ';') {
      ++line;
      gen_col = 0;
      ++i;
      continue;
    }
    if (s[i] == ',') {
      ++i;
      continue;
    }
    std::int64_t f[5];
    int n = 0;
    while (i < s.size() && s[i] != ',' && s[i] != ';') {
      if (n == 5) return std::nullopt;
      std::uint64_t u = 0;
      int shift = 0;
      while (true) {
        if (i == s.size() || shift > 60) return std::nullopt;
        auto d = kBase64.find(s[i++]);
        if (d == std::string_view::npos) return std::nullopt;
        u |= std::uint64_t(d & 31) << shift;
        shift += 5;
        if (!(d & 32)) break;
      }
      f[n++] = u & 1 ? -std::int64_t(u >> 1) : std::int64_t(u >> 1);
    }
    if (n != 1 && n != 4 && n != 5) return std::nullopt;
    gen_col += f[0];
    if (n == 1) continue;
    src_idx += f[1];
    src_line += f[2];
    src_col += f[3];
    if (n == 5) name += f[4];
    if (gen_col < 0 || src_line < 0 || src_col < 0) return std::nullopt;
    if (src_idx == 0)
      out.push_back({std::uint32_t(line), std::uint32_t(gen_col), std::uint32_t(src_line), std::uint32_t(src_col)});
  }
  return out;
}

std::optional<std::vector<Mapping>> mappings_of(std::string_view map_json) {
  auto j = nlohmann::json::parse(map_json.begin(), map_json.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("mappings") || !j["mappings"].is_string()) return std::nullopt;
  return decode_mappings(j["mappings"].get<std::string>());
}

std::string encode_mappings(const std::vector<Mapping>& m) {
  std::string out;
  std::uint32_t line = 0;
  std::int64_t gen_col = 0, src_line = 0, src_col = 0;
  bool first = true;
  for (const auto& x : m) {
    while (line < x.gen_line) {
      out.push_back(';');
      ++line;
      gen_col = 0;
      first = true;
    }
    if (!first) out.push_back(',');
    first = false;
    put_vlq(out, std::int64_t(x.gen_col) - gen_col);
    put_vlq(out, 0);
    put_vlq(out, std::int64_t(x.src_line) - src_line);
    put_vlq(out, std::int64_t(x.src_col) - src_col);
    gen_col = x.gen_col;
    src_line = x.src_line;
    src_col = x.src_col;
  }
  return out;
}

std::vector<Mapping> compose(const std::vector<Mapping>& outer, const std::vector<Mapping>& inner) {
  std::vector<Mapping> out;
  for (const auto& o : outer) {
    auto it = std::upper_bound(inner.begin(), inner.end(), o, [](const Mapping& a, const Mapping& b) {
      return a.src_line != b.gen_line ? a.src_line < b.gen_line : a.src_col < b.gen_col;
    });
    if (it == inner.begin() || (it - 1)->gen_line != o.src_line) continue;
    --it;
    out.push_back({o.gen_line, o.gen_col, it->src_line, it->src_col});
  }
  return out;
}

std::optional<std::string> take_inline_map(std::string& code) {
  static constexpr std::string_view tag = "//# sourceMappingURL=data:application/json;base64,";
  auto at = code.rfind(tag);
  if (at == std::string::npos || (at > 0 && code[at - 1] != '\n')) return std::nullopt;
  std::string_view b64 = std::string_view(code).substr(at + tag.size());
  while (!b64.empty() && (b64.back() == '\n' || b64.back() == '\r')) b64.remove_suffix(1);
  std::string json(boost::beast::detail::base64::decoded_size(b64.size()), '\0');
  auto [written, read] = boost::beast::detail::base64::decode(json.data(), b64.data(), b64.size());
  if (read < b64.size() && b64[read] != '=') return std::nullopt;
  json.resize(written);
  code.resize(at);
  return json;
}

std::string map_json(const std::vector<Mapping>& m, std::string_view source, std::string_view content) {
  nlohmann::json j = {{"version", 3},
                      {"sources", {std::string(source)}},
                      {"sourcesContent", {std::string(content)}},
                      {"names", nlohmann::json::array()},
                      {"mappings", encode_mappings(m)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace csgi::mw::bundler
