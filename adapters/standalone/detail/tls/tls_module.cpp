// The TLS module, libcsgi_tls.so (see tls.hpp): OpenSSL contexts, certificates chosen by SNI, session
// tickets with rotating keys, and the server side of a connection on its non-blocking socket.
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/http.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/detail/tls/tls_parts.hpp"

namespace csgi::standalone::detail {

/// The reason of the first OpenSSL error of this thread (and clears the queue).
std::string tls_error_text() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

namespace {

/// The ALPN protocols offered, in the server's order of preference (RFC 7301 wire format, each name
/// preceded by its length): h2 first when HTTP/2 is on (RFC 9113 §3.2), then http/1.1.
std::string_view alpn_protocols(bool h2) noexcept {
  static constexpr char with_h2[] = "\x02h2\x08http/1.1";
  static constexpr char http1[] = "\x08http/1.1";
  return h2 ? std::string_view{with_h2, sizeof with_h2 - 1} : std::string_view{http1, sizeof http1 - 1};
}
// The select callback's argument: whether h2 is offered.
const bool kOfferH2 = true, kHttp1Only = false;


// Mozilla "intermediate" (TLS 1.2 ciphers; TLS 1.3 suites are OpenSSL's defaults, all of them AEAD).
constexpr const char* kCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
constexpr const char* kGroups = "X25519:prime256v1:secp384r1";


int on_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
            void* arg) {
  std::string_view ours = alpn_protocols(*static_cast<const bool*>(arg));
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, reinterpret_cast<const unsigned char*>(ours.data()),
                            static_cast<unsigned>(ours.size()), in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // RFC 7301 §3.2: no_application_protocol
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

[[noreturn]] void fail(std::string_view option, const std::string& file, const std::string& why) {
  throw std::runtime_error(std::string(option) + " " + file + ": " + why);
}

// A missing or unreadable file is named with the system's reason, before OpenSSL's less clear one.
void check_readable(std::string_view option, const std::string& file) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) fail(option, file, std::strerror(errno));
  std::fclose(f);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string asn1_time_text(const ASN1_TIME* t) {
  BIO* b = BIO_new(BIO_s_mem());
  if (!b) return "?";
  ASN1_TIME_print(b, t);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n > 0 ? n : 0));
  BIO_free(b);
  return out;
}

std::vector<std::string> dns_names(X509* cert) {
  std::vector<std::string> names;
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type != GEN_DNS) continue;
      const unsigned char* d = ASN1_STRING_get0_data(g->d.dNSName);
      names.push_back(lower({reinterpret_cast<const char*>(d), static_cast<std::size_t>(ASN1_STRING_length(g->d.dNSName))}));
    }
    GENERAL_NAMES_free(sans);
  }
  if (names.empty()) {
    char cn[256] = {0};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0) names.push_back(lower(cn));
  }
  return names;
}

bool name_matches(std::string_view pattern, std::string_view host) {
  if (pattern == host) return true;
  // "*.example.com" matches one label: a.example.com, not example.com nor a.b.example.com.
  if (pattern.size() > 2 && pattern.substr(0, 2) == "*.") {
    auto dot = host.find('.');
    return dot != std::string_view::npos && dot > 0 && host.substr(dot) == pattern.substr(1);
  }
  return false;
}

// DHE with the RFC 7919 group ffdhe2048, as Mozilla's configuration says (OpenSSL's automatic choice is
// RFC 3526's group 14, a prime widely shared, which testssl.sh flags under LOGJAM).
bool use_ffdhe2048(SSL_CTX* ctx) {
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_from_name(nullptr, "DH", nullptr);
  if (!pctx) return false;
  EVP_PKEY* pkey = nullptr;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, const_cast<char*>("ffdhe2048"), 0),
                         OSSL_PARAM_construct_end()};
  bool ok = EVP_PKEY_paramgen_init(pctx) == 1 && EVP_PKEY_CTX_set_params(pctx, params) == 1 &&
            EVP_PKEY_paramgen(pctx, &pkey) == 1;
  EVP_PKEY_CTX_free(pctx);
  if (!ok) return false;
  if (SSL_CTX_set0_tmp_dh_pkey(ctx, pkey) != 1) {
    EVP_PKEY_free(pkey);
    return false;
  }
  return true;
}

