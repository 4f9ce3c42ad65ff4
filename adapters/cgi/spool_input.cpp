#include "csgi/adapters/cgi/spool_input.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "csgi/core/http_error.hpp"

namespace csgi::cgi {

namespace {
int open_spool_file() {
  const char* dir = std::getenv("TMPDIR");
  std::string d = dir && *dir ? dir : "/tmp";
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string tmpl = d + "/csgi-body-XXXXXX";
  fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot create a spool file in " + d);
  ::unlink(tmpl.c_str());
  return fd;
}
}  // namespace

SpoolInput::SpoolInput(Source source, std::uint64_t max_bytes, std::size_t memory_limit)
    : source_(std::move(source)), max_bytes_(max_bytes), memory_limit_(memory_limit) {}

SpoolInput::~SpoolInput() {
  if (file_ >= 0) ::close(file_);
}

void SpoolInput::store(const char* p, std::size_t n) {
  if (file_ < 0 && memory_.size() + n <= memory_limit_) {
    memory_.append(p, n);
  } else {
    if (file_ < 0) {
      file_ = open_spool_file();
      std::size_t off = 0;
      while (off < memory_.size()) {
        ssize_t w = ::pwrite(file_, memory_.data() + off, memory_.size() - off, static_cast<off_t>(off));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw std::system_error(errno, std::generic_category(), "spool write");
        off += static_cast<std::size_t>(w);
      }
      std::string().swap(memory_);
    }
    std::size_t off = 0;
    while (off < n) {
      ssize_t w = ::pwrite(file_, p + off, n - off, static_cast<off_t>(size_ + off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw std::system_error(errno, std::generic_category(), "spool write");
      off += static_cast<std::size_t>(w);
    }
  }
  size_ += n;
}

std::size_t SpoolInput::load(char* buf, std::size_t n) {
  std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - pos_));
  if (file_ < 0) {
    std::memcpy(buf, memory_.data() + pos_, k);
  } else {
    std::size_t off = 0;
    while (off < k) {
      ssize_t r = ::pread(file_, buf + off, k - off, static_cast<off_t>(pos_ + off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw std::system_error(r < 0 ? errno : EIO, std::generic_category(), "spool read");
      off += static_cast<std::size_t>(r);
    }
  }
  pos_ += k;
  return k;
}

std::size_t SpoolInput::read(char* buf, std::size_t n) {
  if (n == 0) return 0;
  if (pos_ < size_) return load(buf, n);
  if (eof_) return 0;
  std::size_t r = source_(buf, n);
  if (r == 0) {
    eof_ = true;
    return 0;
  }
  if (size_ + r > max_bytes_) {
    eof_ = true;
    throw PayloadTooLarge("request body is larger than " + std::to_string(max_bytes_) + " bytes");
  }
  store(buf, r);
  pos_ += r;
  return r;
}

}  // namespace csgi::cgi
