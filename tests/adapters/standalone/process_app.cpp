// A CSGI_APP library for the process tests (test_process.py, test_workers.py): /hello, /slow (200 ms),
// /crash (SIGSEGV in the worker, on purpose), /pid (the serving process), /sleep?SECONDS (in
// process_app_sleep, a name the request timeout's logged stack shows), /grow?MB (keeps MB mebibytes of
// touched memory for the life of the worker), /server-status (the server_status middleware over the
// adapter's csgix.server_stats). With the app argument "access-log=PATH" the app is
// wrapped in the access_log middleware writing to PATH: its writer is made when the library is loaded,
// in the process that later forks the workers.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/middleware/server_status.hpp"

// The greeting at /hello; the reload test builds a second library that answers another.
#ifndef PROCESS_APP_HELLO
#define PROCESS_APP_HELLO "hello"
#endif

// Exported and not inlined: the request timeout test looks for this name in the logged stack.
extern "C" __attribute__((visibility("default"), noinline)) void process_app_sleep(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  asm volatile("" ::: "memory");  // keeps the call from being a tail call (its frame stays on the stack)
}

namespace {
std::mutex grown_mu;
std::vector<char*> grown;  // what /grow keeps

csgi::App make_process_app(const csgi::AppArgs& args) {
  csgi::App app = [](csgi::Env& env) {
    std::string_view path = env.get("PATH_INFO");
    if (path == "/crash") ::raise(SIGSEGV);
    if (path == "/throw") throw std::runtime_error("thrown by the app");
    if (path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (path == "/pid") return csgi::Response::text(200, std::to_string(::getpid()));
    if (path == "/sleep") {
      process_app_sleep(std::atof(std::string(env.get("QUERY_STRING")).c_str()));
      return csgi::Response::text(200, std::to_string(::getpid()));
    }
    if (path == "/grow") {
      std::size_t bytes = static_cast<std::size_t>(std::atoi(std::string(env.get("QUERY_STRING")).c_str())) << 20;
      char* block = static_cast<char*>(std::malloc(bytes));
      if (block) {
        std::memset(block, 1, bytes);
        std::lock_guard lock(grown_mu);
        grown.push_back(block);  // kept until the worker exits, on purpose (held: not a leak)
      }
      return csgi::Response::text(200, std::to_string(::getpid()));
    }
    return csgi::Response::text(200, PROCESS_APP_HELLO);
  };
  app = csgi::wrap<csgi::mw::ServerStatus>(std::move(app));
  for (const std::string& a : args)
    if (a == "throw") throw std::runtime_error("need a config file");
  for (const std::string& a : args)
    if (a.rfind("access-log=", 0) == 0) {
      csgi::mw::AccessLogOptions o;
      o.format = "common";
      o.path = a.substr(11);
      app = csgi::wrap<csgi::mw::AccessLog>(std::move(app), std::move(o));
    }
  return app;
}
}  // namespace

CSGI_APP(make_process_app)
