// The QUIC endpoint and connections under HTTP/3: ngtcp2 with its GnuTLS helper (see quic.hpp).
#include "csgi/adapters/standalone/detail/http3/quic.hpp"

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

namespace csgi::standalone::detail {

static_assert(sizeof(QuicVec) == sizeof(ngtcp2_vec) && offsetof(QuicVec, len) == offsetof(ngtcp2_vec, len));

namespace {

using boost::system::error_code;
using Udp = asio::ip::udp;

constexpr std::size_t cid_len = 18;
constexpr std::size_t max_packet = 1452;        // what one datagram carries (IPv6 minimum MTU path, less headers)
constexpr std::size_t packets_per_turn = 256;   // a connection writes this many, then yields to the others
constexpr std::size_t reads_per_turn = 64;      // datagrams read before the io thread does other work
constexpr std::uint64_t stream_window = 256 * 1024;
constexpr std::uint64_t conn_window = 1024 * 1024;
constexpr std::chrono::seconds retry_token_life{10};
constexpr std::chrono::milliseconds stop_poll{50};
// TLS 1.3 only, with the ciphers QUIC defines (RFC 9001 §5.3), without the middlebox compatibility mode.
constexpr const char* priority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM";

ngtcp2_tstamp now_ns() {
  return static_cast<ngtcp2_tstamp>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

std::string cid_key(const std::uint8_t* data, std::size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

void random_bytes(std::uint8_t* dest, std::size_t n) { gnutls_rnd(GNUTLS_RND_RANDOM, dest, n); }

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
std::shared_ptr<Credentials> load_credentials(const ServerOptions& opt) {
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
  void on_packet(const std::uint8_t* data, std::size_t n);
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
  void arm_timer();
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
  std::shared_ptr<Credentials> cred;      // what new connections take
  std::array<std::uint8_t, 32> secret{};  // Retry tokens and stateless reset tokens
  sockaddr_storage local{};
  socklen_t local_len = 0;
  std::unordered_map<std::string, std::shared_ptr<Connection>> ids;
  std::size_t live = 0;
  bool stopping = false;

  void send(const sockaddr_storage& to, socklen_t tolen, const std::uint8_t* data, std::size_t n);

private:
  void wait();
  void read_some();
  void on_datagram(const sockaddr_storage& from, socklen_t fromlen, const std::uint8_t* data, std::size_t n);
  void send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, socklen_t fromlen);
  void send_version_negotiation(const ngtcp2_version_cid& vc, const sockaddr_storage& from, socklen_t fromlen);
  void poll_stop();

  Udp::socket sock_;
  asio::steady_timer stop_timer_;
  Clock::time_point stop_deadline_{};
  std::vector<std::uint8_t> rbuf_ = std::vector<std::uint8_t>(65536);
};

Connection::Connection(Endpoint& ep, const sockaddr_storage& from, socklen_t fromlen)
    : ep_(ep), remote_(from), remote_len_(fromlen), timer_(ep.thread.ioc) {
  if (from.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&from);
    ::inet_ntop(AF_INET6, &a->sin6_addr, addr_, sizeof addr_);
    std::snprintf(port_, sizeof port_, "%u", ntohs(a->sin6_port));
  } else {
    auto* a = reinterpret_cast<const sockaddr_in*>(&from);
    ::inet_ntop(AF_INET, &a->sin_addr, addr_, sizeof addr_);
    std::snprintf(port_, sizeof port_, "%u", ntohs(a->sin_port));
  }
}

Connection::~Connection() {
  drop();
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
}

ngtcp2_path Connection::path() {
  ngtcp2_path p{};
  p.local.addr = reinterpret_cast<ngtcp2_sockaddr*>(&ep_.local);
  p.local.addrlen = ep_.local_len;
  p.remote.addr = reinterpret_cast<ngtcp2_sockaddr*>(&remote_);
  p.remote.addrlen = remote_len_;
  return p;
}

bool Connection::init(const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid, std::string& why) {
  const ServerOptions& opt = ep_.thread.shared.opt;
  ngtcp2_callbacks cb{};
  cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.handshake_completed = &Connection::handshake_completed;
  cb.recv_stream_data = &Connection::recv_stream_data;
  cb.acked_stream_data_offset = &Connection::acked;
  cb.stream_close = &Connection::stream_close;
  cb.stream_reset = &Connection::stream_reset;
  cb.stream_stop_sending = &Connection::stop_sending;
  cb.extend_max_stream_data = &Connection::extend_stream;
  cb.rand = &Connection::rand;
  cb.get_new_connection_id = &Connection::new_cid;
  cb.remove_connection_id = &Connection::remove_cid;

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now_ns();
  settings.max_tx_udp_payload_size = max_packet;
  settings.handshake_timeout = static_cast<ngtcp2_duration>(opt.header_timeout.count()) * NGTCP2_MILLISECONDS;
  settings.max_window = 4 * conn_window;
  settings.max_stream_window = 4 * stream_window;

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = stream_window;
  params.initial_max_stream_data_bidi_remote = stream_window;
  params.initial_max_stream_data_uni = stream_window;
  params.initial_max_data = conn_window;
  params.initial_max_streams_bidi = opt.h2_max_streams > 0 ? opt.h2_max_streams : 100;
  params.initial_max_streams_uni = 3;  // the peer's control and QPACK streams
  params.max_idle_timeout = static_cast<ngtcp2_duration>(opt.idle_timeout.count()) * NGTCP2_MILLISECONDS;
  params.active_connection_id_limit = 4;
  params.stateless_reset_token_present = 1;
  if (odcid) {
    params.original_dcid = *odcid;
    params.retry_scid = hd.dcid;
    params.retry_scid_present = 1;
  } else {
    params.original_dcid = hd.dcid;
  }
  ngtcp2_cid scid;
  scid.datalen = cid_len;
  random_bytes(scid.data, cid_len);
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, ep_.secret.data(), ep_.secret.size(),
                                                   &scid) != 0) {
    why = "stateless reset token";
    return false;
  }
  ngtcp2_path p = path();
  int rv = ngtcp2_conn_server_new(&conn_, &hd.scid, &scid, &p, hd.version, &cb, &settings, &params, nullptr, this);
  if (rv != 0) {
    why = ngtcp2_strerror(rv);
    return false;
  }
  // No early data (0-RTT can be replayed) and no session tickets to resume with.
  cred_ = ep_.cred;
  if (gnutls_init(&tls_, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA | GNUTLS_NO_TICKETS) != 0 ||
      gnutls_priority_set_direct(tls_, priority, nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_server_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred_->cred) != 0) {
    why = "TLS session";
    return false;
  }
  ref_.get_conn = &Connection::get_conn;
  ref_.user_data = this;
  gnutls_session_set_ptr(tls_, &ref_);
  gnutls_datum_t alpn{const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>("h3")), 2};
  gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY);
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  app_ = ep_.maker(*this, ep_.thread, ep_.listener);
  auto me = shared_from_this();
  for (const std::string& k : {cid_key(hd.dcid.data, hd.dcid.datalen), cid_key(scid.data, scid.datalen)}) {
    ep_.ids[k] = me;
    ids_.push_back(k);
  }
  ++ep_.live;
  counted_ = true;
  return true;
}

