#pragma once
// TLS for the standalone server (internal, not installed; docs/standalone.md §TLS). OpenSSL on the
// connection's own non-blocking socket: the server side of a connection is an SSL object whose reads and
// writes the connection makes in place of recv/sendmsg/sendfile (conn.hpp), waiting on the same reactor.
//
//   TlsServer    the certificates of the process, loaded at start (errors name the file and the reason)
//                and re-read by reload() (SIGHUP); each load is one TlsGeneration.
//   TlsGeneration one SSL_CTX per certificate, the first the default, the others chosen by SNI; new
//                connections take the current generation, open ones keep theirs.
//   TlsInfo      what the env of a TLS connection says about it (HTTPS, SSL_PROTOCOL, …: spec ENV-16/17).
#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/standalone/server.hpp"

namespace csgi {
class Env;
}

namespace csgi::standalone::detail {

/// The ALPN protocols offered, in the server's order of preference (RFC 7301 wire format, each name
/// preceded by its length). HTTP/2 goes first here once the server speaks it.
std::string_view alpn_protocols() noexcept;

class TlsGeneration {
public:
  /// Loads every certificate and key; throws std::runtime_error "--tls-cert FILE: reason" (a missing,
  /// unreadable, malformed or expired certificate, a key that does not match it, a bad client CA file).
  TlsGeneration(const std::vector<TlsCertificate>& certs, const std::string& client_ca);
  ~TlsGeneration();
  TlsGeneration(const TlsGeneration&) = delete;
  TlsGeneration& operator=(const TlsGeneration&) = delete;

  /// A server-side SSL object for a new connection on `fd` (nullptr when OpenSSL cannot make one).
  SSL* accept(int fd) const;
  bool asks_client_cert() const noexcept { return client_ca_; }

private:
  struct Entry {
    SSL_CTX* ctx = nullptr;
    std::vector<std::string> names;  // DNS names of the certificate (SAN, else CN), lower case
  };
  std::vector<Entry> entries_;
  bool client_ca_ = false;
  static int on_servername(SSL* ssl, int* alert, void* arg);
  SSL_CTX* for_name(std::string_view host) const;
};

class TlsServer {
public:
  TlsServer(std::vector<TlsCertificate> certs, std::string client_ca);
  /// The generation new connections use.
  std::shared_ptr<const TlsGeneration> current() const;
  /// Re-reads the files; on failure the current certificates stay and the reason is returned ("" = done).
  std::string reload() noexcept;

private:
  std::vector<TlsCertificate> certs_;
  std::string client_ca_;
  mutable std::mutex mu_;
  std::shared_ptr<const TlsGeneration> current_;
};

/// The env values of one TLS connection, read once its handshake is done.
struct TlsInfo {
  std::string protocol, cipher, sni, verify, subject, cert;
  bool asked_client_cert = false;
  void read(SSL* ssl, bool asked);
  /// Sets HTTPS and the SSL_* keys (views into this object).
  void set_env(Env& env) const;
};

/// The reason of the last OpenSSL error of this thread (and clears the queue).
std::string tls_error_text();

}  // namespace csgi::standalone::detail
