#include "csgi/adapters/standalone/detail/process/log_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

namespace csgi::standalone::detail {

LogFile::~LogFile() {
  if (registered_) log_files::remove(*this);
  int fd = fd_.load();
  if (fd > 2) ::close(fd);
  for (int r : retired_)
    if (r > 2) ::close(r);
}

void LogFile::open(const std::string& path) {
  path_ = path;
  reopen();
  if (!path_.empty() && !std::exchange(registered_, true)) log_files::add(*this);
}

void LogFile::reopen() {
  int fd = -1;
  if (path_.empty()) return;
  if (path_ == "-") {
    fd = 1;
  } else if (path_ == "stderr") {
    fd = 2;
  } else {
    fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open log file " + path_);
  }
  std::lock_guard lock(mu_);
  int old = fd_.exchange(fd);
  if (old > 2 && old != fd) retired_.push_back(old);
}

void LogFile::write(std::string_view line) const noexcept {
  int fd = fd_.load(std::memory_order_relaxed);
  if (fd < 0) return;
  while (!line.empty()) {
    ssize_t w = ::write(fd, line.data(), line.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      // A full disk or a lost file must not stop the server: the line is dropped, the error reported
      // once (to stderr, which the error log may be the same file as), and again only after a recovery.
      if (!failing_.exchange(true, std::memory_order_relaxed))
        stderr_stream().write("csgi: cannot write the log " + path_ + ": " + std::strerror(errno) +
                              " (lines are dropped until writing works again)");
      return;
    }
    line.remove_prefix(static_cast<std::size_t>(w));
  }
  if (failing_.load(std::memory_order_relaxed) && failing_.exchange(false, std::memory_order_relaxed))
    stderr_stream().write("csgi: writing the log " + path_ + " works again");
}

void LogErrorStream::write(std::string_view message) {
  std::string line(message);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  std::lock_guard lock(mu_);
  if (f_ && f_->enabled())
    f_->write(line);
  else
    stderr_stream().write(message);
}

}  // namespace csgi::standalone::detail