int Connection::new_cid(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t len, void* p) {
  Connection& c = self(p);
  cid->datalen = len;
  random_bytes(cid->data, len);
  if (ngtcp2_crypto_generate_stateless_reset_token(token, c.ep_.secret.data(), c.ep_.secret.size(), cid) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  std::string k = cid_key(cid->data, len);
  c.ep_.ids[k] = c.shared_from_this();
  c.ids_.push_back(std::move(k));
  return 0;
}

int Connection::remove_cid(ngtcp2_conn*, const ngtcp2_cid* cid, void* p) {
  Connection& c = self(p);
  std::string k = cid_key(cid->data, cid->datalen);
  c.ep_.ids.erase(k);
  std::erase(c.ids_, k);
  return 0;
}

void Connection::on_packet(const std::uint8_t* data, std::size_t n) {
  if (gone_) return;
  auto keep = shared_from_this();
  ngtcp2_path p = path();
  ngtcp2_pkt_info pi{};
  int rv = ngtcp2_conn_read_pkt(conn_, &p, &pi, data, n, now_ns());
  if (rv != 0) return fail(rv);
  write();
}

// A failed read or write: the connection is closed (CONNECTION_CLOSE with what went wrong) or, when the
// peer closed it or ngtcp2 says so, dropped.
void Connection::fail(int liberr) {
  if (liberr == NGTCP2_ERR_DRAINING || liberr == NGTCP2_ERR_DROP_CONN || liberr == NGTCP2_ERR_IDLE_CLOSE ||
      liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT || liberr == NGTCP2_ERR_CLOSING)
    return drop();
  ngtcp2_connection_close_error ccerr;
  if (liberr == NGTCP2_ERR_CALLBACK_FAILURE && app_ && app_->error() != 0) {
    ngtcp2_connection_close_error_set_application_error(&ccerr, app_->error(), nullptr, 0);
  } else if (liberr == NGTCP2_ERR_CRYPTO) {
    ngtcp2_connection_close_error_set_transport_error_tls_alert(&ccerr, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
  } else {
    ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, liberr, nullptr, 0);
  }
  std::array<std::uint8_t, max_packet> buf;
  ngtcp2_path p = path();
  ngtcp2_pkt_info pi{};
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &p, &pi, buf.data(), buf.size(), &ccerr, now_ns());
  if (n > 0) send(buf.data(), static_cast<std::size_t>(n));
  drop();
}