SSL_CTX* make_context(const TlsCertificate& c, const std::string& client_ca, bool h2) {
  if (c.key_file.empty()) fail("--tls-cert", c.cert_file, "no --tls-key given for it (they come in pairs)");
  if (c.cert_file.empty()) fail("--tls-key", c.key_file, "no --tls-cert given for it (they come in pairs)");
  check_readable("--tls-cert", c.cert_file);
  check_readable("--tls-key", c.key_file);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) throw std::runtime_error("TLS: " + tls_error_text());
  try {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_set_cipher_list(ctx, kCiphers) != 1 || SSL_CTX_set1_groups_list(ctx, kGroups) != 1)
      throw std::runtime_error("TLS: " + tls_error_text());
    if (!use_ffdhe2048(ctx)) throw std::runtime_error("TLS: cannot set the DHE group: " + tls_error_text());
    if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1)
      fail("--tls-cert", c.cert_file, "not a PEM certificate chain (" + tls_error_text() + ")");
    // OpenSSL's default passphrase callback prompts on the terminal: this one refuses at once, noting that
    // the key asked for a passphrase.
    bool encrypted = false;
    SSL_CTX_set_default_passwd_cb_userdata(ctx, &encrypted);
    SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void* asked) {
      if (asked) *static_cast<bool*>(asked) = true;
      return 0;
    });
    int loaded = SSL_CTX_use_PrivateKey_file(ctx, c.key_file.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
    if (loaded != 1 && encrypted) {
      ERR_clear_error();
      fail("--tls-key", c.key_file,
           "not an unencrypted PEM private key (it is protected by a passphrase, which csgi does not ask for; "
           "decrypt it: openssl pkey -in KEY -out PLAIN_KEY)");
    }
    if (loaded != 1) {
      bool mismatch = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH ||
                      ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      std::string why = tls_error_text();
      if (mismatch) fail("--tls-key", c.key_file, "does not match the certificate " + c.cert_file);
      fail("--tls-key", c.key_file, "not an unencrypted PEM private key (" + why + ")");
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      fail("--tls-key", c.key_file, "does not match the certificate " + c.cert_file);
    }
    X509* cert = SSL_CTX_get0_certificate(ctx);
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
      fail("--tls-cert", c.cert_file, "the certificate expired on " + asn1_time_text(X509_get0_notAfter(cert)));
    if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
      fail("--tls-cert", c.cert_file, "the certificate is not valid before " + asn1_time_text(X509_get0_notBefore(cert)));
    if (!client_ca.empty()) {
      check_readable("--tls-client-ca", client_ca);
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca.c_str());
      if (!names || SSL_CTX_load_verify_locations(ctx, client_ca.c_str(), nullptr) != 1) {
        if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
        fail("--tls-client-ca", client_ca, "no PEM CA certificate in it (" + tls_error_text() + ")");
      }
      SSL_CTX_set_client_CA_list(ctx, names);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      SSL_CTX_set_verify_depth(ctx, 4);
    }
    static const unsigned char sid_ctx[] = "csgi";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
    SSL_CTX_set_timeout(ctx, kTicketPeriod);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, const_cast<bool*>(h2 ? &kOfferH2 : &kHttp1Only));
  } catch (...) {
    SSL_CTX_free(ctx);
    throw;
  }
  return ctx;
}

