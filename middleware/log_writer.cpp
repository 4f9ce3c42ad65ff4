#include "csgi/middleware/log_writer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>
#include <system_error>
#include <vector>

#include "csgi/core/io.hpp"

namespace csgi::mw {

namespace {
constexpr std::size_t batch_lines = 64;
constexpr auto flush_interval = std::chrono::milliseconds(100);
constexpr std::size_t max_write = std::size_t{1} << 16;    // bytes per write(2), whole lines
constexpr std::size_t keep_buffer = std::size_t{1} << 20;  // a batch buffer larger than this is freed
std::atomic<unsigned> g_generation{0};
static_assert(std::atomic<unsigned>::is_always_lock_free, "reopen_all must be async-signal-safe");

extern "C" void csgi_log_sigusr1(int) { LogWriter::reopen_all(); }
}  // namespace

void LogWriter::reopen_all() noexcept { g_generation.fetch_add(1, std::memory_order_relaxed); }

void LogWriter::install_sigusr1_handler() {
  struct sigaction sa {};
  sa.sa_handler = csgi_log_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(SIGUSR1, &sa, nullptr) != 0) throw std::system_error(errno, std::generic_category(), "sigaction");
}

LogWriter::LogWriter(std::string path, std::size_t capacity) : path_(std::move(path)), capacity_(capacity ? capacity : 1) {
  if (path_.empty()) {
    fd_ = 2;
  } else {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open log " + path_);
  }
  generation_ = push_generation_ = g_generation.load(std::memory_order_relaxed);
  log_files::add(*this);
}

LogWriter::~LogWriter() {
  log_files::remove(*this);
  bool join;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    join = running_;
  }
  wake_.notify_one();
  if (join) thread_.join();
  if (fd_ > 2) ::close(fd_);
}

// The thread starts in the process that first pushes a line: never in a prefork master that only builds
// the stack, so no thread is lost at fork().
bool LogWriter::start_locked() {
  if (running_) return true;
  if (stop_) return false;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  running_ = true;
  return true;
}

void LogWriter::before_fork() noexcept { mu_.lock(); }

void LogWriter::after_fork_parent() noexcept { mu_.unlock(); }

// Only the forking thread exists in the child. The writer thread and any thread waiting in flush() are
// gone, so the condition variables are made anew (their waiter counts refer to those threads) and the
// thread handle is forgotten without being joined; the next push starts this process's own thread.
// Queued lines are the parent's, which writes them.
void LogWriter::after_fork_child() noexcept {
  ::new (static_cast<void*>(&thread_)) std::thread();
  ::new (static_cast<void*>(&wake_)) std::condition_variable();
  ::new (static_cast<void*>(&done_)) std::condition_variable();
  queue_.clear();
  queued_lines_ = 0;
  split_ = std::string::npos;
  pushed_ = completed_ = 0;
  flushing_ = 0;
  running_ = false;
  mu_.unlock();
}

bool LogWriter::push(std::string_view line) {
  bool newline = line.empty() || line.back() != '\n';
  bool wake;
  {
    std::lock_guard lock(mu_);
    if (queued_lines_ >= capacity_ || !start_locked()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    // The first line after a SIGUSR1 marks where the lines for the reopened file begin.
    if (unsigned g = g_generation.load(std::memory_order_relaxed); g != push_generation_) {
      push_generation_ = g;
      if (split_ == std::string::npos) split_ = queue_.size();
    }
    queue_.append(line);
    if (newline) queue_.push_back('\n');
    ++queued_lines_;
    ++pushed_;
    // Wake the thread only for a batch (or when the queue fills up): a wake-up and a write(2) per line
    // would cost more than the request. Lines otherwise wait at most one tick (flush_interval).
    wake = queued_lines_ == batch_lines || queued_lines_ == capacity_;
  }
  if (wake) wake_.notify_one();
  return true;
}

void LogWriter::reopen() {
  {
    std::lock_guard lock(mu_);
    reopen_ = true;
    if (split_ == std::string::npos) split_ = queue_.size();
  }
  wake_.notify_one();
}

void LogWriter::flush() noexcept {
  std::unique_lock lock(mu_);
  if (!running_) return;  // nothing was pushed in this process
  std::uint64_t target = pushed_;
  ++flushing_;
  wake_.notify_one();
  done_.wait(lock, [&] { return completed_ >= target || stop_; });
  --flushing_;
}

void LogWriter::open_file() {
  if (path_.empty()) return;
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    errors_.fetch_add(1, std::memory_order_relaxed);  // keep writing to the old file
    return;
  }
  int old;
  {
    std::lock_guard lock(mu_);  // a fork() sees either descriptor, both open
    old = std::exchange(fd_, fd);
  }
  if (old > 2) ::close(old);
  reopens_.fetch_add(1, std::memory_order_relaxed);
}

// A full disk or a lost file must not stop the server: the lines are dropped and counted, the error
// reported once (to stderr, which the error log may be the same file as), and again only after a recovery.
void LogWriter::write_all(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (!std::exchange(failing_, true))
        stderr_stream().write("csgi: cannot write the log " + (path_.empty() ? "(stderr)" : path_) + ": " +
                              std::strerror(n < 0 ? errno : ENOSPC) + " (lines are dropped until writing works again)");
      return;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (std::exchange(failing_, false)) stderr_stream().write("csgi: writing the log " + path_ + " works again");
}

// Writes whole lines, at most max_write bytes at a time (a longer line on its own).
void LogWriter::write_lines(std::string_view lines) {
  while (!lines.empty()) {
    std::size_t n = lines.size();
    if (n > max_write) {
      std::size_t last = lines.rfind('\n', max_write - 1);
      n = last != std::string_view::npos ? last + 1 : lines.find('\n') + 1;
    }
    write_all(lines.substr(0, n));
    lines.remove_prefix(n);
  }
}

void LogWriter::run() {
  std::string batch;  // swapped with queue_: the two buffers take turns, no allocation per batch
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait_for(lock, flush_interval, [&] {
      return stop_ || reopen_ || flushing_ > 0 || queued_lines_ >= batch_lines ||
             g_generation.load(std::memory_order_relaxed) != generation_;
    });
    bool reopen = std::exchange(reopen_, false);
    unsigned gen = g_generation.load(std::memory_order_relaxed);
    if (gen != generation_) {
      generation_ = gen;
      reopen = true;
    }
    batch.clear();
    batch.swap(queue_);
    std::size_t lines = std::exchange(queued_lines_, 0);
    std::size_t split = std::exchange(split_, std::string::npos);
    bool stopping = stop_;
    lock.unlock();
    if (reopen) {
      // The lines queued before the reopen was asked for go to the file they were meant for (renamed by
      // logrotate), the rest to the new one.
      std::size_t at = std::min(split, batch.size());
      write_lines(std::string_view(batch).substr(0, at));
      open_file();
      write_lines(std::string_view(batch).substr(at));
    } else {
      write_lines(batch);
    }
    if (batch.capacity() > keep_buffer) batch = std::string();  // after a burst, do not keep its memory
    written_.fetch_add(lines, std::memory_order_relaxed);
    lock.lock();
    completed_ += lines;
    done_.notify_all();
    if (stopping && queued_lines_ == 0) break;
  }
}

}  // namespace csgi::mw
