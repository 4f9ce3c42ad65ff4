#pragma once
// The redis-server the Redis tests start for themselves (middleware_redis_tests).
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "csgi/middleware/redis/redis_client.hpp"
#include "harness.hpp"

namespace csgi::test {

/// A redis-server of the test's own: a temporary config, 127.0.0.1 on a free port, no persistence.
class RedisServer {
public:
  RedisServer() : port_(free_port()) {}
  /// False (with `why`) when redis-server is not installed or does not come up.
  bool start(std::string& why) {
    if (::access("/usr/bin/redis-server", X_OK) != 0) {
      why = "redis-server not installed (Debian: redis-server)";
      return false;
    }
    std::string conf = dir_ / "redis.conf";
    write_file(conf, "port " + std::to_string(port_) + "\nbind 127.0.0.1\nprotected-mode yes\nsave \"\"\n"
                           "appendonly no\ndaemonize no\ndir " + dir_.path() + "\nlogfile \"\"\n");
    proc_.emplace(std::vector<std::string>{"/usr/bin/redis-server", conf}, dir_ / "redis.log");
    if (!wait_for_port(port_, std::chrono::seconds(10))) {
      why = "redis-server did not start: " + read_file(dir_ / "redis.log");
      return false;
    }
    return true;
  }
  void stop() { proc_.reset(); }
  pid_t pid() { return proc_ ? proc_->pid() : -1; }
  int port() const { return port_; }

private:
  TempDir dir_;
  int port_;
  std::optional<Process> proc_;
};

/// A client of the server on `port` with short timeouts and backoff, so that a stopped server is seen soon.
inline std::shared_ptr<mw::RedisClient> redis_client(int port) {
  mw::RedisOptions o = mw::RedisOptions::from_url("redis://127.0.0.1:" + std::to_string(port));
  o.command_timeout = std::chrono::milliseconds(300);
  o.backoff_min = std::chrono::milliseconds(20);
  o.backoff_max = std::chrono::milliseconds(100);
  return std::make_shared<mw::RedisClient>(o);
}

}  // namespace csgi::test
