// A CSGI_APP library for the process tests (test_process.py): /hello, /slow (200 ms), /crash (SIGSEGV in
// the worker, on purpose), /pid (the serving process).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "csgi/core/app_library.hpp"

namespace {
csgi::App make_process_app(const csgi::AppArgs&) {
  return [](csgi::Env& env) {
    std::string_view path = env.get("PATH_INFO");
    if (path == "/crash") ::raise(SIGSEGV);
    if (path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (path == "/pid") return csgi::Response::text(200, std::to_string(::getpid()));
    return csgi::Response::text(200, "hello");
  };
}
}  // namespace

CSGI_APP(make_process_app)
