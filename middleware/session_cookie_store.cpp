#include "csgi/middleware/session_store.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace csgi::mw {
namespace {

constexpr std::string_view aad = "csgi.session.v1";
constexpr std::size_t nonce_len = 12, tag_len = 16;

struct MacCtxFree {
  void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
};
using MacCtx = std::unique_ptr<EVP_MAC_CTX, MacCtxFree>;

/// An HMAC-SHA256 context keyed with `key` (OpenSSL's EVP_MAC "HMAC").
MacCtx keyed_hmac(const unsigned char* key, std::size_t key_len) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  MacCtx ctx(mac ? EVP_MAC_CTX_new(mac) : nullptr);
  EVP_MAC_free(mac);  // the context keeps its own reference
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (!ctx || EVP_MAC_init(ctx.get(), key, key_len, params) != 1) throw std::runtime_error("HMAC-SHA256 unavailable");
  return ctx;
}

/// The value of a base64 digit (standard alphabet); -1 for anything else.
int b64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

std::string b64url(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

std::optional<std::string> unb64url(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string s(in);
  for (char& c : s) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
    else if (c == '+' || c == '/' || b64_digit(c) < 0)
      return std::nullopt;  // also '=' and whitespace
  }
  // Canonical only: the bits of the last digit past the data are zero.
  if (std::size_t tail = s.size() % 4; tail != 0 && (b64_digit(s.back()) & (tail == 2 ? 0x0F : 0x03)) != 0)
    return std::nullopt;
  std::size_t pad = (4 - s.size() % 4) % 4;
  s.append(pad, '=');
  std::string out(s.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  if (n < 0 || static_cast<std::size_t>(n) < pad) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

std::string seal(const unsigned char key[32], std::string_view plain) {
  std::string out(nonce_len + plain.size() + tag_len, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, nonce_len) != 1) throw std::runtime_error("RAND_bytes failed");
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, m = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key, o) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(aad.data()), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o + nonce_len, &n, reinterpret_cast<const unsigned char*>(plain.data()), static_cast<int>(plain.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), o + nonce_len + n, &m) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, tag_len, o + nonce_len + plain.size()) != 1)
    throw std::runtime_error("AES-GCM encryption failed");
  return out;
}

std::optional<std::string> open(const unsigned char key[32], std::string_view sealed) {
  if (sealed.size() < nonce_len + tag_len) return std::nullopt;
  auto* in = reinterpret_cast<const unsigned char*>(sealed.data());
  std::size_t len = sealed.size() - nonce_len - tag_len;
  std::string out(len, '\0');
  unsigned char tag[tag_len];
  std::memcpy(tag, in + nonce_len + len, tag_len);
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, m = 0;
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key, in) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(aad.data()), static_cast<int>(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), o, &n, in + nonce_len, static_cast<int>(len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, tag_len, tag) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), o + n, &m) != 1)
    return std::nullopt;
  return out;
}

/// "<expires>\n<id>\n<data>" back into a session; nullopt when malformed or expired.
std::optional<LoadedSession> parse_payload(std::string_view p) {
  std::size_t a = p.find('\n');
  if (a == std::string_view::npos) return std::nullopt;
  std::size_t b = p.find('\n', a + 1);
  if (b == std::string_view::npos || b == a + 1) return std::nullopt;
  long long secs = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + a, secs);
  if (ec != std::errc() || end != p.data() + a) return std::nullopt;
  auto expires = std::chrono::system_clock::time_point(std::chrono::seconds(secs));
  if (expires <= std::chrono::system_clock::now()) return std::nullopt;
  auto data = decode_session(p.substr(b + 1));
  if (!data) return std::nullopt;
  return LoadedSession{std::string(p.substr(a + 1, b - a - 1)), std::move(*data), expires};
}

}  // namespace

/// HMAC-SHA256 under one key: the key is hashed once (OpenSSL's one-shot HMAC() fetches the algorithm and
/// hashes the key on every call), and the keyed contexts are kept for reuse, one per thread at a time.
class CookieSessionStore::Hmac {
 public:
  explicit Hmac(std::string_view key)
      : keyed_(keyed_hmac(reinterpret_cast<const unsigned char*>(key.data()), key.size())) {}

