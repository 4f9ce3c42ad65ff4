// OCSP stapling of the TLS module (see tls_parts.hpp).
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

int on_status(SSL* ssl, void* arg) {
  auto* st = static_cast<const Staple*>(arg);
  if (!st || st->der.empty() || (st->next_update != 0 && std::time(nullptr) >= st->next_update))
    return SSL_TLSEXT_ERR_NOACK;
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(st->der.size()));
  if (!copy) return SSL_TLSEXT_ERR_NOACK;
  std::memcpy(copy, st->der.data(), st->der.size());
  if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(st->der.size())) != 1) {
    OPENSSL_free(copy);
    return SSL_TLSEXT_ERR_NOACK;
  }
  return SSL_TLSEXT_ERR_OK;
}

X509* issuer_in_chain(SSL_CTX* ctx, X509* cert) {
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  for (int i = 0; chain && i < sk_X509_num(chain); ++i)
    if (X509_check_issued(sk_X509_value(chain, i), cert) == X509_V_OK) return sk_X509_value(chain, i);
  return nullptr;
}

// The response for `ctx`'s certificate from the responder it names, checked (signed for this
// certificate by its issuer or a responder the issuer delegated to, status good, not expired); nullptr
// with a note when the certificate names none (no note) or the fetch or the check failed.
std::unique_ptr<Staple> fetch_staple(SSL_CTX* ctx, const std::string& file, std::string& notes) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  STACK_OF(OPENSSL_STRING)* urls = X509_get1_ocsp(cert);
  if (!urls || sk_OPENSSL_STRING_num(urls) == 0) {
    X509_email_free(urls);
    return nullptr;
  }
  std::string url = sk_OPENSSL_STRING_value(urls, 0);
  X509_email_free(urls);
  auto note = [&](const std::string& why) {
    notes += (notes.empty() ? "" : "; ") + ("--tls-cert " + file + ": no OCSP stapling (" + url + ": " + why + ")");
    ERR_clear_error();
    return nullptr;
  };
  X509* issuer = issuer_in_chain(ctx, cert);
  if (!issuer) return note("the issuer's certificate is not in the chain file");
  char *host = nullptr, *port = nullptr, *path = nullptr;
  int use_ssl = 0;
  if (OSSL_HTTP_parse_url(url.c_str(), &use_ssl, nullptr, &host, &port, nullptr, &path, nullptr, nullptr) != 1)
    return note("not a URL");
  std::unique_ptr<Staple> out;
  OCSP_CERTID* id = OCSP_cert_to_id(nullptr, cert, issuer);
  OCSP_REQUEST* req = OCSP_REQUEST_new();
  BIO* req_bio = nullptr;
  BIO* resp_bio = nullptr;
  OCSP_RESPONSE* resp = nullptr;
  OCSP_BASICRESP* basic = nullptr;
  std::string why;
  if (id && req && OCSP_request_add0_id(req, OCSP_CERTID_dup(id)))
    req_bio = ASN1_item_i2d_mem_bio(ASN1_ITEM_rptr(OCSP_REQUEST), reinterpret_cast<const ASN1_VALUE*>(req));
  if (req_bio)
    resp_bio = OSSL_HTTP_transfer(nullptr, host, port, path, use_ssl, nullptr, nullptr, nullptr, nullptr, nullptr,
                                  nullptr, 0, nullptr, "application/ocsp-request", req_bio,
                                  "application/ocsp-response", 1, 100 * 1024, 5, 0);
  if (!resp_bio) why = "no response: " + tls_error_text();
  else if (!(resp = d2i_OCSP_RESPONSE_bio(resp_bio, nullptr))) why = "not an OCSP response";
  else if (OCSP_response_status(resp) != OCSP_RESPONSE_STATUS_SUCCESSFUL) why = "the responder answered an error";
  else if (!(basic = OCSP_response_get1_basic(resp))) why = "no basic response";
  else {
    STACK_OF(X509)* certs = sk_X509_new_null();
    X509_STORE* store = X509_STORE_new();
    if (certs) sk_X509_push(certs, issuer);
    if (store) X509_STORE_add_cert(store, issuer);
    int status = -1, reason = 0;
    ASN1_GENERALIZEDTIME *rev = nullptr, *this_update = nullptr, *next_update = nullptr;
    if (!certs || !store || OCSP_basic_verify(basic, certs, store, OCSP_TRUSTOTHER) != 1)
      why = "the response's signature does not verify";
    else if (OCSP_resp_find_status(basic, id, &status, &reason, &rev, &this_update, &next_update) != 1)
      why = "the response is not about this certificate";
    else if (status != V_OCSP_CERTSTATUS_GOOD)
      why = status == V_OCSP_CERTSTATUS_REVOKED ? "the certificate is revoked" : "the certificate's status is unknown";
    else if (OCSP_check_validity(this_update, next_update, 300, -1) != 1)
      why = "the response is out of date";
    else {
      out = std::make_unique<Staple>();
      unsigned char* der = nullptr;
      int len = i2d_OCSP_RESPONSE(resp, &der);
      if (len > 0) out->der.assign(der, der + len);
      OPENSSL_free(der);
      std::tm tm{};
      if (next_update && ASN1_TIME_to_tm(next_update, &tm) == 1) out->next_update = ::timegm(&tm);
      if (out->der.empty()) {
        out.reset();
        why = "cannot encode the response";
      }
    }
    X509_STORE_free(store);
    sk_X509_free(certs);
  }
  OCSP_BASICRESP_free(basic);
  OCSP_RESPONSE_free(resp);
  BIO_free(resp_bio);
  BIO_free(req_bio);
  OCSP_REQUEST_free(req);
  OCSP_CERTID_free(id);
  OPENSSL_free(host);
  OPENSSL_free(port);
  OPENSSL_free(path);
  if (!out) return note(why);
  return out;
}

}  // namespace csgi::standalone::detail
