#pragma once
/// LogWriter — appends lines to a log file from a background thread (Monkey moved its logger to its own
/// worker for the same reason): requests only push a line into a bounded in-memory queue and never wait
/// for the disk. When the queue is full the line is dropped and counted (`dropped()`), never blocking.
///
/// The thread writes when 64 lines are queued, every 100 ms otherwise (one write(2) per batch, no wake-up
/// per request), on flush() and at the end.
///
/// Fork-safe: the thread starts with the first line pushed, in the process that pushes it, so a writer
/// made before fork() (a prefork master, gunicorn --preload) starts its own thread in each worker. A
/// writer whose thread already ran is reset in the child by the log_files registry's fork handlers
/// (lines the parent had queued stay the parent's to write). A process that ends with _exit() calls
/// csgi::log_files::flush_all() first; exit() does so itself.
///
/// Reopening (logrotate): `reopen()` asks the writer thread to reopen the file by name before its next
/// write. Every writer is in the csgi::log_files registry, so an adapter's SIGUSR1 handler that calls
/// log_files::reopen_all() (the standalone server's does) reopens it with the server's own logs.
/// `LogWriter::install_sigusr1_handler()` installs a SIGUSR1 handler (sigaction, SA_RESTART) that
/// bumps a process-wide counter; every writer thread notices within ~100 ms and reopens. An adapter that
/// owns signal handling itself (an Asio signal_set, say) should not install it and instead call
/// `log_files::reopen_all()` (or `reopen()` on its writers) from its own SIGUSR1 handler. Typical
/// logrotate stanza: `postrotate kill -USR1 $(cat /run/app.pid) endscript` (no copytruncate needed).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "csgi/core/log_files.hpp"

namespace csgi::mw {

class LogWriter final : public log_files::File {
public:
  /// Opens `path` for appending (created 0644); an empty path writes to stderr (never reopened).
  /// Throws std::system_error when the file cannot be opened. `capacity`: queued lines at most.
  explicit LogWriter(std::string path, std::size_t capacity = 8192);
  /// Writes what is queued, then stops the thread.
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  /// Queues a copy of one line (a '\n' is added when missing). False when the queue was full and it was
  /// dropped.
  bool push(std::string_view line);
  /// Reopen the file by name before the next write (thread-safe, returns at once).
  void reopen() override;
  /// Blocks until every line queued before the call has been written (for tests and shutdown).
  void flush() noexcept override;

  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }
  std::uint64_t write_errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  std::uint64_t reopens() const noexcept { return reopens_.load(std::memory_order_relaxed); }
  const std::string& path() const noexcept { return path_; }

  /// Makes every LogWriter in the process reopen (async-signal-safe: one atomic increment).
  static void reopen_all() noexcept;
  /// Installs a SIGUSR1 handler calling reopen_all(). Throws std::system_error when sigaction fails.
  static void install_sigusr1_handler();

private:
  void before_fork() noexcept override;
  void after_fork_parent() noexcept override;
  void after_fork_child() noexcept override;
  bool start_locked();
  void run();
  void open_file();
  void write_all(std::string_view data);
  void write_lines(std::string_view lines);

  std::string path_;
  bool failing_ = false;  // the last write failed (the writer thread's)
  std::size_t capacity_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::string queue_;             // the queued lines, each ending in '\n' (under mu_)
  std::size_t queued_lines_ = 0;  // lines in queue_ (under mu_)
  std::uint64_t pushed_ = 0, completed_ = 0;  // under mu_
  bool stop_ = false, reopen_ = false;
  bool running_ = false;  // under mu_: this process's thread_ runs
  int flushing_ = 0;  // threads waiting in flush()
  unsigned generation_ = 0;
  unsigned push_generation_ = 0;  // the reopen generation the last push() saw (under mu_)
  std::size_t split_ = std::string::npos;  // where in queue_ the lines for a reopened file begin (under mu_)
  std::atomic<std::uint64_t> dropped_{0}, written_{0}, errors_{0}, reopens_{0};
  std::thread thread_;
};

}  // namespace csgi::mw
