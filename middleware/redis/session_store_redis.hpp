#pragma once
/// RedisSessionStore: sessions on Redis, shared by every worker and host using the same Redis. The cookie
/// holds the session id (32 hex digits); the session is the string "<expires>\n<data>" under
/// "<prefix>session:<id>", expiring with the session (SET … PX). erase() deletes it, so a logout or a
/// rotated id takes effect everywhere at once. Redis unreachable: load() and save() throw RedisError,
/// which Sessions answers with 503.
#include <memory>

#include "csgi/middleware/redis/redis_client.hpp"
#include "csgi/middleware/session_store.hpp"

namespace csgi::mw {

class RedisSessionStore final : public SessionStore {
public:
  explicit RedisSessionStore(std::shared_ptr<RedisClient> redis);
  std::optional<LoadedSession> load(std::string_view cookie) override;
  std::string save(const std::string& id, const SessionData& data, std::chrono::system_clock::time_point expires) override;
  void erase(const std::string& id) override;

private:
  std::string key(std::string_view id) const;
  std::shared_ptr<RedisClient> redis_;
};

}  // namespace csgi::mw
