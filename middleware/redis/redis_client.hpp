#pragma once
/// RedisClient: a small pool of blocking hiredis connections for the Redis session store and rate-limit
/// backend. Each command takes an idle connection (or opens one, at most `max_connections`), runs with
/// `command_timeout`, and returns it. When Redis cannot be reached the client stops trying for a backoff
/// (doubling from `backoff_min` to `backoff_max`): meanwhile every command fails at once with the last
/// error, so a Redis outage costs requests no waiting; the first command after the backoff reconnects.
/// Commands block the calling thread for at most command_timeout: see docs/middleware/redis.md for why
/// that thread is an app pool thread.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace csgi::mw {

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;
  int db = 0;
  std::chrono::milliseconds connect_timeout{250};
  std::chrono::milliseconds command_timeout{500};
  std::size_t max_connections = 16;
  std::chrono::milliseconds backoff_min{100};
  std::chrono::milliseconds backoff_max{5000};
  /// Prefix of every key the stores and backends write ("csgi:").
  std::string prefix = "csgi:";

  /// redis://[:password@]host[:port][/db]; throws std::invalid_argument for anything else.
  static RedisOptions from_url(std::string_view url);
};

/// Redis could not be reached, or answered an error.
class RedisError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct RedisReply {
  enum class Type { nil, string, integer, array, status };
  Type type = Type::nil;
  std::string str;
  std::int64_t integer = 0;
  std::vector<RedisReply> elements;
};

class RedisClient {
public:
  /// Connects nothing yet. Throws std::invalid_argument for a zero max_connections.
  explicit RedisClient(RedisOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  /// Runs one command. Throws RedisError (unreachable, timed out, backing off, or an error reply).
  RedisReply command(std::initializer_list<std::string_view> argv);
  const RedisOptions& options() const noexcept { return options_; }
  /// A new connection outside the pool (AUTH and SELECT done, command_timeout set), for a caller that
  /// keeps it to itself (a SUBSCRIBE); the caller frees it with redisFree. Throws RedisError.
  redisContext* connect();

private:
  /// An idle connection (reused = true) or a new one.
  redisContext* acquire(bool& reused);
  void release(redisContext* c, bool healthy);

  RedisOptions options_;
  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<redisContext*> idle_;
  std::size_t open_ = 0;
  std::chrono::steady_clock::time_point down_until_{};
  std::chrono::milliseconds backoff_{0};
  std::string last_error_;
};

}  // namespace csgi::mw
