#pragma once
/// The interfaces behind the `csgix.*` extension keys (spec/csgi.md §Extensions, rules EXT-1…EXT-6).
///
/// An adapter that supports an extension stores an object under its key *as the interface type*
/// (`env.set_object<csgi::Hijack>(keys::x::io, &conn)`), so that `env.object<csgi::Hijack>(keys::x::io)`
/// finds it; an app checks for nullptr before using one. Lint checks the stored types (EXT-1).
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/response.hpp"

namespace csgi {

class Env;

/// csgix.io: the raw connection, for apps that take it over (WebSocket, CONNECT-like upgrades) (EXT-2).
class Hijack {
public:
  virtual ~Hijack() = default;
  /// Hands the connection to the caller: returns a connected socket descriptor in blocking mode that the
  /// caller now owns, and appends to `pending` the bytes the adapter already read past this request.
  /// Returns -1 when the connection cannot be taken (already taken, or not a plain socket). After a
  /// successful take() the adapter writes nothing more on it and ignores the app's response.
  virtual int take(std::string& pending) = 0;
};

/// csgix.logger: a leveled logger supplied by the adapter or a logging middleware (EXT-1).
class Logger {
public:
  enum class Level { debug, info, warn, error, fatal };
  virtual ~Logger() = default;
  virtual void log(Level level, std::string_view message) = 0;
};

/// csgix.session: the session data of this request, owned by the session middleware (EXT-1).
struct Session {
  std::map<std::string, std::string, std::less<>> data;
};

/// csgix.session.options: what the app asks the session middleware to do with the session (EXT-1).
struct SessionOptions {
  std::string id;          // the session id; the middleware sets it
  bool expire = false;     // the app asks for the session to be dropped
  bool change_id = false;  // the app asks for a new id (after login)
  bool no_store = false;   // the app asks not to store changes of this request
};

/// csgix.cleanup.handlers: work to run after the response has been sent (EXT-4).
class CleanupHandlers {
public:
  using Handler = std::function<void(Env&)>;
  /// Adds a handler; may be called from any thread until the adapter runs them.
  void add(Handler h);
  std::size_t size() const;
  /// Runs every handler once, in the order added. An exception from one handler is written to the env's
  /// csgi.errors and the others still run. Handlers added while running run too. Called by the adapter.
  void run(Env& env) noexcept;
  /// Moves the handlers not yet run to the end of `to`'s (an adapter handing a request's env on).
  void move_to(CleanupHandlers& to);

  /// What went out on the wire, for the handlers (an access log's status and body bytes): an adapter
  /// that knows reports it before it runs them (EXT-4). `body_bytes` counts what the client was sent: fewer
  /// than the body when the connection ended first. Kept only while handlers wait (nothing is reported to
  /// no one); forgotten once they have run.
  struct Sent {
    int status = 0;
    std::uint64_t body_bytes = 0;
  };
  void report_sent(Sent sent) const noexcept;
  /// What the adapter reported; none when it did not (the handler then goes by the response it saw).
  std::optional<Sent> sent() const noexcept;

private:
  mutable std::mutex mu_;
  std::vector<Handler> handlers_;
  mutable std::optional<Sent> sent_;
};

/// csgix.informational: interim (1xx) responses before the final one, e.g. 103 Early Hints (EXT-5).
class Informational {
public:
  virtual ~Informational() = default;
  /// Sends an interim response with `status` 100…199 other than 101. Returns false when it was not sent
  /// (HTTP/1.0 client, final response already started, client gone); the final response is unaffected.
  virtual bool send(int status, const Headers& headers) = 0;
};

}  // namespace csgi
