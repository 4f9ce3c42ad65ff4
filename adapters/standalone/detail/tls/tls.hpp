#pragma once
// TLS for the standalone server (internal, not installed; docs/standalone.md, TLS). OpenSSL lives in a
// module of its own, libcsgi_tls.so (tls_module.cpp), loaded with dlopen only when certificates are given:
// a server without TLS does not map libssl and libcrypto (their pages would add to every process's RSS).
//
//   TlsContext  the certificates of the process, loaded at start (errors name the file and the reason),
//               re-read by reload() (SIGHUP); the first certificate is the default, the others chosen
//               by SNI. New connections take the current certificates, open ones keep theirs.
//   TlsSession  the server side of one connection: OpenSSL on the connection's own non-blocking socket,
//               whose reads and writes the connection makes in place of recv/sendmsg (conn.hpp).
//   TlsInfo     what the env of a TLS connection says about it (HTTPS, SSL_PROTOCOL, …: spec ENV-17/18).
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/adapters/standalone/server.hpp"

namespace csgi {
class Env;
}

namespace csgi::standalone::detail {

/// The env values of one TLS connection, read once its handshake is done.
struct TlsInfo {
  std::string protocol, cipher, sni, verify, subject, cert;
  bool asked_client_cert = false;
  /// Sets HTTPS and the SSL_* keys (views into this object).
  void set_env(Env& env) const;
  /// The same, with the values copied into the env (one that may outlive this object).
  void copy_to_env(Env& env) const;
};

class TlsSession {
public:
  virtual ~TlsSession() = default;
  /// As recv(2) / send(2) would say: bytes, 0 at the end of the stream (recv), or -1 with errno: EAGAIN
  /// when OpenSSL waits for the socket (writable when want_write(), else readable), ECONNRESET for a failed
  /// handshake or a bad record. The handshake is made by the first calls. A send that returned EAGAIN is
  /// made again with the same first bytes (and no fewer of them).
  virtual ssize_t recv(char* buf, std::size_t n) = 0;
  /// The session reads ciphertext only from its own buffer, which the connection fills: the reactor's
  /// read lands in in_room() (then in_added(n), or in_eof() at the end of the stream), or fill() reads the
  /// socket once, as recv(2) would say (after a poll). recv() says EAGAIN, not want_write(), when the
  /// buffer is empty.
  virtual std::pair<char*, std::size_t> in_room() = 0;
  virtual void in_added(std::size_t n) = 0;
  virtual void in_eof() = 0;
  virtual ssize_t fill() = 0;
  virtual ssize_t send(const char* buf, std::size_t n) = 0;
  virtual bool want_write() const noexcept = 0;
  /// Sends close_notify as far as the socket takes it now.
  virtual void shutdown() noexcept = 0;
  /// The connection's protocol, cipher, SNI name and client certificate (after the handshake).
  virtual void info(TlsInfo& out) = 0;
  /// The protocol ALPN chose ("h2", "http/1.1"; "" when the client offered none), after the handshake.
  virtual std::string_view alpn() const noexcept = 0;
};

class TlsContext {
public:
  virtual ~TlsContext() = default;
  /// A session for a new connection on `fd`; nullptr when OpenSSL cannot make one (then `why` says why).
  virtual std::unique_ptr<TlsSession> accept(int fd, std::string& why) = 0;
  /// Re-reads the files; on failure the current certificates stay and the reason is returned ("" = done).
  virtual std::string reload() = 0;
  /// What the last load has to say that is not an error ("" for nothing): OCSP responses not fetched.
  virtual std::string notes() = 0;
};

/// Loads libcsgi_tls.so and the certificates; throws std::runtime_error "--tls-cert FILE: reason" (a
/// missing, unreadable, malformed or expired certificate, a key that does not match it, a bad client CA
/// file) or "TLS: cannot load libcsgi_tls.so …". ALPN offers h2 (preferred) and http/1.1 with `h2`, else
/// http/1.1 alone.
std::unique_ptr<TlsContext> make_tls_context(const std::vector<TlsCertificate>& certs, const std::string& client_ca,
                                             bool h2);

/// The module's entry point (extern "C", looked up by name): a context, or nullptr with `error` set.
using TlsMakeFn = TlsContext* (*)(const std::vector<TlsCertificate>& certs, const std::string& client_ca, bool h2,
                                  std::string& error);
inline constexpr const char* tls_module_entry = "csgi_tls_make_context_v2";

}  // namespace csgi::standalone::detail
