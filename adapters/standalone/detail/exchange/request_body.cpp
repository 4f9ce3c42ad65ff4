// A request body in memory, then in an unlinked temporary file (see request_body.hpp).
#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace csgi::standalone::detail {

bool BodyMemory::reserve(std::uint64_t n) noexcept {
  std::uint64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (n > cap_ || cur > cap_ - n) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

namespace {
// Memory taken at once for a body whose length is announced; beyond, it grows as the bytes come (a
// slow client announcing much holds no more than this of the budget ahead of its bytes).
constexpr std::uint64_t announced_room = 256 * 1024;
}  // namespace

bool RequestBody::expect(std::uint64_t length, const BodyLimits& limits, std::string& why) {
  if (spooled()) return true;
  if (length > limits.memory_bytes) return spool(limits, why);
  if (length > mem_.capacity()) grow(std::min(length, announced_room), limits);  // refused: grows on append
  return true;
}

bool RequestBody::grow(std::uint64_t cap, const BodyLimits& limits) {
  cap = std::max<std::uint64_t>(cap, 256);
  std::uint64_t more = cap > reserved_ ? cap - reserved_ : 0;
  if (limits.memory && !limits.memory->reserve(more)) return false;
  if (limits.memory) memory_ = limits.memory;
  mem_.reserve(static_cast<std::size_t>(cap));
  reserved_ += more;
  return true;
}

bool RequestBody::append(const char* data, std::size_t n, const BodyLimits& limits, std::string& why) {
  if (n == 0) return true;
  if (!spooled()) {
    std::uint64_t need = mem_.size() + n;
    if (need <= limits.memory_bytes) {
      if (need > mem_.capacity() &&
          !grow(std::min<std::uint64_t>(std::max<std::uint64_t>(need, 2 * mem_.capacity()), limits.memory_bytes),
                limits) &&
          !spool(limits, why))
        return false;
    } else if (!spool(limits, why)) {
      return false;
    }
  }
  size_ += n;
  if (spooled()) return write_file(data, n, why);
  mem_.append(data, n);
  return true;
}

// Moves what memory holds to a new unlinked file.
bool RequestBody::spool(const BodyLimits& limits, std::string& why) {
  const char* dir = limits.temp_dir.empty() ? "/tmp" : limits.temp_dir.c_str();
  int fd = ::open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::string path = std::string(dir) + "/csgi-body-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) {
    why = std::string("cannot make a temporary file for the request body in ") + dir + ": " + std::strerror(errno);
    return false;
  }
  fd_ = fd;
  std::string held = std::move(mem_);
  std::string().swap(mem_);
  if (memory_) memory_->release(reserved_);
  reserved_ = 0;
  return write_file(held.data(), held.size(), why);
}

bool RequestBody::write_file(const char* data, std::size_t n, std::string& why) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      why = std::string("cannot write the request body to its temporary file: ") + std::strerror(errno);
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void RequestBody::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::string().swap(mem_);
  if (memory_) memory_->release(reserved_);
  memory_ = nullptr;
  reserved_ = 0;
  size_ = pos_ = 0;
}

std::size_t RequestBody::read(char* buf, std::size_t n) {
  std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - pos_));
  if (k == 0) return 0;
  if (!spooled()) {
    std::memcpy(buf, mem_.data() + pos_, k);
  } else {
    ssize_t r;
    do r = ::pread(fd_, buf, k, static_cast<off_t>(pos_));
    while (r < 0 && errno == EINTR);
    if (r <= 0) throw std::runtime_error(std::string("reading the request body's temporary file: ") +
                                         (r < 0 ? std::strerror(errno) : "file shorter than the body"));
    k = static_cast<std::size_t>(r);
  }
  pos_ += k;
  return k;
}

BodyPace::Clock::time_point BodyPace::allowance(std::chrono::milliseconds timeout,
                                                std::uint64_t min_rate) const noexcept {
  if (min_rate == 0) return Clock::time_point::max();
  auto extra = std::chrono::milliseconds(static_cast<std::int64_t>(std::min<std::uint64_t>(got_, 1ull << 50) * 1000 / min_rate));
  return start_ + timeout + extra;
}

BodyPace::Clock::time_point BodyPace::deadline(Clock::time_point now, std::chrono::milliseconds timeout,
                                               std::uint64_t min_rate) const noexcept {
  return std::min(now + timeout, allowance(timeout, min_rate));
}

bool BodyPace::too_slow(Clock::time_point now, std::chrono::milliseconds timeout,
                        std::uint64_t min_rate) const noexcept {
  return now >= allowance(timeout, min_rate);
}

}  // namespace csgi::standalone::detail
