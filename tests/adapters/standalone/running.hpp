#pragma once
// The standalone server run in-process for a test: on 127.0.0.1, port 0, on a thread of its own for the
// test's scope, signals left to the test. Shared by the socket tests of tests/adapters/standalone.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"

namespace csgi::standalone_test {

/// The executor the tests run the app on unless they choose: CSGI_TEST_APP_THREADS (the standalone_pool
/// entry of ctest runs every test with the app on a pool), else inline.
inline unsigned default_app_threads() {
  const char* v = std::getenv("CSGI_TEST_APP_THREADS");
  return v ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 0u;
}

/// ServerOptions::app_threads for a test that needs the app inline even under CSGI_TEST_APP_THREADS.
inline constexpr unsigned app_inline = ~0u;

struct Running {
  csgi::standalone::Server server;
  std::thread thread;
  std::future<int> result;  // what run() returned
  int port = 0;             // 0 on a Unix socket
  explicit Running(csgi::App app, csgi::standalone::ServerOptions opt = {})
      : server(std::move(app), [&] {
          opt.handle_signals = false;
          if (opt.listen.empty()) opt.listen = {"127.0.0.1:0"};
          if (opt.app_threads == app_inline)
            opt.app_threads = 0;
          else if (opt.app_threads == 0)
            opt.app_threads = default_app_threads();
          opt.on_listening = [](const std::string&) {};
          return opt;
        }()) {
    std::packaged_task<int()> task([this] { return server.run(); });
    result = task.get_future();
    thread = std::thread(std::move(task));
    REQUIRE(server.wait_listening());
    auto a = server.addresses().front();
    if (a.rfind("unix:", 0) != 0) port = std::stoi(a.substr(a.rfind(':') + 1));
  }
  ~Running() {
    server.stop();
    if (thread.joinable()) thread.join();
  }
};

/// A connected TCP socket to 127.0.0.1:port.
/// A connection to 127.0.0.1:`port`, or -1; asserts nothing, so a client thread may call it (Catch2's
/// assertions are for the test's own thread).
inline int try_connect_tcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

inline int connect_tcp(int port) {
  int fd = try_connect_tcp(port);
  REQUIRE(fd >= 0);
  return fd;
}

/// Sends all of `s` (stops early when the peer is gone).
inline void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (w <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(w));
  }
}

/// Reads until `until` appears, EOF, or the timeout; returns what came.
inline std::string recv_until(int fd, std::string_view until,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (got.find(until) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    got.append(buf, static_cast<std::size_t>(r));
  }
  return got;
}

/// Running with csgi.errors going to a file of its own (named after `name`) that the test reads.
struct LoggedRunning : Running {
  LoggedRunning(csgi::App app, const std::string& name)
      : Running(std::move(app), logged(log_path(name))), path(log_path(name)) {}
  ~LoggedRunning() {
    server.stop();
    if (thread.joinable()) thread.join();
    ::unlink(path.c_str());
  }
  std::string errors() const {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  static std::string log_path(const std::string& name) {
    return "/tmp/csgi-" + name + "-errors-" + std::to_string(::getpid()) + ".log";
  }
  static csgi::standalone::ServerOptions logged(const std::string& path) {
    ::unlink(path.c_str());
    csgi::standalone::ServerOptions opt;
    opt.error_log = path;
    return opt;
  }
  std::string path;
};

/// Sends `requests` on one connection and reads until the server closes it (or `wait` passes). `closed`
/// says which of the two it was.
inline std::string exchange(int port, std::string_view requests, bool& closed,
                            std::chrono::milliseconds wait = std::chrono::milliseconds(5000)) {
  int fd = connect_tcp(port);
  for (std::string_view s = requests; !s.empty();) {
    ssize_t w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    REQUIRE(w > 0);
    s.remove_prefix(static_cast<std::size_t>(w));
  }
  std::string got;
  closed = false;
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) {
      closed = true;
      break;
    }
    got.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  return got;
}

}  // namespace csgi::standalone_test