/// One load of the certificates: an SSL_CTX per certificate, the first the default, the others chosen by SNI.
class TlsGeneration {
public:
  TlsGeneration(const std::vector<TlsCertificate>& certs, const std::string& client_ca, bool h2);
  ~TlsGeneration();
  TlsGeneration(const TlsGeneration&) = delete;
  TlsGeneration& operator=(const TlsGeneration&) = delete;
  SSL* accept() const;
  bool asks_client_cert() const noexcept { return client_ca_; }
  const std::string& notes() const noexcept { return notes_; }

private:
  struct Entry {
    SSL_CTX* ctx = nullptr;
    std::vector<std::string> names;  // DNS names of the certificate (SAN, else CN), lower case
    std::unique_ptr<Staple> staple;  // its OCSP response, when the certificate names a responder
  };
  std::vector<Entry> entries_;
  bool client_ca_ = false;
  std::string notes_;  // what the load has to say that is not an error (OCSP responses not fetched)
  static int on_servername(SSL* ssl, int* alert, void* arg);
  SSL_CTX* for_name(std::string_view host) const;
};

TlsGeneration::TlsGeneration(const std::vector<TlsCertificate>& certs, const std::string& client_ca, bool h2)
    : client_ca_(!client_ca.empty()) {
  if (certs.empty()) throw std::runtime_error("TLS: no certificate (--tls-cert FILE --tls-key FILE)");
  make_ticket_secret();
  try {
    for (const TlsCertificate& c : certs) {
      Entry e;
      e.ctx = make_context(c, client_ca, h2);
      e.names = dns_names(SSL_CTX_get0_certificate(e.ctx));
      e.staple = fetch_staple(e.ctx, c.cert_file, notes_);
      if (e.staple) {
        SSL_CTX_set_tlsext_status_cb(e.ctx, on_status);
        SSL_CTX_set_tlsext_status_arg(e.ctx, e.staple.get());
      }
      entries_.push_back(std::move(e));
    }
  } catch (...) {
    for (Entry& e : entries_) SSL_CTX_free(e.ctx);
    throw;
  }
  SSL_CTX_set_tlsext_servername_callback(entries_.front().ctx, on_servername);
  SSL_CTX_set_tlsext_servername_arg(entries_.front().ctx, this);
}

TlsGeneration::~TlsGeneration() {
  for (Entry& e : entries_) SSL_CTX_free(e.ctx);
}

SSL* TlsGeneration::accept() const {
  SSL* ssl = SSL_new(entries_.front().ctx);
  if (ssl) SSL_set_accept_state(ssl);
  return ssl;
}

SSL_CTX* TlsGeneration::for_name(std::string_view host) const {
  std::string h = lower(host);
  for (const Entry& e : entries_)
    for (const std::string& n : e.names)
      if (name_matches(n, h)) return e.ctx;
  return entries_.front().ctx;
}

// SNI: the certificate whose names match the host the client asked for; the first one otherwise.
int TlsGeneration::on_servername(SSL* ssl, int*, void* arg) {
  const char* host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (!host) return SSL_TLSEXT_ERR_OK;
  auto* self = static_cast<const TlsGeneration*>(arg);
  SSL_CTX* ctx = self->for_name(host);
  if (ctx != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, ctx);
  return SSL_TLSEXT_ERR_OK;
}

/// The server side of one connection. It keeps the certificates it was accepted with.
// The session's BIO: reads come from the session's ciphertext buffer, which the connection fills (its
// reactor's read into in_room(), or fill() when it waits itself), so that waiting for bytes costs no
// epoll_ctl; writes go to the socket at once.
class OpenSslSession;
BIO_METHOD* bio_method();

// SSL_get_error needs an empty error queue before the call; it is almost always empty already, and
// looking is cheaper than clearing (ERR_clear_error walks the whole queue: 9% of a keep-alive request).
inline void clear_errors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

