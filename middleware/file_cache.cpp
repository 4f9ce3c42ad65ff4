#include "csgi/middleware/file_cache.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "csgi/core/http_date.hpp"
#include "csgi/core/process.hpp"
#include "csgi/middleware/static.hpp"

namespace csgi::mw {

namespace {

constexpr std::uint32_t watch_mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                                     IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

std::string_view parent_of(std::string_view relative) {
  auto slash = relative.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : relative.substr(0, slash);
}

std::string join(std::string_view dir, std::string_view name) {
  std::string k(dir);
  if (!k.empty()) k += '/';
  k += name;
  return k;
}

bool same_version(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

/// The whole file read from `fd` (st_size bytes), or null when it changed size while read.
SharedBytes read_whole(int fd, std::size_t size) {
  auto s = std::make_shared<std::string>(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, s->data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    got += static_cast<std::size_t>(n);
  }
  char extra;
  if (::pread(fd, &extra, 1, static_cast<off_t>(size)) != 0) return nullptr;  // it grew
  return s;
}

}  // namespace

FileCache::FileCache(const Root& root, FileCacheOptions options, Prepare prepare)
    : root_(root), o_(options), prepare_(std::move(prepare)) {
  std::lock_guard lock(mu_);
  reset_locked();
}

FileCache::~FileCache() {
  if (fd_ >= 0) ::close(fd_);
}

void FileCache::reset_locked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  generation_ = fork_generation();
  dirs_by_wd_.clear();
  wd_by_dir_.clear();
  map_.clear();
  lru_.clear();
  bytes_ = 0;
}

bool FileCache::watch_locked(const std::string& dir) {
  if (wd_by_dir_.count(dir)) return true;
  std::string abs = dir.empty() ? root_.path() : root_.path() + "/" + dir;
  int wd = ::inotify_add_watch(fd_, abs.c_str(), watch_mask);
  if (wd < 0) return false;
  wd_by_dir_.emplace(dir, wd);
  dirs_by_wd_[wd].push_back(dir);
  return true;
}

void FileCache::invalidate_locked(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  map_.erase(it);
  ++stats_.invalidations;
}

void FileCache::evict_locked(std::size_t room) {
  while (!lru_.empty() && (map_.size() >= o_.max_entries || bytes_ + room > o_.max_bytes)) {
    auto victim = map_.find(lru_.back());
    bytes_ -= victim->second.bytes;
    map_.erase(victim);
    lru_.pop_back();
  }
}

void FileCache::drain_locked() {
  alignas(struct inotify_event) char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) return;  // EAGAIN: nothing queued
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      ++epoch_;
      if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
        // Events lost, or a watched directory gone or moved: nothing cached can be trusted.
        stats_.invalidations += map_.size();
        reset_locked();
        return;
      }
      auto dirs = dirs_by_wd_.find(ev->wd);
      if (dirs == dirs_by_wd_.end() || ev->len == 0) continue;
      for (const std::string& d : dirs->second) invalidate_locked(join(d, ev->name));
    }
  }
}

std::shared_ptr<FileCache::Entry> FileCache::open_uncached(const Root& root, std::string_view relative,
                                                           const Prepare& prepare) {
  auto e = std::make_shared<Entry>();
  e->opened = root.open(relative);
  if (e->opened && e->opened.is_file()) {
    e->etag = file_etag(e->opened.st);
    e->last_modified = http_date(e->opened.st.st_mtim.tv_sec);
    if (prepare) prepare(*e, relative);
  }
  return e;
}

std::shared_ptr<const FileCache::Entry> FileCache::load(std::string_view relative, bool& cacheable) const {
  auto e = open_uncached(root_, relative, prepare_);
  bool wanted = cacheable;
  cacheable = false;
  if (!e->opened || !e->opened.is_file()) return e;
  const struct stat& st = e->opened.st;
  if (!wanted || st.st_nlink != 1) return e;
  std::string abs = root_.path() + "/" + std::string(relative);
  struct stat link {};
  if (::lstat(abs.c_str(), &link) != 0 || !S_ISREG(link.st_mode) || !same_version(link, st)) return e;
  std::size_t size = static_cast<std::size_t>(st.st_size);
  if (size <= o_.max_file_bytes && size <= o_.max_bytes) {
    SharedBytes bytes = read_whole(e->opened.file->fd(), size);
    struct stat after {};
    if (!bytes || ::fstat(e->opened.file->fd(), &after) != 0 || !same_version(after, st)) return e;
    e->bytes = std::move(bytes);
  }
  cacheable = true;
  return e;
}

std::shared_ptr<const FileCache::Entry> FileCache::open(std::string_view relative) {
  bool watched = false;
  std::uint64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    if (generation_ != fork_generation()) reset_locked();
    if (fd_ < 0) {
      bool no = false;
      return load(relative, no);
    }
    drain_locked();
    if (auto it = map_.find(relative); it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      ++stats_.hits;
      return it->second.entry;
    }
    ++stats_.misses;
    // Watch first: a change made after this point is queued, so it is seen below or by the next lookup.
    watched = o_.max_entries > 0 && watch_locked(std::string(parent_of(relative)));
    epoch = epoch_;
  }
  bool cacheable = watched;
  auto e = load(relative, cacheable);
  if (!cacheable) return e;
  std::lock_guard lock(mu_);
  if (generation_ != fork_generation()) return e;
  drain_locked();
  // An event read since the load (here or by another thread's lookup) may concern this file: keep
  // nothing then, rather than a version that may already be replaced.
  if (epoch_ != epoch) return e;
  std::size_t bytes = e->bytes ? e->bytes->size() : 0;
  if (map_.find(relative) != map_.end()) return e;  // another thread loaded it meanwhile
  std::string key(relative);
  evict_locked(bytes);
  if (map_.size() >= o_.max_entries || bytes_ + bytes > o_.max_bytes) return e;
  lru_.push_front(key);
  map_.emplace(key, Slot{e, lru_.begin(), bytes});
  bytes_ += bytes;
  return e;
}

FileCache::Stats FileCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.entries = map_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace csgi::mw
