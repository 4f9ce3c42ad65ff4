#pragma once
// The server's access and error logs: files reopened by name on SIGUSR1, written one line per write(2).
#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/io.hpp"
#include "csgi/core/log_files.hpp"

namespace csgi::standalone::detail {

/// A log file that can be reopened (SIGUSR1) while other threads write to it; one write(2) per line.
/// Registered in csgi::log_files while open, so log_files::reopen_all() reopens it with the app's logs.
class LogFile final : public log_files::File {
public:
  LogFile() = default;
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  /// "" → disabled; "-" → stdout; "stderr" → fd 2; else a file opened for appending.
  void open(const std::string& path);
  void reopen() override;
  bool enabled() const noexcept { return fd_.load(std::memory_order_relaxed) >= 0; }
  void write(std::string_view line) const noexcept;

private:
  std::string path_;
  std::atomic<int> fd_{-1};
  mutable std::atomic<bool> failing_{false};  // a write failed; reported once until one succeeds again
  std::mutex mu_;
  std::vector<int> retired_;  // fds replaced by reopen(); closed at the end (a writer may still hold one)
  bool registered_ = false;

  void before_fork() noexcept override { mu_.lock(); }
  void after_fork_parent() noexcept override { mu_.unlock(); }
  void after_fork_child() noexcept override { mu_.unlock(); }
};

/// csgi.errors: one line per message into the error log (stderr by default). An app may keep it past
/// the server (a delayed response answered late): the io threads' mailboxes keep it, and once the server
/// is gone it writes to stderr.
class LogErrorStream final : public ErrorStream {
public:
  explicit LogErrorStream(const LogFile& f) : f_(&f) {}
  void write(std::string_view message) override;
  /// The log file is going: write to stderr from now on.
  void detach() noexcept {
    std::lock_guard lock(mu_);
    f_ = nullptr;
  }

private:
  std::mutex mu_;
  const LogFile* f_;
};

}  // namespace csgi::standalone::detail
