#pragma once
// The files `csgi serve --reload` watches (inotify): single files, watched through their directory so
// that a new file renamed over one counts, and directory trees filtered by a name suffix (".py"). A
// change is reported once the files have been quiet for the debounce interval: a build or an editor
// writes a file in pieces, and a library is often written in place and then renamed.
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace csgi::standalone::detail {

class FileWatch {
public:
  using Clock = std::chrono::steady_clock;

  /// Throws std::system_error when inotify is unavailable or a directory cannot be watched.
  FileWatch(const std::vector<std::string>& files, const std::vector<std::string>& trees, std::string tree_suffix,
            std::chrono::milliseconds debounce = std::chrono::milliseconds(300));
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  /// Reads what happened (never blocks). Returns the changed file's path once a change has been followed
  /// by `debounce` without another; "" otherwise.
  std::string poll(Clock::time_point now);
  /// The inotify descriptor (readable when something happened), for a caller that waits on it.
  int fd() const noexcept { return fd_; }

private:
  struct Dir {
    std::string path;
    std::vector<std::string> names;  // files watched in it ("" with `tree`: any name with the suffix)
    bool tree = false;
  };
  void watch_dir(const std::string& path, const std::string& name, bool tree, int depth);
  bool matches(const Dir& d, const std::string& name) const;

  int fd_ = -1;
  std::map<int, Dir> dirs_;  // by watch descriptor
  std::string suffix_;
  std::chrono::milliseconds debounce_;
  std::string changed_;      // the last changed path, while a change is pending
  Clock::time_point last_{};
  std::size_t watched_dirs_ = 0;
};

}  // namespace csgi::standalone::detail
