// HTTP/1 response framing as bytes (see framing.hpp).
#include "csgi/adapters/standalone/detail/http1/framing.hpp"

#include "csgi/core/http_date.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace {

enum class FramingField { other, framing, date };

// Whether a response field is one the server writes itself: Content-Length, Transfer-Encoding,
// Connection, Keep-Alive (dropped from the app's), or Date (kept, and then not added). Told apart by
// length first: most fields are compared with nothing.
FramingField framing_field(std::string_view name) noexcept {
  switch (name.size()) {
    case 4: return iequals(name, "date") ? FramingField::date : FramingField::other;
    case 10:
      return iequals(name, "connection") || iequals(name, "keep-alive") ? FramingField::framing : FramingField::other;
    case 14: return iequals(name, "content-length") ? FramingField::framing : FramingField::other;
    case 17: return iequals(name, "transfer-encoding") ? FramingField::framing : FramingField::other;
    default: return FramingField::other;
  }
}

}  // namespace

// The response's fields as field lines, less those the server writes itself (ADP-1) and any with a bad
// name or control characters (reported); `has_date` says whether a Date field went out.
namespace {
void append_fields(std::string& out, const Headers& headers, bool upgrade, bool& has_date, ErrorStream& errors) {
  for (const Header& h : headers) {
    FramingField f = framing_field(h.name);
    if (!upgrade && f == FramingField::framing) continue;
    if (!is_token(h.name) || has_ctl(h.value, true)) {
      errors.write("csgi: response header \"" + h.name + "\" has a bad name or control characters; dropped");
      continue;
    }
    if (f == FramingField::date) has_date = true;
    out.append(h.name);
    out.append(": ");
    out.append(h.value);
    out.append("\r\n");
  }
}
}  // namespace

void append_head(std::string& out, std::string_view status_line, const Headers& headers,
                 std::optional<std::uint64_t> length, bool chunked, Persistence persistence, ErrorStream& errors) {
  out.append(status_line);
  bool has_date = false;
  bool upgrade = persistence == Persistence::upgrade;
  bool framed = length.has_value();
  std::uint64_t n = length.value_or(0);
  const HeaderBlock* b = headers.sealed();
  if (b && b->wire_ok && !upgrade && (!b->content_length || b->content_length == length)) {
    // A list checked when it was sealed: its field lines at once; its Content-Length is the body's.
    out.append(b->wire);
    has_date = b->has_date;
    if (b->content_length) framed = false, chunked = false;
  } else {
    append_fields(out, headers, upgrade, has_date, errors);
  }
  if (!has_date) {
    out.append("Date: ");
    out.append(http_date_now());
    out.append("\r\n");
  }
  if (framed) {
    out.append("Content-Length: ");
    append_uint(out, n);
    out.append("\r\n");
  } else if (chunked) {
    out.append("Transfer-Encoding: chunked\r\n");
  }
  if (persistence == Persistence::close) out.append("Connection: close\r\n");
  else if (persistence == Persistence::keep_http10) out.append("Connection: keep-alive\r\n");
  out.append("\r\n");
}

void append_last_chunk(std::string& out, const Headers& trailers) {
  out.append("0\r\n");
  for (const Header& h : trailers) {
    if (trailer_field_forbidden(h.name) || !is_token(h.name) || has_ctl(h.value, true)) continue;
    out.append(h.name);
    out.append(": ");
    out.append(h.value);
    out.append("\r\n");
  }
  out.append("\r\n");
}

}  // namespace csgi::standalone::detail
