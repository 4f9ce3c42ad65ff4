#pragma once
/// Apache htpasswd files for auth_basic: "user:hash" lines, '#' comments and blank lines ignored.
/// Hashes checked: bcrypt ($2y$, $2b$, $2a$), SHA-1 ({SHA}, base64), crypt(3) schemes that libcrypt
/// (libxcrypt) implements — MD5-crypt ($1$), SHA-256/512-crypt ($5$, $6$), yescrypt ($y$), DES (13
/// characters). Hashing is libcrypt's (crypt_ra, thread-safe) and OpenSSL's (SHA-1); comparisons are
/// constant-time. Apache's own MD5 variant ($apr1$, `htpasswd -m`) and plain-text entries are refused
/// when the file is read: regenerate those entries with `htpasswd -B`.
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace csgi::mw {

class Htpasswd {
public:
  Htpasswd() = default;
  /// Reads `path`. Throws std::runtime_error when it cannot be read, std::invalid_argument (naming the
  /// line) for a malformed or unsupported entry.
  static Htpasswd load(const std::string& path);
  /// Parses file content; `source` names it in error messages.
  static Htpasswd parse(std::string_view text, std::string_view source = "htpasswd");

  /// True when `user` exists and `password` matches. Every call runs the checks of checks(user), so
  /// that each user, known or not, costs about one check of the file's costliest hash.
  bool verify(std::string_view user, std::string_view password) const;
  bool contains(std::string_view user) const { return users_.count(std::string(user)) != 0; }
  std::size_t size() const noexcept { return users_.size(); }
  /// The hash checked for an unknown user: the file's costliest (by cost()), so that an unknown user
  /// takes as long as the slowest known one; empty for a file without users.
  std::string_view dummy_hash() const noexcept { return dummy_; }
  /// The hashes verify() checks for `user`, in order: the user's own (an unknown user: dummy_hash()),
  /// then, for a hash cheaper than dummy_hash(), settings of dummy_hash()'s scheme whose costs make up
  /// the difference: bcrypt at each lower cost the gap needs (exactly, between bcrypt costs), SHA-crypt
  /// at the missing rounds, yescrypt at each lower N. Only the first decides; the rest are checked and
  /// ignored. A gap below the cheapest setting of the scheme (bcrypt cost 4, 1000 SHA-crypt rounds) is
  /// left, as is any gap under an MD5-crypt, DES or {SHA} costliest hash (at most ~0.1 ms).
  std::vector<std::string_view> checks(std::string_view user) const;

  /// Checks `password` against one stored hash of a supported scheme.
  static bool verify_hash(std::string_view hash, std::string_view password);
  /// An estimate of the time one check of `hash` takes (microseconds on one x86-64 core), from its
  /// scheme and parameters: bcrypt's cost, SHA-crypt's rounds, yescrypt's N and r.
  static double cost(std::string_view hash);
  /// Whether `hash` is of a supported scheme (and well-formed for libcrypt).
  static bool supported(std::string_view hash);

private:
  struct Entry {
    std::string hash;
    std::shared_ptr<const std::vector<std::string>> pads;  // shared by the users of one cost
  };
  std::unordered_map<std::string, Entry> users_;
  std::string dummy_;  // the costliest hash in the file, checked for unknown users
};

}  // namespace csgi::mw
