#pragma once
// The parts of the TLS module (libcsgi_tls.so) in files of their own: session tickets
// (session_tickets.cpp) and OCSP stapling (ocsp_staple.cpp), used by tls_module.cpp.
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace csgi::standalone::detail {

/// The reason of the first OpenSSL error of this thread (and clears the queue).
std::string tls_error_text();

// Session tickets: the key of each 12-hour period is derived from a random secret made once per server
// (before a prefork master forks, so every worker derives the same keys); a ticket of the current or the
// previous period is accepted (the previous one renewed), so a ticket lives at most 24 hours.
constexpr long kTicketPeriod = 12 * 3600;

/// Makes the secret the ticket keys derive from (once per server, before workers fork).
void make_ticket_secret();

/// SSL_CTX_set_tlsext_ticket_key_evp_cb's callback: the key of the ticket's period.
int on_ticket(SSL* ssl, unsigned char key_name[16], unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX* cctx,
              EVP_MAC_CTX* hctx, int enc);

// OCSP stapling: the response of the responder a certificate names, fetched when the certificates are
// loaded (at start and on SIGHUP, 5 s at most) and stapled while it is valid; none is stapled once it
// expires (no refresh in between), nor when the fetch failed (then the load's notes say why).
struct Staple {
  std::vector<unsigned char> der;
  std::time_t next_update = 0;  // 0: no nextUpdate in the response (stapled as long as it is loaded)
};

/// SSL_CTX_set_tlsext_status_cb's callback: staples `arg` (a Staple) while it is valid.
int on_status(SSL* ssl, void* arg);

/// The OCSP response for the certificate of `ctx` (loaded from `file`), when it names a responder and
/// one answered; else null, with why in `notes`.
std::unique_ptr<Staple> fetch_staple(SSL_CTX* ctx, const std::string& file, std::string& notes);

}  // namespace csgi::standalone::detail
