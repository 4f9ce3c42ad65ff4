#include "csgi/adapters/standalone/detail/process/file_watch.hpp"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <system_error>
#include <utility>

namespace csgi::standalone::detail {

namespace {

constexpr uint32_t file_events = IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB;
constexpr int max_depth = 16;
constexpr std::size_t max_dirs = 4096;

std::pair<std::string, std::string> split(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool skipped_dir(const std::string& name) {
  return name.empty() || name[0] == '.' || name == "__pycache__" || name == "node_modules";
}

}  // namespace

FileWatch::FileWatch(const std::vector<std::string>& files, const std::vector<std::string>& trees,
                     std::string tree_suffix, std::chrono::milliseconds debounce)
    : suffix_(std::move(tree_suffix)), debounce_(debounce) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
  try {
    for (const std::string& f : files) {
      auto [dir, name] = split(f);
      watch_dir(dir, name, false, 0);
    }
    for (const std::string& t : trees) watch_dir(t, "", true, 0);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

FileWatch::~FileWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void FileWatch::watch_dir(const std::string& path, const std::string& name, bool tree, int depth) {
  if (watched_dirs_ >= max_dirs) return;
  uint32_t mask = file_events | (tree ? IN_MOVED_FROM : 0);
  int wd = ::inotify_add_watch(fd_, path.c_str(), mask);
  if (wd < 0) {
    if (depth > 0) return;  // a subdirectory that went away or cannot be read
    throw std::system_error(errno, std::generic_category(), "cannot watch " + path);
  }
  Dir& d = dirs_[wd];
  if (d.path.empty()) ++watched_dirs_;
  d.path = path;
  d.tree = d.tree || tree;
  if (!name.empty()) d.names.push_back(name);
  if (!tree || depth >= max_depth) return;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (skipped_dir(n) || n == "..") continue;
    std::string p = path + "/" + n;
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) subdirs.push_back(p);
  }
  ::closedir(dir);
  for (const std::string& p : subdirs) watch_dir(p, "", true, depth + 1);
}

bool FileWatch::matches(const Dir& d, const std::string& name) const {
  for (const std::string& n : d.names)
    if (n == name) return true;
  return d.tree && name.size() >= suffix_.size() && name.compare(name.size() - suffix_.size(), suffix_.size(), suffix_) == 0;
}

std::string FileWatch::poll(Clock::time_point now) {
  alignas(inotify_event) char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end() || ev->len == 0) continue;
      std::string name = ev->name;
      std::string path = it->second.path + "/" + name;
      if (it->second.tree && (ev->mask & IN_ISDIR)) {
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && !skipped_dir(name)) watch_dir(path, "", true, 1);
        continue;
      }
      if (!matches(it->second, name)) continue;
      changed_ = path;
      last_ = now;
    }
  }
  if (changed_.empty() || now - last_ < debounce_) return {};
  return std::exchange(changed_, std::string());
}

}  // namespace csgi::standalone::detail
