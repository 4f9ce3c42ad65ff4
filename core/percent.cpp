#include "csgi/core/percent.hpp"

#include "csgi/core/http_error.hpp"

namespace csgi {

namespace {
int hexval(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool has_bad_escape(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '%' && (i + 2 >= s.size() + 0 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)) return true;
  return false;
}

std::size_t percent_decode_to(std::string_view s, char* out, bool plus_as_space) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 2 < s.size() + 0 ? hexval(s[i + 1]) : -1;
      int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) throw BadRequest("malformed percent-escape at offset " + std::to_string(i));
      out[n++] = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out[n++] = ' ';
    } else {
      out[n++] = c;
    }
  }
  return n;
}

std::string percent_decode(std::string_view s, bool plus_as_space) {
  std::string out(s.size(), '\0');
  out.resize(percent_decode_to(s, out.data(), plus_as_space));
  return out;
}

bool has_dot_segment(std::string_view path) noexcept {
  for (std::size_t i = path.find("/."); i != std::string_view::npos; i = path.find("/.", i + 1)) {
    std::size_t end = i + 2;
    if (end < path.size() && path[end] == '.') ++end;
    if (end == path.size() || path[end] == '/') return true;
  }
  return false;
}

std::size_t remove_dot_segments(char* path, std::size_t n) {
  if (n == 0 || path[0] != '/') return n;
  std::size_t r = 0, w = 0;  // read and write positions; r always sits on a '/'
  while (r < n) {
    std::size_t end = r + 1;
    while (end < n && path[end] != '/') ++end;
    std::string_view seg(path + r + 1, end - r - 1);
    bool last = end == n;
    if (seg == "." || seg == "..") {
      if (seg == "..") {
        if (w == 0) throw BadRequest("'..' in the request path climbs above the root");
        std::size_t slash = w - 1;
        while (path[slash] != '/') --slash;
        if (slash + 1 == w) throw BadRequest("'..' after an empty segment ('//..') in the request path");
        w = slash;
      }
      if (last) path[w++] = '/';
    } else {
      for (std::size_t i = r; i < end; ++i) path[w++] = path[i];
    }
    r = end;
  }
  return w;
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace csgi
