#pragma once
/// Apache htpasswd files for auth_basic: "user:hash" lines, '#' comments and blank lines ignored.
/// Hashes checked: bcrypt ($2y$, $2b$, $2a$), SHA-1 ({SHA}, base64), crypt(3) schemes that libcrypt
/// (libxcrypt) implements — MD5-crypt ($1$), SHA-256/512-crypt ($5$, $6$), yescrypt ($y$), DES (13
/// characters). Hashing is libcrypt's (crypt_ra, thread-safe) and OpenSSL's (SHA-1); comparisons are
/// constant-time. Apache's own MD5 variant ($apr1$, `htpasswd -m`) and plain-text entries are refused
/// when the file is read: regenerate those entries with `htpasswd -B`.
#include <string>
#include <string_view>
#include <unordered_map>

namespace csgi::mw {

class Htpasswd {
public:
  Htpasswd() = default;
  /// Reads `path`. Throws std::runtime_error when it cannot be read, std::invalid_argument (naming the
  /// line) for a malformed or unsupported entry.
  static Htpasswd load(const std::string& path);
  /// Parses file content; `source` names it in error messages.
  static Htpasswd parse(std::string_view text, std::string_view source = "htpasswd");

  /// True when `user` exists and `password` matches. An unknown user costs one check of dummy_hash().
  bool verify(std::string_view user, std::string_view password) const;
  bool contains(std::string_view user) const { return users_.count(std::string(user)) != 0; }
  std::size_t size() const noexcept { return users_.size(); }
  /// The hash checked for an unknown user: the file's costliest (by cost()), so that an unknown user
  /// takes as long as the slowest known one; empty for a file without users.
  std::string_view dummy_hash() const noexcept { return dummy_; }

  /// Checks `password` against one stored hash of a supported scheme.
  static bool verify_hash(std::string_view hash, std::string_view password);
  /// An estimate of the time one check of `hash` takes (microseconds on one x86-64 core), from its
  /// scheme and parameters: bcrypt's cost, SHA-crypt's rounds, yescrypt's N and r.
  static double cost(std::string_view hash);
  /// Whether `hash` is of a supported scheme (and well-formed for libcrypt).
  static bool supported(std::string_view hash);

private:
  std::unordered_map<std::string, std::string> users_;
  std::string dummy_;  // the costliest hash in the file, checked for unknown users
};

}  // namespace csgi::mw
