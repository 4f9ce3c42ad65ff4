#include "csgi/core/percent.hpp"

#include "csgi/core/http_error.hpp"

namespace csgi {

bool has_bad_escape(std::string_view s) noexcept {
  for (std::size_t i = s.find('%'); i != std::string_view::npos; i = s.find('%', i + 1))
    if (escape_at(s, i) < 0) return true;
  return false;
}

std::size_t percent_decode_to(std::string_view s, char* out, bool plus_as_space) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      int byte = escape_at(s, i);
      if (byte < 0) throw BadRequest("malformed percent-escape at offset " + std::to_string(i));
      out[n++] = static_cast<char>(byte);
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

std::string percent_decode_lenient(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (int byte = escape_at(s, i); byte >= 0) {
      out.push_back(static_cast<char>(byte));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

void percent_encode_to(std::string& out, std::string_view s, const ByteSet& keep, bool keep_escapes) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (keep[c] || (keep_escapes && escape_at(s, i) >= 0)) {
      out.push_back(static_cast<char>(c));
    } else {
      const char esc[3] = {'%', hex_upper[c >> 4], hex_upper[c & 15]};
      out.append(esc, 3);
    }
  }
}

std::string percent_encode(std::string_view s, const ByteSet& keep) {
  std::string out;
  out.reserve(s.size());
  percent_encode_to(out, s, keep);
  return out;
}

}  // namespace csgi