class OpenSslSession final : public TlsSession {
public:
  OpenSslSession(SSL* ssl, int fd, std::shared_ptr<const TlsGeneration> gen)
      : ssl_(ssl), fd_(fd), gen_(std::move(gen)) {}
  ~OpenSslSession() override { SSL_free(ssl_); }
  bool attach() {
    BIO* bio = BIO_new(bio_method());
    if (!bio) return false;
    BIO_set_data(bio, this);
    BIO_set_init(bio, 1);
    SSL_set_bio(ssl_, bio, bio);
    return true;
  }
  std::pair<char*, std::size_t> in_room() override {
    if (in_pos_ == in_end_) in_pos_ = in_end_ = 0;
    return {in_ + in_end_, sizeof in_ - in_end_};
  }
  void in_added(std::size_t n) override { in_end_ += n; }
  void in_eof() override { in_eof_ = true; }
  ssize_t fill() override {
    auto [p, n] = in_room();
    ssize_t r = ::recv(fd_, p, n, 0);
    if (r > 0) in_end_ += static_cast<std::size_t>(r);
    else if (r == 0) in_eof_ = true;
    return r;
  }
  int bio_read(char* out, int len) {
    std::size_t have = in_end_ - in_pos_;
    if (have == 0) {
      if (in_eof_) return 0;
      return -1;  // the caller sets retry: WANT_READ
    }
    std::size_t k = std::min(have, static_cast<std::size_t>(len));
    std::memcpy(out, in_ + in_pos_, k);
    in_pos_ += k;
    return static_cast<int>(k);
  }
  int bio_write(const char* data, int len) {
    for (;;) {
      ssize_t w = ::send(fd_, data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
      if (w >= 0) return static_cast<int>(w);
      if (errno != EINTR) return -1;
    }
  }
  ssize_t recv(char* buf, std::size_t n) override {
    std::size_t got = 0;
    clear_errors();
    int r = SSL_read_ex(ssl_, buf, n, &got);
    return result(r, got);
  }
  ssize_t send(const char* buf, std::size_t n) override {
    std::size_t done = 0;
    clear_errors();
    int r = SSL_write_ex(ssl_, buf, n, &done);
    return result(r, done);
  }
  bool want_write() const noexcept override { return want_write_; }
  void shutdown() noexcept override {
    ERR_clear_error();
    (void)SSL_shutdown(ssl_);
    ERR_clear_error();
  }
  void info(TlsInfo& out) override;
  std::string_view alpn() const noexcept override {
    const unsigned char* p = nullptr;
    unsigned int n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return p ? std::string_view(reinterpret_cast<const char*>(p), n) : std::string_view{};
  }

private:
  ssize_t result(int r, std::size_t done);
  SSL* ssl_;
  int fd_;
  std::shared_ptr<const TlsGeneration> gen_;
  bool want_write_ = false;
  bool in_eof_ = false;
  std::size_t in_pos_ = 0, in_end_ = 0;
  char in_[SSL3_RT_MAX_PLAIN_LENGTH + 512];  // one TLS record and its header with room to spare
};

int session_bio_read(BIO* b, char* out, int len) {
  BIO_clear_retry_flags(b);
  int r = static_cast<OpenSslSession*>(BIO_get_data(b))->bio_read(out, len);
  if (r < 0) BIO_set_retry_read(b);
  return r;
}

int session_bio_write(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  int r = static_cast<OpenSslSession*>(BIO_get_data(b))->bio_write(data, len);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
  return r;
}

long session_bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

BIO_METHOD* bio_method() {
  static BIO_METHOD* m = [] {
    BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "csgi connection");
    if (bm) {
      BIO_meth_set_read(bm, session_bio_read);
      BIO_meth_set_write(bm, session_bio_write);
      BIO_meth_set_ctrl(bm, session_bio_ctrl);
    }
    return bm;
  }();
  return m;
}

