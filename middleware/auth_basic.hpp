#pragma once
/// AuthBasic (Plack::Middleware::Auth::Basic, Monkey's auth plugin): HTTP Basic authentication
/// (RFC 7617) against an htpasswd file (see htpasswd.hpp for the hash schemes) or a callback.
/// A request without valid credentials gets 401 with `WWW-Authenticate: Basic realm="…",
/// charset="UTF-8"` and never reaches the app. The htpasswd file is re-read when it changes — its
/// device, inode, size, modification or change time (so an edit in place, a replacement by rename and
/// emptying are all seen), checked at most once per `reload_interval`. A file that is deleted, cannot
/// be read or no longer parses refuses everyone with 500 until it is fixed (the previous users are not
/// kept); an emptied file refuses everyone with 401. Each such state is logged to csgi.errors once,
/// when the change is seen, not per request.
/// Reads:  HTTP_AUTHORIZATION, csgi.errors.
/// Writes: REMOTE_USER (the user name), AUTH_TYPE ("Basic") on success.
/// Order:  after reverse_proxy/access; before the apps it protects. Not under a cache that ignores Vary.
#include <atomic>
#include <chrono>
#include <cstdint>
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
  /// htpasswd_file/authenticator, and for a malformed htpasswd file; std::runtime_error when unreadable
  /// (at construction; later, such a file refuses every request instead).
  explicit AuthBasic(App next, AuthBasicOptions options);
  Response operator()(Env& env);

  /// Splits an Authorization value "Basic <base64(user:password)>"; false when it is not well-formed.
  static bool parse_credentials(std::string_view header, std::string& user, std::string& password);

private:
  std::shared_ptr<const Htpasswd> current(Env& env);
  void reload(Env& env);
  Response challenge() const;

  /// What stat(2) says of the file; `error` is its errno when it failed.
  struct FileState {
    std::uint64_t dev = 0, ino = 0;
    std::int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
    int error = 0;
    bool operator==(const FileState&) const = default;
  };
  static FileState stat_file(const std::string& path);

  App next_;
  AuthBasicOptions options_;
  std::string challenge_;
  // The loaded htpasswd file (shared configuration, not per-request state).
  std::mutex mu_;
  std::shared_ptr<const Htpasswd> file_;  // null: the file is unusable and everyone is refused
  FileState file_state_;
  std::atomic<std::int64_t> next_check_ns_{0};
};

}  // namespace csgi::mw
