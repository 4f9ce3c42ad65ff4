// The app behind the reliability tests (tests/reliability/*.py):
//   /canary, /smuggled   markers the bad-request replayer looks for
//   /sleep?ms=N          answers after N ms from a timer thread (a delayed response: no server thread held)
//   /sleeping            how many /sleep requests the app has begun and not yet answered
//   /later               a delayed response answered by the app's one long-lived worker thread (as apps
//                        with a thread pool do; the soak uses it)
//   /crash?KIND          a fault in the app (fault tests): raise (default) raises SIGSEGV, null writes
//                        through a null pointer, stack overflows the stack, fpe divides by zero
//   anything else        reads the whole body and answers 200 with its size
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "csgi/core/app_library.hpp"

namespace {
// Deep enough to overflow any thread stack; volatile keeps the frames.
int overflow(int depth) {
  if (depth > (1 << 30)) return 0;  // never: 4 TiB of stack
  volatile char frame[4096];
  std::memset(const_cast<char*>(frame), depth & 0xff, sizeof frame);
  return frame[depth % sizeof frame] + overflow(depth + 1);
}

[[noreturn]] void crash(std::string_view kind) {
  if (kind == "null") {
    volatile int* volatile p = nullptr;
    *p = 1;
  } else if (kind == "stack") {
    overflow(0);
  } else if (kind == "fpe") {
    volatile int zero = 0;
    volatile int x = 1 / zero;
    (void)x;
  }
  std::raise(SIGSEGV);
  std::abort();  // not reached: the signal ends the call
}

// One worker thread answering queued responders; stopped and joined when the library is unloaded.
class Worker {
public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void answer(csgi::Responder r) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(r));
    }
    cv_.notify_one();
  }

private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      csgi::Responder r = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      r.respond(csgi::Response::text(200, "answered later\n"));
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<csgi::Responder> queue_;
  bool stop_ = false;
  std::thread thread_;
};

Worker& worker() {
  static Worker w;
  return w;
}

std::atomic<long> sleeping{0};

csgi::Response canary(csgi::Env& env) {
  std::string_view path = env.get(csgi::keys::PATH_INFO);
  if (path == "/canary") return csgi::Response::text(200, "canary-answered\n");
  if (path == "/smuggled") return csgi::Response::text(200, "smuggled-answered\n");
  if (path == "/crash") crash(env.get(csgi::keys::QUERY_STRING));
  if (path == "/later") return csgi::Response::delayed([](csgi::Responder r) { worker().answer(std::move(r)); });
  if (path == "/sleeping") return csgi::Response::text(200, std::to_string(sleeping.load()) + "\n");
  if (path == "/sleep") {
    std::string_view q = env.get(csgi::keys::QUERY_STRING);
    long ms = q.substr(0, 3) == "ms=" ? std::strtol(std::string(q.substr(3)).c_str(), nullptr, 10) : 100;
    sleeping.fetch_add(1);
    return csgi::Response::delayed([ms](csgi::Responder r) {
      std::thread([r, ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        sleeping.fetch_sub(1);
        r.respond(csgi::Response::text(200, "slept " + std::to_string(ms) + " ms\n"));
      }).detach();
    });
  }
  std::string body = env.input().read_all();
  return csgi::Response::text(200, "path=" + std::string(path) + " body=" + std::to_string(body.size()) + "\n");
}
csgi::App make(const csgi::AppArgs&) { return canary; }
}  // namespace

CSGI_APP(make)
