#pragma once
// The QUIC endpoint and connections under HTTP/3 (internal, not installed): ngtcp2 with its GnuTLS
// helper, behind quic.hpp's QuicStreams/QuicApp. Declared here, defined by concern:
//   quic_conn.cpp      a connection: its handshake, packets in and out, timers, closing;
//   quic_endpoint.cpp  the endpoint: the UDP socket, datagrams to connections, Retry, Version
//                      Negotiation, Stateless Reset, certificates (SIGHUP), the graceful stop.
#include "csgi/adapters/standalone/detail/http3/datagrams.hpp"
#include "csgi/adapters/standalone/detail/http3/quic.hpp"
#include "csgi/adapters/standalone/detail/http3/quic_sockets.hpp"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/listen.hpp"

namespace csgi::standalone::detail::quic {


using boost::system::error_code;
using Udp = asio::ip::udp;

constexpr std::size_t cid_len = QuicSockets::cid_len;
constexpr std::size_t max_packet = 1452;        // what one datagram carries (IPv6 minimum MTU path, less headers)
constexpr std::size_t packets_per_turn = 256;   // a connection writes this many, then yields to the others
constexpr std::size_t reads_per_turn = 64;      // datagrams read before the io thread does other work
constexpr std::uint64_t stream_window = 256 * 1024;
constexpr std::uint64_t conn_window = 1024 * 1024;
constexpr std::chrono::seconds retry_token_life{10};
constexpr std::chrono::milliseconds stop_poll{50};
constexpr std::chrono::seconds min_closing_period{1};  // the closing or draining period: 3×PTO, at least this
// TLS 1.3 only, with the ciphers QUIC defines (RFC 9001 §5.3), without the middlebox compatibility mode.
constexpr const char* priority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM";

inline ngtcp2_tstamp now_ns() {
  return static_cast<ngtcp2_tstamp>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

inline std::string cid_key(const std::uint8_t* data, std::size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

inline void random_bytes(std::uint8_t* dest, std::size_t n) { gnutls_rnd(GNUTLS_RND_RANDOM, dest, n); }

/// The certificates of the listener, as GnuTLS holds them; a connection keeps the ones it started with.
struct Credentials {
  gnutls_certificate_credentials_t cred = nullptr;
  Credentials() {
    if (gnutls_certificate_allocate_credentials(&cred) != 0) throw std::runtime_error("no memory for certificates");
  }
  ~Credentials() { gnutls_certificate_free_credentials(cred); }
  Credentials(const Credentials&) = delete;
  Credentials& operator=(const Credentials&) = delete;
};

/// Reads the --tls-cert/--tls-key pairs; throws std::runtime_error naming the file.
inline std::shared_ptr<Credentials> load_credentials(const ServerOptions& opt) {
  auto c = std::make_shared<Credentials>();
  for (const TlsCertificate& f : opt.tls_certificates) {
    int rv = gnutls_certificate_set_x509_key_file(c->cred, f.cert_file.c_str(), f.key_file.c_str(), GNUTLS_X509_FMT_PEM);
    if (rv < 0) throw std::runtime_error("--tls-cert " + f.cert_file + " (HTTP/3): " + gnutls_strerror(rv));
  }
  return c;
}

class Endpoint;

class Connection final : public QuicStreams, public std::enable_shared_from_this<Connection> {
public:
  Connection(Endpoint& ep, const sockaddr_storage& from, socklen_t fromlen);
  ~Connection() override;
  /// Makes the ngtcp2 connection for a client's first Initial (`odcid`: the one a Retry token carried).
  bool init(const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid, std::string& why);
  /// A datagram of this connection from `from` (its address now: a new one is a migration).
  void on_packet(const sockaddr_storage& from, socklen_t fromlen, const std::uint8_t* data, std::size_t n);
  /// The connection ends now: its IDs leave the endpoint, its app is detached.
  void drop() noexcept;
  /// Closes with `code` (an application error) after what is in flight; the packet goes out now.
  void close_now(std::uint64_t code);
  void write();
  QuicApp* app() const { return app_.get(); }
  /// Runs `step` from an Asio handler: an exception (no memory) ends the connection there.
  void safely(void (Connection::*step)()) noexcept {
    try {
      (this->*step)();
    } catch (...) {
      drop();
    }
  }

  // QuicStreams.
  bool open_uni(std::int64_t& id) override { return ngtcp2_conn_open_uni_stream(conn_, &id, nullptr) == 0; }
  void consumed(std::int64_t id, std::size_t n) override {
    ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
    ngtcp2_conn_extend_max_offset(conn_, n);
  }
  void reset(std::int64_t id, std::uint64_t code) override { ngtcp2_conn_shutdown_stream(conn_, id, code); }
  void stop_reading(std::int64_t id, std::uint64_t code) override { ngtcp2_conn_shutdown_stream_read(conn_, id, code); }
  void allow_stream() override {
    if (!gone_) ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
  }
  void wake() override;
  void close(std::uint64_t code) override {
    closing_ = true;
    close_code_ = code;
    wake();
  }
  std::string tls_cipher() const override {
    const char* name = gnutls_ciphersuite_get(tls_);
    return name ? name : "";
  }
  std::string tls_sni() const override {
    char name[256];
    std::size_t len = sizeof name;
    unsigned type = 0;
    if (gnutls_server_name_get(tls_, name, &len, &type, 0) != 0 || type != GNUTLS_NAME_DNS) return {};
    return std::string(name, strnlen(name, len));
  }
  const char* peer_addr() const override { return addr_; }
  const char* peer_port() const override { return port_; }

private:
  static Connection& self(void* p) { return *static_cast<Connection*>(p); }
  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) { return static_cast<Connection*>(ref->user_data)->conn_; }
  void fail(int liberr);
  void close_with(const ngtcp2_connection_close_error& ccerr);
  void linger(std::vector<std::uint8_t> close_packet);
  void arm_timer();
  void arm_app_timer();
  void on_app_timer();
  void on_timer();
  void send(const std::uint8_t* data, std::size_t n);
  ngtcp2_path path();

  // ngtcp2's callbacks. No exception crosses ngtcp2: one closes the connection.
  template <class F>
  static int guard(void* p, F&& f) noexcept {
    try {
      return f(*self(p).app_) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    } catch (...) {
      return NGTCP2_ERR_CALLBACK_FAILURE;
    }
  }
  static int handshake_completed(ngtcp2_conn*, void* p) {
    return guard(p, [](QuicApp& a) { return a.start(); });
  }
  static int recv_stream_data(ngtcp2_conn*, std::uint32_t flags, std::int64_t id, std::uint64_t, const std::uint8_t* data,
                              std::size_t n, void* p, void*) {
    bool fin = flags & NGTCP2_STREAM_DATA_FLAG_FIN;
    return guard(p, [&](QuicApp& a) { return a.received(id, data, n, fin); });
  }
  static int acked(ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t n, void* p, void*) {
    return guard(p, [&](QuicApp& a) { return a.acked(id, n); });
  }
  static int stream_close(ngtcp2_conn*, std::uint32_t flags, std::int64_t id, std::uint64_t code, void* p, void*) {
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = 0x0100;  // H3_NO_ERROR
    return guard(p, [&](QuicApp& a) { return a.stream_closed(id, code); });
  }
  static int stream_reset(ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t, void* p, void*) {
    return guard(p, [&](QuicApp& a) { return a.stream_reset(id); });
  }
  static int stop_sending(ngtcp2_conn*, std::int64_t id, std::uint64_t, void* p, void*) {
    return guard(p, [&](QuicApp& a) { return a.stream_reset(id); });
  }
  static int extend_stream(ngtcp2_conn*, std::int64_t id, std::uint64_t, void* p, void*) {
    return guard(p, [&](QuicApp& a) { return a.unblocked(id); });
  }
  static void rand(std::uint8_t* dest, std::size_t n, const ngtcp2_rand_ctx*) { random_bytes(dest, n); }
  static int new_cid(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t len, void* p);
  static int remove_cid(ngtcp2_conn*, const ngtcp2_cid* cid, void* p);

  Endpoint& ep_;
  sockaddr_storage remote_{};
  socklen_t remote_len_ = 0;
  char addr_[INET6_ADDRSTRLEN] = "";
  char port_[8] = "";
  ngtcp2_conn* conn_ = nullptr;
  std::shared_ptr<Credentials> cred_;  // outlives tls_ (declared first)
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref ref_{};
  std::shared_ptr<QuicApp> app_;
  asio::steady_timer timer_;
  asio::steady_timer app_timer_;            // the app's deadline (QuicApp::deadline)
  Clock::time_point app_at_ = Clock::time_point::max();
  // Closed (RFC 9000 §10.2): the IDs stay for the closing or draining period; a packet that comes in the
  // closing period is answered with the CONNECTION_CLOSE again (to the 1st, 2nd, 4th, … such packet), in
  // the draining period (the peer closed) with nothing.
  bool lingering_ = false;
  std::vector<std::uint8_t> close_packet_;
  std::uint64_t after_close_ = 0;
  std::vector<std::string> ids_;  // the endpoint's keys for this connection
  bool wake_posted_ = false;
  bool closing_ = false;
  bool gone_ = false;
  bool counted_ = false;  // in the endpoint's live count
  bool keep_alive_ = false;
  std::uint64_t close_code_ = 0;
  friend class Endpoint;
};

class Endpoint final : public QuicEndpoint {
public:
  Endpoint(IoThread& t, const ListenSocket& l, QuicAppMaker maker);
  ~Endpoint() override;
  void stop() override;
  std::string reload() override;
  void start() { wait(); }

  IoThread& thread;
  const ListenSocket& listener;
  QuicAppMaker maker;
  const QuicSockets& group;               // the socket's group: connection IDs, the secret
  std::shared_ptr<Credentials> cred;      // what new connections take
  std::array<std::uint8_t, 32> secret{};  // Retry tokens and stateless reset tokens
  sockaddr_storage local{};
  socklen_t local_len = 0;
  std::unordered_map<std::string, std::shared_ptr<Connection>> ids;
  std::size_t live = 0;
  bool stopping = false;

  void send(const sockaddr_storage& to, socklen_t tolen, const std::uint8_t* data, std::size_t n);
  /// `n` bytes as datagrams of `segment` bytes, the last maybe shorter (send_datagrams).
  void send(const sockaddr_storage& to, socklen_t tolen, const std::uint8_t* data, std::size_t n, std::size_t segment);

 private:
  void wait();
  void read_some();
  void on_datagram(const sockaddr_storage& from, socklen_t fromlen, const std::uint8_t* data, std::size_t n);
  void send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, socklen_t fromlen);
  void send_version_negotiation(const ngtcp2_version_cid& vc, const sockaddr_storage& from, socklen_t fromlen);
  void send_stateless_reset(const ngtcp2_version_cid& vc, const sockaddr_storage& from, socklen_t fromlen, std::size_t n);
  void poll_stop();

  Udp::socket sock_;
  UdpOut out_;
  asio::steady_timer stop_timer_;
  Clock::time_point stop_deadline_{};
  std::vector<std::uint8_t> rbuf_ = std::vector<std::uint8_t>(65536);
};

}  // namespace csgi::standalone::detail::quic
