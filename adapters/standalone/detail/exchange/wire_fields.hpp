#pragma once
// A response's field sections as HTTP/2 and HTTP/3 send them (RFC 9113 §8.2, RFC 9114 §4.2), built into
// the name-value pairs of either library (nghttp2_nv, nghttp3_nv: {name, value, namelen, valuelen,
// flags}): names lower-cased, the fields of an HTTP/1 connection dropped, a field with a bad name or
// control characters dropped (logged for a final head), forbidden trailer fields dropped (ADP-17).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/standalone/detail/exchange/fields.hpp"
#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

enum class FieldSection {
  head,     // a final response's: its Content-Length is the exchange's (add_length), a Date is added
  interim,  // a 1xx response's
  trailers,
};

/// One section's pairs; the views stay valid until the next start() (reuse it to keep its buffers).
template <class Nv>
class WireFields {
public:
  /// Starts a section: with `status` (100..999) its :status pseudo-field first; 0 for trailers.
  void start(int status) {
    nva_.clear();
    names_.clear();
    has_date_ = false;
    if (status <= 0) return;
    std::to_chars(code_, code_ + 3, status);
    add(":status", std::string_view(code_, 3));
  }
  /// The app's fields of the section. `log`: where a dropped bad field of a final head is told.
  void add_all(const Headers& headers, FieldSection section, ExchangeLog* log) {
    std::size_t total = 0;
    for (const Header& h : headers) total += h.name.size();
    names_.reserve(names_.size() + total);  // the views into names_ stay put
    for (const Header& h : headers) {
      if (connection_specific(h.name)) continue;
      if (section == FieldSection::head && iequals(h.name, "content-length")) continue;
      if (section == FieldSection::trailers && trailer_field_forbidden(h.name)) continue;
      if (!is_token(h.name) || has_ctl(h.value, true)) {
        if (section == FieldSection::head && log)
          log->error("response header \"" + h.name + "\" has a bad name or control characters; dropped");
        continue;
      }
      std::size_t at = names_.size();
      for (char c : h.name) names_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
      std::string_view name(names_.data() + at, h.name.size());
      if (name == "date") has_date_ = true;
      add(name, h.value);
    }
  }
  /// A final head's Date, unless the app gave one, and the Content-Length to state (nullptr: none).
  void finish_head(const std::uint64_t* length) {
    if (!has_date_) add("date", http_date_now());
    if (!length) return;
    auto r = std::to_chars(len_, len_ + sizeof len_, *length);
    add("content-length", std::string_view(len_, r.ptr - len_));
  }
  const Nv* data() const noexcept { return nva_.data(); }
  std::size_t size() const noexcept { return nva_.size(); }
  bool empty() const noexcept { return nva_.empty(); }

private:
  void add(std::string_view n, std::string_view v) {
    Nv nv{};
    nv.name = (std::uint8_t*)n.data();
    nv.value = (std::uint8_t*)v.data();
    nv.namelen = n.size();
    nv.valuelen = v.size();
    nva_.push_back(nv);
  }
  std::vector<Nv> nva_;
  std::string names_;
  char code_[4] = {};
  char len_[24] = {};
  bool has_date_ = false;
};

}  // namespace csgi::standalone::detail
