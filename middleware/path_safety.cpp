#include "csgi/middleware/path_safety.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <system_error>

#include "csgi/core/percent.hpp"

namespace csgi::mw {

namespace {

constexpr int open_flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
constexpr std::size_t max_path = 4096;

int status_for_errno(int e) {
  switch (e) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
      return 404;
    case ELOOP:   // a symlink where none is allowed
    case EXDEV:   // openat2 RESOLVE_BENEATH: the path would leave the root
    case EACCES:
    case EPERM:
      return 403;
    default:
      return 500;
  }
}

Opened fail(int status) {
  Opened o;
  o.status = status;
  return o;
}

Opened finish(int fd) {
  Opened o;
  o.file = std::make_shared<FileHandle>(fd);
  if (::fstat(fd, &o.st) != 0) return fail(500);
  if (!S_ISREG(o.st.st_mode) && !S_ISDIR(o.st.st_mode)) return fail(403);
  // The descriptor was opened O_NONBLOCK (so a FIFO could not hang us); regular files do not care,
  // but clear it anyway for readers that check.
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return o;
}

std::atomic<bool> have_openat2{true};

long sys_openat2(int dirfd, const char* path, std::uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(open_flags);
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

}  // namespace

namespace {
/// A byte that needs no check beyond one comparison: printable ASCII but '\\' and '%'.
constexpr std::array<bool, 256> plain_table = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x7f; ++c) t[static_cast<std::size_t>(c)] = c != '\\' && c != '%';
  return t;
}();

/// The common path in one pass: "/" then plain bytes, no empty segment and none starting with '.'
/// (no "//", no "/."). Then it is already its own relative path, less the slashes at both ends.
bool sanitize_simple(std::string_view path, SafePath& out) {
  if (path.empty() || path.size() > max_path || path.front() != '/') return false;
  char prev = '/';
  for (std::size_t i = 1; i < path.size(); ++i) {
    char c = path[i];
    if (!plain_table[static_cast<unsigned char>(c)] || (prev == '/' && (c == '/' || c == '.'))) return false;
    prev = c;
  }
  out.trailing_slash = prev == '/';
  out.relative.append(path.substr(1, path.size() - 1 - (out.trailing_slash && path.size() > 1 ? 1 : 0)));
  return true;
}
}  // namespace

SafePath sanitize_path(std::string_view path, bool allow_dotfiles) {
  SafePath out;
  if (sanitize_simple(path, out)) return out;
  auto refuse = [&](int status, const char* why) {
    out.status = status;
    out.reason = why;
    out.relative.clear();
    return out;
  };
  if (path.size() > max_path) return refuse(400, "path too long");
  if (!path.empty() && path.front() != '/') return refuse(400, "PATH_INFO does not start with '/'");
  for (std::size_t i = 0; i < path.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(path[i]);
    if (c < 0x20 || c == 0x7f) return refuse(400, "control character or NUL in path");
    if (c == '\\') return refuse(400, "backslash in path");
    if (escape_at(path, i) >= 0)
      return refuse(400, "percent-encoding left after decoding (double-encoded path)");
  }
  if (!valid_utf8(path)) return refuse(400, "path is not valid UTF-8 (overlong or malformed sequence)");
  out.trailing_slash = !path.empty() && path.back() == '/';
  out.relative.reserve(path.size());
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") return refuse(403, "'..' segment in path");
    if (seg.front() == '.' && !allow_dotfiles && seg != ".well-known") return refuse(404, "hidden file");
    if (!out.relative.empty()) out.relative.push_back('/');
    out.relative.append(seg);
  }
  return out;
}

Root::Root(const std::string& dir, Symlinks policy) : policy_(policy) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "static root " + dir);
  char buf[PATH_MAX];
  if (!::realpath(dir.c_str(), buf)) {
    int e = errno;
    ::close(fd_);
    throw std::system_error(e, std::generic_category(), "realpath " + dir);
  }
  real_ = buf;
}

Root::~Root() {
  if (fd_ >= 0) ::close(fd_);
}

Opened Root::walk(std::string_view relative) const {
  if (relative.empty()) {
    int fd = ::openat(fd_, ".", open_flags | O_DIRECTORY);
    return fd < 0 ? fail(status_for_errno(errno)) : finish(fd);
  }
  int cur = fd_;
  std::string seg;
  Opened result;
  while (true) {
    std::size_t slash = relative.find('/');
    seg.assign(relative.substr(0, slash));
    bool last = slash == std::string_view::npos;
    int fd = ::openat(cur, seg.c_str(), last ? (open_flags | O_NOFOLLOW) : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    int e = errno;
    if (cur != fd_) ::close(cur);
    if (fd < 0) return fail(status_for_errno(e == ENOTDIR && !last ? ENOTDIR : e));
    if (last) return finish(fd);
    cur = fd;
    relative.remove_prefix(slash + 1);
  }
}

Opened Root::resolve_inside(std::string_view relative) const {
  std::string full = real_;
  if (full.back() != '/') full.push_back('/');
  full.append(relative);
  char buf[PATH_MAX];
  if (!::realpath(full.c_str(), buf)) return fail(status_for_errno(errno));
  std::string_view r(buf);
  if (real_ == "/") return walk(r.substr(1));
  if (r == real_) return walk({});
  if (r.size() <= real_.size() || r.substr(0, real_.size()) != real_ || r[real_.size()] != '/') return fail(403);
  return walk(r.substr(real_.size() + 1));  // symlink-free now; O_NOFOLLOW catches a racing swap
}

Opened Root::open(std::string_view relative) const {
  if (have_openat2.load(std::memory_order_relaxed)) {
    std::uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    if (policy_ == Symlinks::never) resolve |= RESOLVE_NO_SYMLINKS;
    std::string path = relative.empty() ? std::string(".") : std::string(relative);
    long fd;
    int tries = 0;
    do fd = sys_openat2(fd_, path.c_str(), resolve);
    while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 8);
    if (fd >= 0) return finish(static_cast<int>(fd));
    int e = errno;
    if (e == ENOSYS) {
      have_openat2.store(false, std::memory_order_relaxed);
    } else if (e == EXDEV && policy_ == Symlinks::inside_root) {
      return resolve_inside(relative);  // e.g. an absolute symlink that may still point inside
    } else {
      return fail(status_for_errno(e));
    }
  }
  return policy_ == Symlinks::never ? walk(relative) : resolve_inside(relative);
}

}  // namespace csgi::mw
