#include "csgi/middleware/htpasswd.hpp"

#include <crypt.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace csgi::mw {

namespace {


bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;  // lengths are fixed per scheme: no secret leaks
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool is_des(std::string_view h) {
  if (h.size() != 13) return false;
  for (char c : h)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '/'))
      return false;
  return true;
}

bool verify_sha1(std::string_view b64, std::string_view password) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(password.data(), password.size(), digest, &len, EVP_sha1(), nullptr) != 1) return false;
  unsigned char out[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  int n = EVP_EncodeBlock(out, digest, static_cast<int>(len));
  return equal_constant_time(b64, std::string_view(reinterpret_cast<char*>(out), static_cast<std::size_t>(n)));
}

bool verify_crypt(std::string_view hash, std::string_view password) {
  if (password.find('\0') != std::string_view::npos) return false;
  std::string phrase(password), setting(hash);
  void* data = nullptr;
  int size = 0;
  const char* out = crypt_ra(phrase.c_str(), setting.c_str(), &data, &size);
  bool ok = out && out[0] != '*' && equal_constant_time(out, hash);
  if (data) {
    std::memset(data, 0, static_cast<std::size_t>(size));  // scrub the key schedule
    std::free(data);
  }
  OPENSSL_cleanse(phrase.data(), phrase.size());
  return ok;
}

/// Position of `c` in crypt's base-64 alphabet "./0-9A-Za-z"; 64 when it is not in it.
unsigned itoa64_index(char c) {
  if (c == '.') return 0;
  if (c == '/') return 1;
  if (c >= '0' && c <= '9') return 2 + static_cast<unsigned>(c - '0');
  if (c >= 'A' && c <= 'Z') return 12 + static_cast<unsigned>(c - 'A');
  if (c >= 'a' && c <= 'z') return 38 + static_cast<unsigned>(c - 'a');
  return 64;
}

/// "rounds=N$" after a $5$/$6$ prefix; 5000 (the default) when absent.
double sha_crypt_rounds(std::string_view params) {
  constexpr std::string_view key = "rounds=";
  if (!params.starts_with(key)) return 5000;
  double n = 0;
  for (std::size_t i = key.size(); i < params.size() && params[i] >= '0' && params[i] <= '9' && n < 1e9; ++i)
    n = n * 10 + (params[i] - '0');
  return std::clamp(n, 1000.0, 999999999.0);
}

/// yescrypt "$y$" + flavor + N_log2 + r (one character each, as libxcrypt writes them): N * r.
double yescrypt_work(std::string_view params) {
  if (params.size() < 3) return 4096.0 * 32;  // libxcrypt's default: 16 MiB
  unsigned n_log2 = itoa64_index(params[1]) + 1, r = itoa64_index(params[2]) + 1;
  if (n_log2 > 40 || r > 47) return 4096.0 * 32;
  return std::ldexp(static_cast<double>(r), static_cast<int>(n_log2));
}

constexpr std::string_view kItoa64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Settings of `costliest`'s scheme (its own salt) whose checks cost about `gap` together (see checks()).
std::vector<std::string> pads_for(std::string_view costliest, double gap) {
  std::vector<std::string> pads;
  if (!(gap > 0)) return pads;
  auto take = [&](const std::string& setting) {
    double c = Htpasswd::cost(setting);
    if (c > gap * (1 + 1e-9)) return;  // a gap of exactly c, up to rounding
    pads.push_back(setting);
    gap -= c;
  };
  if (costliest.starts_with("$2") && costliest.size() >= 29) {
    // "$2y$NN$" + 22 salt characters; bcrypt's work doubles with each cost step.
    std::string setting(costliest.substr(0, 29));
    unsigned top = static_cast<unsigned>((setting[4] - '0') * 10 + (setting[5] - '0'));
    for (unsigned k = std::min(top, 32u); k-- > 4;) {
      setting[4] = static_cast<char>('0' + k / 10);
      setting[5] = static_cast<char>('0' + k % 10);
      take(setting);
    }
  } else if (costliest.starts_with("$5$") || costliest.starts_with("$6$")) {
    std::string_view rest = costliest.substr(3);
    if (rest.starts_with("rounds=")) rest.remove_prefix(std::min(rest.size(), rest.find('$') + 1));
    std::string prefix(costliest.substr(0, 3));
    std::string_view salt = rest.substr(0, rest.find('$'));
    double per_round = Htpasswd::cost(prefix + "rounds=1000000$") / 1000000;
    auto rounds = static_cast<std::uint64_t>(gap / per_round * (1 + 1e-9));
    if (rounds >= 1000) take(prefix + "rounds=" + std::to_string(rounds) + "$" + std::string(salt) + "$");
  } else if (costliest.starts_with("$y$")) {
    // "$y$" + flavour, N_log2 - 1, r - 1 (+ more parameters) "$" salt "$": work N * r, N down to 4.
    std::string_view rest = costliest.substr(3);
    std::string params(rest.substr(0, rest.find('$')));
    rest.remove_prefix(std::min(rest.size(), params.size() + 1));
    std::string salt(rest.substr(0, rest.find('$')));
    if (params.size() < 3 || itoa64_index(params[1]) >= 64) return pads;
    for (unsigned i = itoa64_index(params[1]); i-- > 1;) {
      params[1] = kItoa64[i];
      take("$y$" + params + "$" + salt + "$");
    }
  }
  return pads;
}

}  // namespace

