#include "csgi/core/process.hpp"

#include <pthread.h>

#include <atomic>

namespace csgi {

namespace {
std::atomic<unsigned> forks{0};
void count_fork() noexcept { forks.fetch_add(1, std::memory_order_relaxed); }
const bool registered = [] {
  ::pthread_atfork(nullptr, nullptr, count_fork);
  return true;
}();
}  // namespace

unsigned fork_generation() noexcept {
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}

}  // namespace csgi
