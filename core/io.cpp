#include "csgi/core/io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "csgi/core/http_error.hpp"

namespace csgi {

void Input::rewind() { throw std::logic_error("csgi.input is not seekable (csgix.input.buffered is false)"); }

std::string Input::read(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    std::size_t r = read(out.data() + got, n - got);
    if (r == 0) break;
    got += r;
  }
  out.resize(got);
  return out;
}

std::string Input::read_all(std::size_t limit) {
  std::string out;
  char buf[16384];
  for (;;) {
    std::size_t r = read(buf, sizeof buf);
    if (r == 0) break;
    if (out.size() + r > limit) throw PayloadTooLarge("request body is larger than " + std::to_string(limit) + " bytes");
    out.append(buf, r);
  }
  return out;
}

std::string Input::read_line(std::size_t limit) {
  std::string out;
  char c;
  while (out.size() < limit && read(&c, 1) == 1) {
    out.push_back(c);
    if (c == '\n') break;
  }
  return out;
}

std::size_t StringInput::read(char* buf, std::size_t n) {
  std::size_t k = std::min(n, data_.size() - pos_);
  std::memcpy(buf, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

void FdErrorStream::write(std::string_view message) {
  std::string line(message);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

ErrorStream& stderr_stream() {
  static FdErrorStream s(2);
  return s;
}

}  // namespace csgi