  void operator()(std::string_view msg, unsigned char out[32]) const {
    MacCtx c = take();
    std::size_t n = 0;
    if (!c || EVP_MAC_update(c.get(), reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) != 1 ||
        EVP_MAC_final(c.get(), out, &n, 32) != 1 || n != 32)
      throw std::runtime_error("HMAC failed");
    std::lock_guard lock(mu_);
    if (spare_.size() < 64) spare_.push_back(std::move(c));
  }

 private:
  /// A context ready for a new message: a spare one set back to the key, or a copy of the keyed one.
  MacCtx take() const {
    {
      std::lock_guard lock(mu_);
      if (!spare_.empty()) {
        MacCtx c = std::move(spare_.back());
        spare_.pop_back();
        if (EVP_MAC_init(c.get(), nullptr, 0, nullptr) == 1) return c;
      }
    }
    return MacCtx(EVP_MAC_CTX_dup(keyed_.get()));
  }

  MacCtx keyed_;
  mutable std::mutex mu_;
  mutable std::vector<MacCtx> spare_;
};

CookieSessionStore::CookieSessionStore(CookieSessionStoreOptions options)
    : encrypt_(options.encrypt), max_cookie_bytes_(options.max_cookie_bytes) {
  if (options.secrets.empty()) throw std::invalid_argument("CookieSessionStore: no secret");
  for (const auto& s : options.secrets) {
    if (s.size() < 32) throw std::invalid_argument("CookieSessionStore: a secret needs at least 32 bytes");
    Hmac secret(s);
    unsigned char mac_key[32];
    Keys k;
    secret("csgi.session.mac", mac_key);
    secret("csgi.session.aes", k.aes);
    k.mac = std::make_shared<const Hmac>(std::string_view(reinterpret_cast<const char*>(mac_key), sizeof mac_key));
    OPENSSL_cleanse(mac_key, sizeof mac_key);
    keys_.push_back(std::move(k));
  }
}

std::string CookieSessionStore::save(const std::string& id, const SessionData& data,
                                     std::chrono::system_clock::time_point expires) {
  std::string payload = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count());
  payload += '\n';
  payload += id;
  payload += '\n';
  payload += encode_session(data);
  std::string out;
  if (encrypt_) {
    out = "e." + b64url(seal(keys_.front().aes, payload));
  } else {
    out = "s." + b64url(payload);
    unsigned char mac[32];
    (*keys_.front().mac)(out, mac);
    out += '.';
    out += b64url(std::string_view(reinterpret_cast<const char*>(mac), sizeof mac));
  }
  if (out.size() > max_cookie_bytes_)
    throw std::length_error("session cookie of " + std::to_string(out.size()) + " bytes exceeds " +
                            std::to_string(max_cookie_bytes_));
  return out;
}

std::optional<LoadedSession> CookieSessionStore::load(std::string_view cookie) {
  if (cookie.size() > max_cookie_bytes_) return std::nullopt;
  if (encrypt_) {
    if (cookie.substr(0, 2) != "e.") return std::nullopt;
    auto sealed = unb64url(cookie.substr(2));
    if (!sealed) return std::nullopt;
    for (const Keys& k : keys_)
      if (auto plain = open(k.aes, *sealed)) return parse_payload(*plain);
    return std::nullopt;
  }
  std::size_t dot = cookie.rfind('.');
  if (cookie.substr(0, 2) != "s." || dot < 2) return std::nullopt;
  auto mac = unb64url(cookie.substr(dot + 1));
  if (!mac || mac->size() != 32) return std::nullopt;
  std::string_view signed_part = cookie.substr(0, dot);
  for (const Keys& k : keys_) {
    unsigned char want[32];
    (*k.mac)(signed_part, want);
    if (CRYPTO_memcmp(want, mac->data(), sizeof want) == 0) {
      auto payload = unb64url(signed_part.substr(2));
      return payload ? parse_payload(*payload) : std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace csgi::mw
