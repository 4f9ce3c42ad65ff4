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
    if (s.empty()) return {};
    char* p = allocate(s.size());
    __builtin_memcpy(p, s.data(), s.size());
    return {p, s.size()};
  }
  /// Forgets every allocation; keeps the blocks for reuse.
  void reset() noexcept {
    cur_ = inline_;
    end_ = inline_ + sizeof inline_;
    next_block_ = 0;
  }

private:
  void grow(std::size_t n);

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