void Connection::close_now(std::uint64_t code) {
  if (gone_) return;
  auto keep = shared_from_this();
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_set_application_error(&ccerr, code, nullptr, 0);
  std::array<std::uint8_t, max_packet> buf;
  ngtcp2_path p = path();
  ngtcp2_pkt_info pi{};
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &p, &pi, buf.data(), buf.size(), &ccerr, now_ns());
  if (n > 0) send(buf.data(), static_cast<std::size_t>(n));
  drop();
}

void Connection::drop() noexcept {
  if (gone_) return;
  gone_ = true;
  timer_.cancel();
  if (app_) app_->detach();
  if (counted_) --ep_.live;
  for (const std::string& k : ids_) {
    auto it = ep_.ids.find(k);
    if (it != ep_.ids.end() && it->second.get() == this) ep_.ids.erase(it);  // may destroy this: last
  }
}

void Connection::wake() {
  if (wake_posted_ || gone_) return;
  wake_posted_ = true;
  asio::post(ep_.thread.ioc, [self = shared_from_this()] {
    self->wake_posted_ = false;
    self->safely(&Connection::write);
  });
}

// Writes the packets there are to write: the streams' bytes the app has ready, ACKs, retransmissions,
// as far as congestion control lets; then the timer at ngtcp2's next expiry.
void Connection::write() {
  if (gone_) return;
  auto keep = shared_from_this();
  if (closing_) return close_now(close_code_);
  std::array<std::uint8_t, max_packet> buf;
  ngtcp2_path p = path();
  std::size_t packets = 0;
  for (std::size_t turn = 0; turn < 4 * packets_per_turn; ++turn) {
    std::int64_t id = -1;
    bool fin = false;
    std::array<QuicVec, 16> vec;
    long count = 0;
    if (ngtcp2_conn_get_handshake_completed(conn_)) {
      count = app_->pending(id, fin, vec.data(), vec.size());
      if (count < 0) return close_now(app_->error());
    }
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    ngtcp2_ssize datalen = -1;
    ngtcp2_pkt_info pi{};
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &p, &pi, buf.data(), buf.size(), &datalen, flags, id,
                                               reinterpret_cast<const ngtcp2_vec*>(vec.data()),
                                               static_cast<std::size_t>(count), now_ns());
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        app_->blocked(id);
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
        app_->write_shut(id);
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {
        if (!app_->wrote(id, static_cast<std::size_t>(datalen))) return close_now(app_->error());
        continue;
      }
      return fail(static_cast<int>(n));
    }
    if (datalen >= 0 && id >= 0 && !app_->wrote(id, static_cast<std::size_t>(datalen))) return close_now(app_->error());
    if (n == 0) break;
    send(buf.data(), static_cast<std::size_t>(n));
    if (gone_) return;
    if (++packets == packets_per_turn) {
      wake();  // the rest after the other connections' turns
      break;
    }
  }
  // While the app is at work (it may think, or write, for longer than the idle timeout), PINGs keep the
  // connection from going idle; otherwise a silent peer is gone after the idle timeout.
  bool busy = app_->app_at_work();
  if (busy != keep_alive_) {
    keep_alive_ = busy;
    auto idle = static_cast<ngtcp2_duration>(ep_.thread.shared.opt.idle_timeout.count()) * NGTCP2_MILLISECONDS;
    ngtcp2_conn_set_keep_alive_timeout(conn_, busy ? idle / 2 : 0);
  }
  arm_timer();
}