// What an SSL_read_ex / SSL_write_ex call came to, as a syscall would say it.
ssize_t OpenSslSession::result(int r, std::size_t done) {
  want_write_ = false;
  if (r == 1) return static_cast<ssize_t>(done);
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_WRITE: want_write_ = true; errno = EAGAIN; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;  // close_notify, or (SSL_OP_IGNORE_UNEXPECTED_EOF) a plain EOF
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == EAGAIN) errno = ECONNRESET;
      ERR_clear_error();
      return -1;
    default:  // a failed handshake (old protocol, no shared cipher, bad client certificate) or a bad record
      ERR_clear_error();
      errno = ECONNRESET;
      return -1;
  }
}

class OpenSslContext final : public TlsContext {
public:
  OpenSslContext(std::vector<TlsCertificate> certs, std::string client_ca, bool h2)
      : certs_(std::move(certs)), client_ca_(std::move(client_ca)), h2_(h2),
        current_(std::make_shared<const TlsGeneration>(certs_, client_ca_, h2_)) {}
  std::unique_ptr<TlsSession> accept(int fd, std::string& why) override {
    std::shared_ptr<const TlsGeneration> gen;
    {
      std::lock_guard lock(mu_);
      gen = current_;
    }
    SSL* ssl = gen->accept();
    if (!ssl || !bio_method()) {
      why = tls_error_text();
      if (ssl) SSL_free(ssl);
      return nullptr;
    }
    auto session = std::make_unique<OpenSslSession>(ssl, fd, std::move(gen));
    if (!session->attach()) {
      why = tls_error_text();
      return nullptr;
    }
    return session;
  }
  std::string notes() override {
    std::lock_guard lock(mu_);
    return current_->notes();
  }
  std::string reload() override {
    try {
      auto next = std::make_shared<const TlsGeneration>(certs_, client_ca_, h2_);
      std::lock_guard lock(mu_);
      current_ = std::move(next);
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  }

private:
  std::vector<TlsCertificate> certs_;
  std::string client_ca_;
  bool h2_;
  std::mutex mu_;
  std::shared_ptr<const TlsGeneration> current_;
};

void OpenSslSession::info(TlsInfo& out) {
  SSL* ssl = ssl_;
  bool asked = gen_->asks_client_cert();
  std::string& protocol = out.protocol;
  std::string& cipher = out.cipher;
  std::string& sni = out.sni;
  std::string& verify = out.verify;
  std::string& subject = out.subject;
  std::string& cert = out.cert;
  bool& asked_client_cert = out.asked_client_cert;
  protocol = SSL_get_version(ssl);
  cipher = SSL_get_cipher_name(ssl);
  const char* host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  sni = host ? host : "";
  asked_client_cert = asked;
  if (!asked) return;
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (!peer) {
    verify = "NONE";
    return;
  }
  long v = SSL_get_verify_result(ssl);
  verify = v == X509_V_OK ? "SUCCESS" : std::string("FAILED:") + X509_verify_cert_error_string(v);
  BIO* b = BIO_new(BIO_s_mem());
  if (b) {
    X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    subject.assign(data, static_cast<std::size_t>(n > 0 ? n : 0));
    (void)BIO_reset(b);
    PEM_write_bio_X509(b, peer);
    n = BIO_get_mem_data(b, &data);
    cert.assign(data, static_cast<std::size_t>(n > 0 ? n : 0));
    BIO_free(b);
  }
  X509_free(peer);
  // A subject may hold any bytes; control characters become spaces (ENV-18). The PEM keeps its lines.
  for (char& c : subject)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
}

}  // namespace
}  // namespace csgi::standalone::detail

extern "C" __attribute__((visibility("default"))) csgi::standalone::detail::TlsContext* csgi_tls_make_context_v2(
    const std::vector<csgi::standalone::TlsCertificate>& certs, const std::string& client_ca, bool h2,
    std::string& error) {
  try {
    return new csgi::standalone::detail::OpenSslContext(certs, client_ca, h2);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "TLS: unknown error";
  }
  return nullptr;
}
