#pragma once
/// AuthBasic (Plack::Middleware::Auth::Basic, Monkey's auth plugin): HTTP Basic authentication
/// (RFC 7617) against an htpasswd file (see htpasswd.hpp for the hash schemes) or a callback.
/// A request without valid credentials gets 401 with `WWW-Authenticate: Basic realm="…",
/// charset="UTF-8"` and never reaches the app. The htpasswd file is re-read when its modification
/// time changes (checked at most once per `reload_interval`); a file that no longer parses is logged to
/// csgi.errors and the previous one stays in use.
/// Reads:  HTTP_AUTHORIZATION, csgi.errors.
/// Writes: REMOTE_USER (the user name), AUTH_TYPE ("Basic") on success.
/// Order:  after reverse_proxy/access; before the apps it protects. Not under a cache that ignores Vary.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"
#include "csgi/middleware/htpasswd.hpp"

namespace csgi::mw {

struct AuthBasicOptions {
  std::string realm = "Restricted";
  /// An htpasswd file; or set `authenticator` instead (exactly one of the two).
  std::string htpasswd_file;
  /// Returns whether the user/password pair is valid; called concurrently from several threads.
  std::function<bool(std::string_view user, std::string_view password, Env& env)> authenticator;
  /// How often the file's mtime is checked; zero: never re-read.
  std::chrono::milliseconds reload_interval{1000};
};

class AuthBasic {
public:
  /// Throws std::invalid_argument for a realm with '"', '\\' or control characters, for neither or both of
  /// htpasswd_file/authenticator, and for a malformed htpasswd file; std::runtime_error when unreadable.
  explicit AuthBasic(App next, AuthBasicOptions options);
  Response operator()(Env& env);

  /// Splits an Authorization value "Basic <base64(user:password)>"; false when it is not well-formed.
  static bool parse_credentials(std::string_view header, std::string& user, std::string& password);

private:
  bool check(std::string_view user, std::string_view password, Env& env);
  std::shared_ptr<const Htpasswd> current(Env& env);
  Response challenge() const;

  App next_;
  AuthBasicOptions options_;
  std::string challenge_;
  // The loaded htpasswd file (shared configuration, not per-request state).
  std::mutex mu_;
  std::shared_ptr<const Htpasswd> file_;
  std::int64_t file_mtime_ns_ = 0;
  std::atomic<std::int64_t> next_check_ns_{0};
};

}  // namespace csgi::mw