void Connection::send(const std::uint8_t* data, std::size_t n) { ep_.send(remote_, remote_len_, data, n); }

void Connection::arm_timer() {
  ngtcp2_tstamp at = ngtcp2_conn_get_expiry(conn_);
  if (at == UINT64_MAX) return;
  timer_.expires_at(Clock::time_point(std::chrono::nanoseconds(at)));
  timer_.async_wait([w = weak_from_this()](error_code ec) {
    if (ec) return;
    if (auto self = w.lock()) self->safely(&Connection::on_timer);
  });
}

void Connection::on_timer() {
  if (gone_) return;
  auto keep = shared_from_this();
  int rv = ngtcp2_conn_handle_expiry(conn_, now_ns());
  if (rv != 0) return fail(rv);
  write();
}

Endpoint::Endpoint(IoThread& t, const ListenSocket& l, QuicAppMaker m)
    : thread(t), listener(l), maker(m), sock_(t.ioc), stop_timer_(t.ioc) {
  cred = load_credentials(t.shared.opt);
  random_bytes(secret.data(), secret.size());
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(l.fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    throw std::runtime_error("HTTP/3 on " + l.display + ": " + std::strerror(errno));
  int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("HTTP/3 on " + l.display + ": " + std::strerror(errno));
  int on = 1;
  if (ss.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("HTTP/3 on " + l.display + ": UDP bind: " + std::strerror(e));
  }
  local = ss;
  local_len = len;
  sock_.assign(ss.ss_family == AF_INET6 ? Udp::v6() : Udp::v4(), fd);
}

Endpoint::~Endpoint() {
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [k, c] : ids) all.push_back(c);
  for (auto& c : all) c->drop();
}

std::string Endpoint::reload() {
  try {
    cred = load_credentials(thread.shared.opt);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

void Endpoint::wait() {
  if (!sock_.is_open()) return;
  sock_.async_wait(Udp::socket::wait_read, [this](error_code ec) {
    if (ec) return;
    read_some();
    wait();
  });
}

void Endpoint::read_some() {
  thread.now = Clock::now();
  for (std::size_t i = 0; i < reads_per_turn && sock_.is_open(); ++i) {
    sockaddr_storage from{};
    iovec iov{rbuf_.data(), rbuf_.size()};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ssize_t n = ::recvmsg(sock_.native_handle(), &msg, 0);
    if (n < 0) return;
    try {
      on_datagram(from, msg.msg_namelen, rbuf_.data(), static_cast<std::size_t>(n));
    } catch (...) {  // no memory for a new connection: the datagram is dropped, as the network may
    }
  }
}

void Endpoint::on_datagram(const sockaddr_storage& from, socklen_t fromlen, const std::uint8_t* data, std::size_t n) {
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, data, n, cid_len);
  // A version this server does not speak: the versions it does (RFC 9000 §6), to a datagram as large as
  // a client's first one must be (smaller ones are dropped: no amplification).
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION && n >= 1200 && !stopping) return send_version_negotiation(vc, from, fromlen);
  if (rv != 0) return;
  if (auto it = ids.find(cid_key(vc.dcid, vc.dcidlen)); it != ids.end()) {
    std::shared_ptr<Connection> c = it->second;
    return c->on_packet(data, n);
  }
  if (stopping) return;
  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, n) != 0) return;
  ngtcp2_cid odcid;
  bool validated = false;
  if (thread.shared.opt.http3_retry) {
    if (hd.token.len == 0 || hd.token.base[0] != NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) return send_retry(hd, from, fromlen);
    if (ngtcp2_crypto_verify_retry_token(&odcid, hd.token.base, hd.token.len, secret.data(), secret.size(), hd.version,
                                         reinterpret_cast<const ngtcp2_sockaddr*>(&from), fromlen, &hd.dcid,
                                         retry_token_life.count() * NGTCP2_SECONDS, now_ns()) != 0)
      return;  // forged or stale: the client's next Initial comes without it
    validated = true;
  }
  if (live >= thread.shared.opt.max_connections) return;
  auto c = std::make_shared<Connection>(*this, from, fromlen);
  std::string why;
  if (!c->init(hd, validated ? &odcid : nullptr, why)) {
    thread.shared.errors.write("csgi: HTTP/3: cannot start a connection: " + why);
    c->drop();
    return;
  }
  c->on_packet(data, n);
}

