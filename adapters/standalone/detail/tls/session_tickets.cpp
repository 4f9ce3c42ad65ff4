// Session tickets of the TLS module (see tls_parts.hpp).
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/http.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "csgi/adapters/standalone/detail/tls/tls_parts.hpp"

namespace csgi::standalone::detail {

namespace {
struct TicketSecret {
  unsigned char secret[32];
  TicketSecret() {
    if (RAND_bytes(secret, sizeof secret) != 1) throw std::runtime_error("TLS: no random bytes for ticket keys");
  }
};

TicketSecret& ticket_secret() {
  static TicketSecret s;
  return s;
}

struct TicketKey {
  unsigned char name[16];
  unsigned char aes[32];
  unsigned char hmac[32];
};

bool derive(long period, TicketKey& k) {
  unsigned char in[32 + 8 + 1];
  std::memcpy(in, ticket_secret().secret, 32);
  for (int i = 0; i < 8; ++i) in[32 + i] = static_cast<unsigned char>(static_cast<unsigned long long>(period) >> (8 * i));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  unsigned char* parts[3] = {k.name, k.aes, k.hmac};
  std::size_t sizes[3] = {sizeof k.name, sizeof k.aes, sizeof k.hmac};
  for (int p = 0; p < 3; ++p) {
    in[40] = static_cast<unsigned char>(p);
    if (EVP_Digest(in, sizeof in, out, &len, EVP_sha256(), nullptr) != 1) return false;
    std::memcpy(parts[p], out, sizes[p]);
  }
  OPENSSL_cleanse(in, sizeof in);
  return true;
}

long current_period() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(now).count() / kTicketPeriod);
}

bool use_key(const TicketKey& k, const unsigned char* iv, EVP_CIPHER_CTX* cctx, EVP_MAC_CTX* hctx, int enc) {
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(k.hmac), sizeof k.hmac),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  if (EVP_CipherInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes, iv, enc) != 1) return false;
  return EVP_MAC_CTX_set_params(hctx, params) == 1;
}

}  // namespace

void make_ticket_secret() { ticket_secret(); }

int on_ticket(SSL*, unsigned char key_name[16], unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX* cctx,
              EVP_MAC_CTX* hctx, int enc) {
  long period = current_period();
  TicketKey k;
  if (enc) {
    if (!derive(period, k) || RAND_bytes(iv, 16) != 1) return -1;
    std::memcpy(key_name, k.name, sizeof k.name);
    return use_key(k, iv, cctx, hctx, 1) ? 1 : -1;
  }
  for (long p : {period, period - 1}) {
    if (!derive(p, k)) return -1;
    if (std::memcmp(key_name, k.name, sizeof k.name) != 0) continue;
    if (!use_key(k, iv, cctx, hctx, 0)) return -1;
    // 2: valid, and a new ticket is issued (under the current key). TLS 1.3 tickets are single-use for
    // clients (RFC 8446 §C.4): without a new one each resumed connection would be followed by a full one.
    return 2;
  }
  return 0;  // unknown key (older, or another server's): a full handshake
}

}  // namespace csgi::standalone::detail
