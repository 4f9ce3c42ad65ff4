#include "csgi/middleware/auth_basic.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace csgi::mw {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool AuthBasic::parse_credentials(std::string_view h, std::string& user, std::string& password) {
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  if (h.size() < 6 || !iequals(h.substr(0, 5), "basic") || (h[5] != ' ' && h[5] != '\t')) return false;
  h.remove_prefix(6);
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  if (h.empty() || h.size() % 4 != 0 || h.size() > 8192) return false;
  for (std::size_t i = 0; i < h.size(); ++i) {
    char c = h[i];
    bool b64 = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    bool pad = c == '=' && i + 2 >= h.size() && (i + 1 == h.size() || h[i + 1] == '=');
    if (!b64 && !pad) return false;
  }
  std::string decoded(h.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                          reinterpret_cast<const unsigned char*>(h.data()), static_cast<int>(h.size()));
  if (n < 0) return false;
  std::size_t len = static_cast<std::size_t>(n);
  if (h.back() == '=') --len;  // EVP_DecodeBlock counts padding as zero bytes
  if (h.size() >= 2 && h[h.size() - 2] == '=') --len;
  decoded.resize(len);
  auto colon = decoded.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(decoded[i]);
    if (c < 0x20 || c == 0x7f) return false;  // control characters: not a valid user-pass (RFC 7617 §2)
  }
  user = decoded.substr(0, colon);
  password = decoded.substr(colon + 1);
  OPENSSL_cleanse(decoded.data(), decoded.size());
  return true;
}

AuthBasic::AuthBasic(App next, AuthBasicOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("AuthBasic: no next app");
  for (char c : options_.realm)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw std::invalid_argument("AuthBasic: realm must not hold quotes, backslashes or control characters");
  bool file = !options_.htpasswd_file.empty();
  if (file == static_cast<bool>(options_.authenticator))
    throw std::invalid_argument("AuthBasic: give exactly one of htpasswd_file and authenticator");
  if (file) {
    file_state_ = stat_file(options_.htpasswd_file);
    file_ = std::make_shared<const Htpasswd>(Htpasswd::load(options_.htpasswd_file));
    next_check_ns_ = steady_ns() + std::chrono::nanoseconds(options_.reload_interval).count();
  }
  challenge_ = "Basic realm=\"" + options_.realm + "\", charset=\"UTF-8\"";
}

AuthBasic::FileState AuthBasic::stat_file(const std::string& path) {
  FileState f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    f.error = errno;
    return f;
  }
  f.dev = static_cast<std::uint64_t>(st.st_dev);
  f.ino = static_cast<std::uint64_t>(st.st_ino);
  f.size = static_cast<std::int64_t>(st.st_size);
  f.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return f;
}

void AuthBasic::reload(Env& env) {
  const std::string& path = options_.htpasswd_file;
  // Taken before the read: a write racing with it changes the state again, and the next check re-reads.
  FileState now = stat_file(path);
  bool was_usable;
  {
    std::lock_guard lock(mu_);
    if (now == file_state_) return;
    was_usable = file_ != nullptr;
  }
  std::shared_ptr<const Htpasswd> fresh;
  std::string problem;
  if (now.error != 0) {
    problem = "cannot read " + path + ": " + std::strerror(now.error);
  } else {
    try {
      fresh = std::make_shared<const Htpasswd>(Htpasswd::load(path));
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  {
    std::lock_guard lock(mu_);
    file_ = fresh;
    file_state_ = now;
  }
  if (!fresh)
    env.errors().write("auth_basic: refusing every request (500) until the htpasswd file is fixed: " + problem);
  else if (fresh->size() == 0)
    env.errors().write("auth_basic: " + path + " holds no users: every request is refused (401)");
  else if (!was_usable)
    env.errors().write("auth_basic: " + path + " is usable again (" + std::to_string(fresh->size()) + " users)");
}

std::shared_ptr<const Htpasswd> AuthBasic::current(Env& env) {
  if (options_.reload_interval.count() > 0) {
    std::int64_t now = steady_ns();
    std::int64_t due = next_check_ns_.load(std::memory_order_relaxed);
    // One thread wins the check; the others keep using the loaded file.
    if (now >= due && next_check_ns_.compare_exchange_strong(
                          due, now + std::chrono::nanoseconds(options_.reload_interval).count()))
      reload(env);
  }
  std::lock_guard lock(mu_);
  return file_;
}

Response AuthBasic::challenge() const {
  Response r = Response::text(401, "Authorization required\n");
  r.headers.add("WWW-Authenticate", challenge_);
  return r;
}

Response AuthBasic::operator()(Env& env) {
  std::shared_ptr<const Htpasswd> file;
  if (!options_.authenticator) {
    file = current(env);
    if (!file) return Response::error(500, "authentication is unavailable");
  }
  std::string user, password;
  bool ok = parse_credentials(env.get(keys::HTTP_AUTHORIZATION), user, password) &&
            (file ? file->verify(user, password) : options_.authenticator(user, password, env));
  OPENSSL_cleanse(password.data(), password.size());
  if (!ok) return challenge();
  env.set(keys::REMOTE_USER, user);
  env.set("AUTH_TYPE", "Basic");
  return next_(env);
}

}  // namespace csgi::mw
