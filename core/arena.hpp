#pragma once
/// A bump allocator for the strings of one request. Memory is handed out from an inline buffer, then from
/// blocks that are kept across reset() so that an env reused for the next request allocates nothing.
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

namespace csgi {

class Arena {
public:
  Arena() noexcept : cur_(inline_), end_(inline_ + sizeof inline_) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  char* allocate(std::size_t n) {
    if (static_cast<std::size_t>(end_ - cur_) < n) grow(n);
    char* p = cur_;
    cur_ += n;
    return p;
  }
  std::string_view copy(std::string_view s) {
    std::size_t n = s.size();
    if (n == 0) return {};
    char* p = allocate(n);
    if (n <= 32)
      copy_short(p, s.data(), n);
    else
      __builtin_memcpy(p, s.data(), n);
    return {p, n};
  }
  /// Forgets every allocation; keeps the blocks for reuse.
  void reset() noexcept {
    cur_ = inline_;
    end_ = inline_ + sizeof inline_;
    next_block_ = 0;
  }

private:
  void grow(std::size_t n);

  // 1 to 32 bytes as two possibly overlapping chunks, inline: env keys and small values are this short.
  static void copy_short(char* to, const char* from, std::size_t n) noexcept {
    if (n >= 16) {
      chunk<16>(to, from);
      chunk<16>(to + n - 16, from + n - 16);
    } else if (n >= 8) {
      chunk<8>(to, from);
      chunk<8>(to + n - 8, from + n - 8);
    } else if (n >= 4) {
      chunk<4>(to, from);
      chunk<4>(to + n - 4, from + n - 4);
    } else {
      to[0] = from[0];
      to[n / 2] = from[n / 2];
      to[n - 1] = from[n - 1];
    }
  }
  template <std::size_t N>
  static void chunk(char* to, const char* from) noexcept {
    char tmp[N];
    __builtin_memcpy(tmp, from, N);
    __builtin_memcpy(to, tmp, N);
  }

  struct Block {
    std::unique_ptr<char[]> data;
    std::size_t size;
  };
  char inline_[4096];
  char* cur_;
  char* end_;
  std::vector<Block> blocks_;
  std::size_t next_block_ = 0;
};

}  // namespace csgi
