#pragma once
/// FileCache — the Static app's open-file and small-file cache (h2o's file cache, nginx's
/// open_file_cache): a served file stays open, and a small one stays in memory with its headers'
/// values, so a repeated request costs no open/fstat/close and no sendfile.
///
/// Freshness: every lookup first reads the process's inotify queue (one non-blocking read), and the
/// kernel queues a change to a watched directory's entry inside the system call that makes it (write,
/// truncate, chmod/utime, rename over, unlink, create). So the first request that starts after such a
/// call returns sees the file as it is now; nothing is served stale beyond that. A lost event (queue
/// overflow) or a watched directory that goes away empties the cache.
/// Consistency: a cached small file is read whole from its open descriptor and kept only when a second
/// fstat shows the same size and modification time, so its head (Content-Length, ETag, Last-Modified) and
/// its body always come from one version; a larger file is sent from the descriptor opened with its stat
/// (a file replaced by rename keeps its old inode's bytes until the next lookup).
/// Not cached (opened per request, as without a cache): directories, a path whose last component is a
/// symbolic link, files with several hard links (a write through another name is not seen in this
/// directory), and anything when inotify is unavailable.
/// Bounds: at most `max_entries` files and `max_bytes` bytes kept in memory, least recently used first out.
/// Processes: the inotify descriptor and the entries belong to the process that made them; a forked
/// child (prefork workers) starts with an empty cache of its own.
/// Thread-safe: one mutex guards the queue read, the map and the LRU list.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "csgi/core/response.hpp"
#include "csgi/middleware/path_safety.hpp"

namespace csgi::mw {

struct FileCacheOptions {
  std::size_t max_entries = 1024;          // files kept open (and in memory when small)
  std::size_t max_file_bytes = 64 * 1024;  // a file up to this size is kept in memory; 0: none
  std::size_t max_bytes = 32ull << 20;     // bytes of file contents kept in memory, in all
};

class FileCache {
public:
  /// A cached file: its descriptor and stat, its contents when small, and the header values derived
  /// from that one stat.
  struct Entry {
    Opened opened;
    SharedBytes bytes;  // the whole file, or null when it is sent from the descriptor
    std::string etag;
    std::string last_modified;
    std::string content_type;  // set by the Prepare hook (Static: the media type with its charset)
    Headers head;              // set by the Prepare hook (Static: the headers of a 200 for the whole file, sealed)
  };
  /// Called once for each regular file opened (outside the cache's lock, before the entry is shared),
  /// with the entry's etag and last_modified already set: derives the rest of what a response needs.
  using Prepare = std::function<void(Entry&, std::string_view relative)>;

  FileCache(const Root& root, FileCacheOptions options, Prepare prepare = {});
  ~FileCache();
  FileCache(const FileCache&) = delete;
  FileCache& operator=(const FileCache&) = delete;

  /// The file `relative` (as sanitize_path makes it) opened beneath the root: from the cache when it is
  /// current, else opened now (and kept when cacheable). `opened` tells 403/404/500 as Root::open does;
  /// a directory comes back uncached.
  std::shared_ptr<const Entry> open(std::string_view relative);

  /// `relative` opened beneath `root` now, without a cache, with the header values of a file (and
  /// `prepare` applied to a regular file).
  static std::shared_ptr<Entry> open_uncached(const Root& root, std::string_view relative,
                                              const Prepare& prepare = {});

  /// False when inotify could not be set up: every open() goes to the file system.
  bool active() const noexcept { return fd_ >= 0; }
  struct Stats {
    std::uint64_t hits = 0, misses = 0, invalidations = 0, entries = 0, bytes = 0;
  };
  Stats stats() const;

private:
  struct Slot {
    std::shared_ptr<const Entry> entry;
    std::list<std::string>::iterator lru;
    std::size_t bytes = 0;
  };
  void reset_locked();
  void drain_locked();
  void invalidate_locked(const std::string& key);
  bool watch_locked(const std::string& dir);
  void evict_locked(std::size_t room);
  /// Opens `relative`; with `cacheable` true on entry, reads a small file whole and sets `cacheable`
  /// to whether the result may be kept.
  std::shared_ptr<const Entry> load(std::string_view relative, bool& cacheable) const;

  /// Lookup by std::string_view without building a key string. Inline, 8 bytes a step: cheaper than
  /// std::hash's out-of-line call for the short relative paths a site holds. Only files that exist are
  /// kept, so the keys are not chosen by clients.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      const char* p = s.data();
      std::size_t n = s.size();
      std::uint64_t h = 0x9E3779B97F4A7C15u ^ (n * 0xC2B2AE3D27D4EB4Fu);
      auto mix = [&h](std::uint64_t w) {
        h = (h ^ w) * 0xBF58476D1CE4E5B9u;
        h ^= h >> 31;
      };
      auto load = [p](std::size_t at, std::size_t bytes) {
        std::uint64_t w = 0;
        __builtin_memcpy(&w, p + at, bytes);
        return w;
      };
      if (n >= 8) {  // 8 bytes a step, the last step overlapping
        for (std::size_t i = 0; i + 8 < n; i += 8) mix(load(i, 8));
        mix(load(n - 8, 8));
      } else if (n >= 4) {
        mix(load(0, 4) | load(n - 4, 4) << 32);
      } else if (n > 0) {
        mix(load(0, 1) | load(n / 2, 1) << 8 | load(n - 1, 1) << 16);
      }
      return static_cast<std::size_t>(h * 0x94D049BB133111EBu);
    }
  };

  const Root& root_;
  FileCacheOptions o_;
  Prepare prepare_;
  mutable std::mutex mu_;
  int fd_ = -1;
  unsigned generation_ = 0;  // the fork generation of the process that made fd_
  std::unordered_map<int, std::vector<std::string>> dirs_by_wd_;  // watch → the relative dirs it stands for
  std::unordered_map<std::string, int> wd_by_dir_;
  std::unordered_map<std::string, Slot, KeyHash, std::equal_to<>> map_;
  std::list<std::string> lru_;  // front: most recently used
  std::size_t bytes_ = 0;
  std::uint64_t epoch_ = 0;  // inotify events read so far
  Stats stats_;
};

}  // namespace csgi::mw
