#pragma once
// A request body as the standalone server holds it once its connection read it, for HTTP/1 and HTTP/2
// alike (internal, not installed). The io thread appends the bytes as they arrive; the app reads them as
// csgi.input only once the body is complete, so no read of the app ever waits on the network. A body is
// kept in memory up to ServerOptions::body_buffer_bytes (nginx's client_body_buffer_size) while the
// process's bodies in memory stay within body_memory_bytes; past either, it moves to a temporary file,
// unlinked from the start (O_TMPFILE, else mkstemp and unlink) in body_temp_dir, as nginx's
// client_body_temp does.
//
// BodyPace is the deadline of a body being read: body_timeout after its last piece, and no later than
// body_timeout plus one second per body_min_rate bytes received since it began (Apache mod_reqtimeout's
// body=N,MinRate=R), so a client trickling bytes cannot keep a body open for ever.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "csgi/core/io.hpp"

namespace csgi::standalone::detail {

/// The bytes of request bodies the process holds in memory, within a cap; shared by every connection
/// and thread.
class BodyMemory {
public:
  explicit BodyMemory(std::uint64_t cap) noexcept : cap_(cap) {}
  /// Takes `n` bytes of the cap; false (nothing taken) when they do not fit.
  bool reserve(std::uint64_t n) noexcept;
  void release(std::uint64_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }

private:
  std::atomic<std::uint64_t> used_{0};
  std::uint64_t cap_;
};

/// Where bodies go: memory up to `memory_bytes` each (within `memory`'s cap when set), then a file in
/// `temp_dir`.
struct BodyLimits {
  std::uint64_t memory_bytes = 1ull << 20;
  std::string temp_dir = "/tmp";
  BodyMemory* memory = nullptr;
};

class RequestBody final : public Input {
public:
  RequestBody() = default;
  RequestBody(const RequestBody&) = delete;
  RequestBody& operator=(const RequestBody&) = delete;
  ~RequestBody() override { reset(); }

  /// A body of `length` bytes is coming: past what memory may hold, it goes to its file at once.
  /// False (with `why`) when the file cannot be made.
  bool expect(std::uint64_t length, const BodyLimits& limits, std::string& why);
  /// Appends received bytes. False (with `why`) when the file cannot be made or written.
  bool append(const char* data, std::size_t n, const BodyLimits& limits, std::string& why);
  /// Empty again: memory given back, the file closed.
  void reset() noexcept;
  std::uint64_t size() const noexcept { return size_; }
  /// True once the body went to its file.
  bool spooled() const noexcept { return fd_ >= 0; }

  // csgi.input: from memory or the file, never the network.
  using Input::read;
  std::size_t read(char* buf, std::size_t n) override;
  bool seekable() const override { return true; }
  void rewind() override { pos_ = 0; }

private:
 /// Room for `cap` bytes in memory, counted in the budget; false when the budget refuses it.
 bool grow(std::uint64_t cap, const BodyLimits& limits);
 bool spool(const BodyLimits& limits, std::string& why);
 bool write_file(const char* data, std::size_t n, std::string& why);

 std::string mem_;
 std::uint64_t reserved_ = 0;  // bytes of mem_'s capacity counted in memory_
 BodyMemory* memory_ = nullptr;
 int fd_ = -1;
 std::uint64_t size_ = 0, pos_ = 0;
};

/// The deadline of a request body being read (see the top of this file).
class BodyPace {
public:
  using Clock = std::chrono::steady_clock;
  void begin(Clock::time_point now) noexcept {
    start_ = now;
    got_ = 0;
  }
  void received(std::uint64_t n) noexcept { got_ += n; }
  /// The deadline after a piece received at `now`.
  Clock::time_point deadline(Clock::time_point now, std::chrono::milliseconds timeout,
                             std::uint64_t min_rate) const noexcept;
  /// True when the minimum rate, not the gap between pieces, set the deadline that passed at `now`.
  bool too_slow(Clock::time_point now, std::chrono::milliseconds timeout, std::uint64_t min_rate) const noexcept;

private:
  Clock::time_point allowance(std::chrono::milliseconds timeout, std::uint64_t min_rate) const noexcept;
  Clock::time_point start_{};
  std::uint64_t got_ = 0;
};

}  // namespace csgi::standalone::detail