double Htpasswd::cost(std::string_view hash) {
  // Microseconds per check measured on one x86-64 core (libxcrypt 4.4, OpenSSL 3); only the order matters.
  if (hash.starts_with("{SHA}")) return 1;
  if (hash.starts_with("$2")) {
    auto digit = [&](std::size_t i) { return hash.size() > i && hash[i] >= '0' && hash[i] <= '9'; };
    unsigned c = digit(4) && digit(5) ? static_cast<unsigned>((hash[4] - '0') * 10 + (hash[5] - '0')) : 0;
    return std::ldexp(48.0, static_cast<int>(std::min(c, 31u)));
  }
  if (hash.starts_with("$y$")) return yescrypt_work(hash.substr(3)) * 0.12;
  if (hash.starts_with("$6$")) return sha_crypt_rounds(hash.substr(3)) * 0.28;
  if (hash.starts_with("$5$")) return sha_crypt_rounds(hash.substr(3)) * 0.2;
  if (hash.starts_with("$1$")) return 100;
  return 5;  // DES
}

bool Htpasswd::supported(std::string_view hash) {
  if (hash.starts_with("{SHA}")) return hash.size() == 5 + 28;
  bool known = hash.starts_with("$2y$") || hash.starts_with("$2b$") || hash.starts_with("$2a$") ||
               hash.starts_with("$1$") || hash.starts_with("$5$") || hash.starts_with("$6$") ||
               hash.starts_with("$y$") || is_des(hash);
  if (!known) return false;
  std::string h(hash);
  int r = crypt_checksalt(h.c_str());
  return r == CRYPT_SALT_OK || r == CRYPT_SALT_METHOD_LEGACY || r == CRYPT_SALT_TOO_CHEAP;
}

bool Htpasswd::verify_hash(std::string_view hash, std::string_view password) {
  if (hash.starts_with("{SHA}")) return verify_sha1(hash.substr(5), password);
  return verify_crypt(hash, password);
}

Htpasswd Htpasswd::parse(std::string_view text, std::string_view source) {
  Htpasswd h;
  std::size_t lineno = 0;
  while (!text.empty()) {
    ++lineno;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    auto where = [&] { return std::string(source) + ":" + std::to_string(lineno) + ": "; };
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      throw std::invalid_argument(where() + "expected user:hash");
    std::string_view user = line.substr(0, colon);
    std::string_view hash = line.substr(colon + 1);
    // Apache allows trailing ":comment" fields after the hash; bcrypt and crypt hashes hold no ':'.
    if (auto c2 = hash.find(':'); c2 != std::string_view::npos) hash = hash.substr(0, c2);
    if (hash.starts_with("$apr1$"))
      throw std::invalid_argument(where() + "Apache MD5 ($apr1$) is not supported by libcrypt; regenerate the "
                                            "entry for '" + std::string(user) + "' with htpasswd -B");
    if (!supported(hash))
      throw std::invalid_argument(where() + "unsupported or malformed hash for '" + std::string(user) +
                                  "' (plain text is not accepted; use htpasswd -B)");
    if (!h.users_.emplace(std::string(user), Entry{std::string(hash), nullptr}).second)
      throw std::invalid_argument(where() + "duplicate user '" + std::string(user) + "'");
    if (h.dummy_.empty() || cost(hash) > cost(h.dummy_)) h.dummy_ = hash;
  }
  // Users of a cheaper hash than the costliest check pads after their own (see checks()).
  const double top = h.dummy_.empty() ? 0 : cost(h.dummy_);
  std::map<double, std::shared_ptr<const std::vector<std::string>>> by_cost;
  for (auto& [name, entry] : h.users_) {
    double own = cost(entry.hash);
    auto& pads = by_cost[own];
    if (!pads) pads = std::make_shared<const std::vector<std::string>>(pads_for(h.dummy_, top - own));
    entry.pads = pads;
  }
  return h;
}

Htpasswd Htpasswd::load(const std::string& path) {
  auto fail = [&](std::string_view what, int e) {
    return std::runtime_error("htpasswd: cannot read " + path + ": " + std::string(what) +
                              (e ? std::string(std::strerror(e)) : std::string()));
  };
  // O_NONBLOCK: a FIFO put in the file's place must not hang the request that re-reads it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw fail("", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw fail("", errno);
  if (!S_ISREG(st.st_mode)) throw fail("not a regular file", 0);
  std::string text;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("", errno);
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (64u << 20)) throw fail("larger than 64 MiB", 0);
  }
  return parse(text, path);
}

std::vector<std::string_view> Htpasswd::checks(std::string_view user) const {
  std::vector<std::string_view> out;
  auto it = users_.find(std::string(user));
  if (it == users_.end()) {
    if (!dummy_.empty()) out.push_back(dummy_);
    return out;
  }
  out.reserve(1 + it->second.pads->size());
  out.push_back(it->second.hash);
  for (const auto& pad : *it->second.pads) out.push_back(pad);
  return out;
}

bool Htpasswd::verify(std::string_view user, std::string_view password) const {
  std::vector<std::string_view> list = checks(user);
  bool ok = false;
  for (std::size_t i = 0; i < list.size(); ++i) {
    bool match = verify_hash(list[i], password);  // every check runs, whatever the first one said
    if (i == 0) ok = match && contains(user);
  }
  return ok;
}

}  // namespace csgi::mw
