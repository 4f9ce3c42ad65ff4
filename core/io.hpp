#pragma once
/// The request body stream (`csgi.input`) and the error stream (`csgi.errors`).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>

namespace csgi {

/// csgi.input: the request body. read() returns the number of bytes copied, 0 only at the end (INPUT-1).
/// Adapters give an Input that ends at CONTENT_LENGTH (or the last chunk); reading never blocks forever:
/// a body-read timeout ends the request with an error thrown from read().
class Input {
public:
  virtual ~Input() = default;
  virtual std::size_t read(char* buf, std::size_t n) = 0;
  /// True when rewind() works (csgix.input.buffered).
  virtual bool seekable() const { return false; }
  /// Back to the first byte; throws std::logic_error when not seekable().
  virtual void rewind();

  /// Reads up to n bytes (fewer only at the end).
  std::string read(std::size_t n);
  /// Reads to the end; throws csgi::HttpError(413) past `limit` bytes.
  std::string read_all(std::size_t limit = std::numeric_limits<std::size_t>::max());
  /// Reads one line including its '\n' (or what is left at the end).
  std::string read_line(std::size_t limit = 65536);
};

/// An Input over bytes in memory; seekable.
class StringInput final : public Input {
public:
  StringInput() = default;
  explicit StringInput(std::string data) : data_(std::move(data)) {}
  std::size_t read(char* buf, std::size_t n) override;
  bool seekable() const override { return true; }
  void rewind() override { pos_ = 0; }
  void assign(std::string data) {
    data_ = std::move(data);
    pos_ = 0;
  }

private:
  std::string data_;
  std::size_t pos_ = 0;
};

/// csgi.errors: where apps and middleware report problems (ERR-1). write() takes whole messages; one call
/// is written atomically with respect to other threads.
class ErrorStream {
public:
  virtual ~ErrorStream() = default;
  virtual void write(std::string_view message) = 0;
};

/// An ErrorStream writing to a file descriptor (stderr by default), one write(2) per message.
class FdErrorStream final : public ErrorStream {
public:
  explicit FdErrorStream(int fd = 2) : fd_(fd) {}
  void write(std::string_view message) override;

private:
  int fd_;
};

/// An ErrorStream that keeps everything written (for tests).
class StringErrorStream final : public ErrorStream {
public:
  void write(std::string_view message) override {
    std::lock_guard lock(mu_);
    text_.append(message);
    if (message.empty() || message.back() != '\n') text_.push_back('\n');
  }
  std::string text() const {
    std::lock_guard lock(mu_);
    return text_;
  }

private:
  mutable std::mutex mu_;
  std::string text_;
};

/// The process-wide stderr stream, used when an env has no csgi.errors.
ErrorStream& stderr_stream();

}  // namespace csgi
