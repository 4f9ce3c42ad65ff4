// The QUIC endpoint of an https listener: its UDP socket, datagrams to their connections, Retry, Version
// Negotiation, certificates and the graceful stop (see quic_conn.hpp).
#include "csgi/adapters/standalone/detail/http3/quic_conn.hpp"

namespace csgi::standalone::detail {

static_assert(sizeof(QuicVec) == sizeof(ngtcp2_vec) && offsetof(QuicVec, len) == offsetof(ngtcp2_vec, len));

namespace quic {

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
    return c->on_packet(from, fromlen, data, n);
  }
  if (!(data[0] & 0x80)) return send_stateless_reset(vc, from, fromlen, n);
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
  c->on_packet(from, fromlen, data, n);
}

void Endpoint::send_retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from, socklen_t fromlen) {
  ngtcp2_cid scid;
  scid.datalen = cid_len;
  group.make_cid(thread.index, scid.data);  // the client's next Initial comes back to this process
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

// A short-header packet of no connection here (one of a worker that died, or of the server before a
// restart): a Stateless Reset (RFC 9000 §10.3) with the token the connection's ID was given (the secret
// is the server's, the same in every process), so that its client stops at once. It is smaller than the
// packet that prompted it, which bounds a loop of resets and leaves nothing to amplify.
void Endpoint::send_stateless_reset(const ngtcp2_version_cid& vc, const sockaddr_storage& from, socklen_t fromlen,
                                    std::size_t n) {
  constexpr std::size_t max_reset = 41;
  if (vc.dcidlen != cid_len || n <= NGTCP2_MIN_STATELESS_RESET_RANDLEN + NGTCP2_STATELESS_RESET_TOKENLEN) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, vc.dcid, vc.dcidlen);
  std::array<std::uint8_t, NGTCP2_STATELESS_RESET_TOKENLEN> token;
  if (ngtcp2_crypto_generate_stateless_reset_token(token.data(), secret.data(), secret.size(), &cid) != 0) return;
  std::size_t randlen = std::min(n - 1, max_reset) - NGTCP2_STATELESS_RESET_TOKENLEN;
  std::array<std::uint8_t, max_reset> rand;
  random_bytes(rand.data(), randlen);
  std::array<std::uint8_t, max_reset> buf;
  ngtcp2_ssize w = ngtcp2_pkt_write_stateless_reset(buf.data(), buf.size(), token.data(), rand.data(), randlen);
  if (w > 0) send(from, fromlen, buf.data(), static_cast<std::size_t>(w));
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
  send(to, tolen, data, n, n);
}

void Endpoint::send(const sockaddr_storage& to, socklen_t tolen, const std::uint8_t* data, std::size_t n,
                    std::size_t segment) {
  if (!sock_.is_open()) return;
  out_.fd = sock_.native_handle();
  send_datagrams(out_, reinterpret_cast<const sockaddr*>(&to), tolen, data, n, segment);
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

}  // namespace quic

std::unique_ptr<QuicEndpoint> open_quic(IoThread& thread, const ListenSocket& listener, QuicAppMaker maker) {
  auto ep = std::make_unique<quic::Endpoint>(thread, listener, maker);
  ep->start();
  return ep;
}

}  // namespace csgi::standalone::detail
