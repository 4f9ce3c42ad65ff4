// A thread that takes a fault slot (an io or app pool thread of a prefork worker) runs the fault handler on
// an alternate signal stack of its own, and gives back the one it replaced when it ends: a sanitizer's
// runtime frees its own alternate stack at thread exit, whatever is installed then.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "csgi/adapters/standalone/detail/process/fault.hpp"

namespace {
// Reads the thread's alternate stack when the thread's thread_local objects are destroyed; made before
// take_fault_slot()'s, it is destroyed after it.
struct AltStackAtExit {
  stack_t* out;
  ~AltStackAtExit() { ::sigaltstack(nullptr, out); }
};
}  // namespace

TEST_CASE("standalone: a thread with a fault slot puts back the alternate signal stack it replaced when it ends") {
  stack_t before{}, during{}, after{};  // before: none, or the sanitizer runtime's own
  csgi::standalone::detail::FaultSlot slot;
  std::thread([&] {
    thread_local AltStackAtExit probe{&after};
    ::sigaltstack(nullptr, &before);
    csgi::standalone::detail::take_fault_slot(slot);
    ::sigaltstack(nullptr, &during);
  }).join();
  CHECK(slot.tid.load() != 0);
  CHECK((during.ss_flags & SS_DISABLE) == 0);  // the fault handler's own stack while the thread runs
  CHECK(during.ss_sp != before.ss_sp);
  CHECK(during.ss_size >= 64 * 1024);
  CHECK(after.ss_sp == before.ss_sp);  // the replaced one is back at thread exit
  CHECK(after.ss_size == before.ss_size);
  CHECK((after.ss_flags & SS_DISABLE) == (before.ss_flags & SS_DISABLE));
}
