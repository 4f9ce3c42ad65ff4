#pragma once
/// Where the Sessions middleware keeps sessions: one interface, three stores.
///   CookieSessionStore  the session itself in the cookie, HMAC-SHA256 signed, optionally AES-256-GCM
///                       encrypted; no server state (a cookie cannot be revoked before it expires).
///   MemorySessionStore  in this process: bounded, expiring, least recently used dropped first. Not shared
///                       between --workers or hosts.
///   (RedisSessionStore, shared by every worker and host, is in session_store_redis.hpp.)
/// A store is called from any thread at once (app pool, io threads) and must be thread-safe.
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/middleware/lru_shards.hpp"

namespace csgi::mw {

using SessionData = std::map<std::string, std::string, std::less<>>;

struct LoadedSession {
  std::string id;
  SessionData data;
  std::chrono::system_clock::time_point expires;
};

class SessionStore {
public:
  virtual ~SessionStore() = default;
  /// The session a cookie value names, or nullopt when it is unknown, expired, tampered with or malformed
  /// (never throws for anything a client sends).
  virtual std::optional<LoadedSession> load(std::string_view cookie) = 0;
  /// Stores the session under `id` until `expires`; returns the cookie value that names it.
  virtual std::string save(const std::string& id, const SessionData& data, std::chrono::system_clock::time_point expires) = 0;
  /// Forgets session `id` (a no-op where the session lives only in the cookie).
  virtual void erase(const std::string& id) = 0;
};

/// Session data as bytes ("<len>:<key><len>:<value>" pairs) and back; nullopt for malformed bytes.
std::string encode_session(const SessionData& data);
std::optional<SessionData> decode_session(std::string_view bytes);

/// 32 lower-case hex digits from OpenSSL's CSPRNG (a session id, a CSRF token).
std::string random_token();

struct CookieSessionStoreOptions {
  /// Secrets, at least 32 bytes each: the first signs (and encrypts), every one verifies, so a new secret
  /// goes first and the old one stays until the cookies it signed have expired (key rotation).
  std::vector<std::string> secrets;
  /// Encrypt the session (AES-256-GCM) instead of only signing it: the client cannot read it.
  bool encrypt = false;
  /// Largest cookie value written; a larger session makes save() throw std::length_error.
  std::size_t max_cookie_bytes = 4000;
};

class CookieSessionStore final : public SessionStore {
public:
  /// Throws std::invalid_argument without a secret or with one under 32 bytes.
  explicit CookieSessionStore(CookieSessionStoreOptions options);
  std::optional<LoadedSession> load(std::string_view cookie) override;
  std::string save(const std::string& id, const SessionData& data, std::chrono::system_clock::time_point expires) override;
  void erase(const std::string&) override {}

private:
 class Hmac;
 struct Keys {
   std::shared_ptr<const Hmac> mac;  // HMAC-SHA256 keyed once with the derived signing key
   unsigned char aes[32];
  };
  std::vector<Keys> keys_;
  bool encrypt_;
  std::size_t max_cookie_bytes_;
};

class MemorySessionStore final : public SessionStore {
public:
  /// At most `max_sessions` sessions (>= 1); the least recently used goes first (LruShards).
  explicit MemorySessionStore(std::size_t max_sessions = 100000) : sessions_(max_sessions) {}
  std::optional<LoadedSession> load(std::string_view cookie) override;
  std::string save(const std::string& id, const SessionData& data, std::chrono::system_clock::time_point expires) override;
  void erase(const std::string& id) override { sessions_.erase(id); }
  /// Sessions held now (expired ones included until they are next touched or pushed out).
  std::size_t size() const { return sessions_.size(); }

private:
  struct Entry {
    SessionData data;
    std::chrono::system_clock::time_point expires;
  };
  LruShards<Entry> sessions_;
};

}  // namespace csgi::mw
