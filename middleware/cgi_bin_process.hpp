#pragma once
// Internal to the cgi_bin app (cgi_bin.cpp): its shared state, the slots that bound how many scripts run
// at once, and one running script (spawn, pipes, stderr, reaping). Not an API of its own.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/middleware/cgi_bin.hpp"

namespace csgi::mw {

struct CgiBin::State {
  CgiBinOptions options;
  std::string root;  // realpath, no trailing '/'
  std::atomic<std::size_t> running{0};
  // Set once the last copy of the app is gone: every script still running is then killed (seen within
  // a poll slice). A flag, not a descriptor: a forked worker process must not share it.
  std::atomic<bool> cancel{false};
  // Worker threads still running (async mode); the app's last copy waits for them, bounded.
  std::mutex mu;
  std::condition_variable idle;
  std::size_t workers = 0;

  void cancel_all() noexcept { cancel.store(true, std::memory_order_release); }
  bool cancelled() const noexcept { return cancel.load(std::memory_order_acquire); }
};

namespace cgi_bin_detail {

using Clock = std::chrono::steady_clock;

/// One of the `max_processes` places for a running script; given back when destroyed.
class Slot {
public:
  Slot() = default;
  /// An empty slot when `max_processes` scripts run already.
  static Slot acquire(const std::shared_ptr<CgiBin::State>& st);
  Slot(Slot&& o) noexcept : st_(std::move(o.st_)) {}
  Slot& operator=(Slot&& o) noexcept;
  ~Slot() { release(); }
  explicit operator bool() const noexcept { return st_ != nullptr; }
  void release() noexcept;

private:
  std::shared_ptr<CgiBin::State> st_;
};

/// A running script: its pipes, the request body still to write, and its reaping. As a Stream it is the
/// body of a response on the calling thread; a worker drives it through pump() and finish().
class Process final : public Stream {
public:
  Process(std::shared_ptr<CgiBin::State> state, std::string label, ErrorStream* errors)
      : state_(std::move(state)), label_(std::move(label)), errors_(errors) {}
  ~Process() override { close(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  /// Starts the script with `body` for its stdin. Returns 0 or an errno value.
  int spawn(const std::vector<std::string>& argv, const std::vector<std::string>& envp, const std::string& dir,
            std::string body);

  enum class Got { data, eof, timeout, cancelled };
  /// Waits for stdout bytes (appended to `out`), feeding stdin and draining stderr meanwhile.
  Got pump(std::string& out);

  /// Stream: the pending bytes, then stdout until its end; throws on timeout or when the app is gone.
  bool next(std::string& chunk) override;
  /// Kills what is still running, reaps, closes every descriptor, gives back the slot. Idempotent.
  void close() override;
  /// After stdout's end: waits (until the deadline) for the script to exit, reaps it, closes.
  void finish();

  void set_pending(std::string s) { pending_ = std::move(s); }
  /// The slot this process gives back when closed (calling-thread mode).
  void hold(Slot slot) { slot_ = std::move(slot); }
  void log(const std::string& what);
  /// Logs nothing from now on (the response is complete: csgi.errors may be gone).
  void forget_errors() noexcept { errors_ = nullptr; }

private:
  void kill_group();
  void feed();
  void drain_stderr();
  void flush_stderr_line();
  void report(int status);

  std::shared_ptr<CgiBin::State> state_;
  std::string label_;
  ErrorStream* errors_;
  Slot slot_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string body_;
  std::size_t written_ = 0;
  std::string pending_;
  std::string err_line_;
  Clock::time_point deadline_;
};

/// A CGI response's header block, parsed.
struct Parsed {
  int status = 0;          // 0: none given
  Headers headers;         // without hop-by-hop fields and Content-Length
  std::string location;
  bool content_type = false;
  std::string error;       // non-empty: malformed
};
Parsed parse_head(std::string_view head);

/// What the script wrote before its body, or why there is nothing to use (the script is then closed).
struct Head {
  Parsed parsed;
  std::string rest;                 // body bytes read with the head
  std::optional<Response> failure;  // 502, 503 or 504
};
/// Reads stdout up to the end of the header block (at most `max_header_bytes`).
Head read_head(Process& proc, std::size_t max_header_bytes);

/// Reads the rest of stdout into nothing (a status without a body), then reaps.
void discard_output(Process& proc);

}  // namespace cgi_bin_detail
}  // namespace csgi::mw