void Endpoint::send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, socklen_t fromlen) {
  ngtcp2_cid scid;
  scid.datalen = cid_len;
  random_bytes(scid.data, cid_len);
  std::array<std::uint8_t, NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN> token;
  ngtcp2_ssize tokenlen = ngtcp2_crypto_generate_retry_token(
      token.data(), secret.data(), secret.size(), hd.version, reinterpret_cast<const ngtcp2_sockaddr*>(&from), fromlen,
      &scid, &hd.dcid, now_ns());
  if (tokenlen < 0) return;
  std::array<std::uint8_t, max_packet> buf;
  ngtcp2_ssize n = ngtcp2_crypto_write_retry(buf.data(), buf.size(), hd.version, &hd.scid, &scid, &hd.dcid,
                                             token.data(), static_cast<std::size_t>(tokenlen));
  if (n > 0) send(from, fromlen, buf.data(), static_cast<std::size_t>(n));
}

void Endpoint::send_version_negotiation(const ngtcp2_version_cid& vc, const sockaddr_storage& from, socklen_t fromlen) {
  std::uint8_t unused = 0;
  random_bytes(&unused, 1);
  const std::uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  std::array<std::uint8_t, 256> buf;
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(buf.data(), buf.size(), unused, vc.scid, vc.scidlen, vc.dcid,
                                                        vc.dcidlen, versions, 1);
  if (n > 0) send(from, fromlen, buf.data(), static_cast<std::size_t>(n));
}

void Endpoint::send(const sockaddr_storage& to, socklen_t tolen, const std::uint8_t* data, std::size_t n) {
  if (!sock_.is_open()) return;
  // A datagram the socket cannot take now is lost as on the network: QUIC's loss recovery sends it again.
  ssize_t r;
  do r = ::sendto(sock_.native_handle(), data, n, 0, reinterpret_cast<const sockaddr*>(&to), tolen);
  while (r < 0 && errno == EINTR);
}

void Endpoint::stop() {
  if (stopping) return;
  stopping = true;
  stop_deadline_ = Clock::now() + thread.shared.opt.graceful_timeout;
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [k, c] : ids)
    if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
  for (auto& c : all) {
    if (c->app()) c->app()->shutdown();
    c->safely(&Connection::write);  // the GOAWAY goes out now
  }
  stop_timer_.expires_after(stop_poll);
  stop_timer_.async_wait([this](error_code ec) {
    if (!ec) poll_stop();
  });
}

// While stopping: a connection whose requests are done is closed (after its GOAWAY); at the graceful
// timeout every one is; then the socket.
void Endpoint::poll_stop() {
  bool late = Clock::now() >= stop_deadline_;
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [k, c] : ids)
    if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
  for (auto& c : all)
    if (late || !c->app() || c->app()->busy() == 0) c->close_now(0x0100);  // H3_NO_ERROR
  if (ids.empty()) {
    error_code ignore;
    sock_.close(ignore);
    return;
  }
  stop_timer_.expires_after(stop_poll);
  stop_timer_.async_wait([this](error_code ec) {
    if (!ec) poll_stop();
  });
}

}  // namespace

std::unique_ptr<QuicEndpoint> open_quic(IoThread& thread, const ListenSocket& listener, QuicAppMaker maker) {
  auto ep = std::make_unique<Endpoint>(thread, listener, maker);
  ep->start();
  return ep;
}

}  // namespace csgi::standalone::detail
