#pragma once
/// csgi.input for the CGI and FastCGI adapters: reads the request body from its source on demand, to the
/// source's end (the body is not cut at CONTENT_LENGTH: front servers end it), and keeps what it read so
/// that rewind() works (csgix.input.buffered). Bytes are kept in memory up to `memory_limit`, then in an
/// unlinked temporary file. Past `max_bytes` read() throws csgi::PayloadTooLarge (413).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "csgi/core/io.hpp"

namespace csgi::cgi {

class SpoolInput final : public Input {
public:
  /// Reads up to n bytes into buf; 0 at the end of the body. May throw (ends the request).
  using Source = std::function<std::size_t(char* buf, std::size_t n)>;

  explicit SpoolInput(Source source, std::uint64_t max_bytes = ~std::uint64_t{0},
                      std::size_t memory_limit = 1 << 20);
  ~SpoolInput() override;
  SpoolInput(const SpoolInput&) = delete;
  SpoolInput& operator=(const SpoolInput&) = delete;

  using Input::read;
  std::size_t read(char* buf, std::size_t n) override;
  bool seekable() const override { return true; }
  void rewind() override { pos_ = 0; }

  /// Total bytes taken from the source so far.
  std::uint64_t received() const noexcept { return size_; }
  /// True once the source reported its end.
  bool at_source_end() const noexcept { return eof_; }

private:
  void store(const char* p, std::size_t n);
  std::size_t load(char* buf, std::size_t n);

  Source source_;
  std::uint64_t max_bytes_;
  std::size_t memory_limit_;
  std::string memory_;
  int file_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t pos_ = 0;
  bool eof_ = false;
};

}  // namespace csgi::cgi
