// A QUIC connection under HTTP/3: its handshake, packets in and out, timers and closing (see
// quic_conn.hpp).
#include "csgi/adapters/standalone/detail/http3/quic_conn.hpp"

#include <fcntl.h>

namespace csgi::standalone::detail::quic {

Connection::Connection(Endpoint& ep, const sockaddr_storage& from, socklen_t fromlen)
    : ep_(ep), remote_(from), remote_len_(fromlen), timer_(ep.thread.ioc), app_timer_(ep.thread.ioc) {
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
  ep_.group.make_cid(ep_.thread.index, scid.data);
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
  if (len == cid_len) c.ep_.group.make_cid(c.ep_.thread.index, cid->data);
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

void Connection::on_packet(const sockaddr_storage& from, socklen_t fromlen, const std::uint8_t* data, std::size_t n) {
  if (gone_) return;
  if (lingering_) {
    ++after_close_;
    if (!close_packet_.empty() && (after_close_ & (after_close_ - 1)) == 0)
      send(close_packet_.data(), close_packet_.size());
    return;
  }
  auto keep = shared_from_this();
  // The path the datagram came by: from another address than before (a NAT rebinding, a client that
  // moved), ngtcp2 validates the new path and the answers go there (write()).
  ngtcp2_path p{};
  p.local.addr = reinterpret_cast<ngtcp2_sockaddr*>(&ep_.local);
  p.local.addrlen = ep_.local_len;
  p.remote.addr = const_cast<ngtcp2_sockaddr*>(reinterpret_cast<const ngtcp2_sockaddr*>(&from));
  p.remote.addrlen = fromlen;
  ngtcp2_pkt_info pi{};
  int rv = ngtcp2_conn_read_pkt(conn_, &p, &pi, data, n, now_ns());
  if (rv != 0) return fail(rv);
  write();
}

// A failed read or write: the connection is closed (CONNECTION_CLOSE with what went wrong), drained (the
// peer closed it) or, when ngtcp2 says so, dropped.
void Connection::fail(int liberr) {
  if (liberr == NGTCP2_ERR_DRAINING) return linger({});
  if (liberr == NGTCP2_ERR_DROP_CONN || liberr == NGTCP2_ERR_IDLE_CLOSE || liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT ||
      liberr == NGTCP2_ERR_CLOSING)
    return drop();
  ngtcp2_connection_close_error ccerr;
  if (liberr == NGTCP2_ERR_CALLBACK_FAILURE && app_ && app_->error() != 0) {
    ngtcp2_connection_close_error_set_application_error(&ccerr, app_->error(), nullptr, 0);
  } else if (liberr == NGTCP2_ERR_CRYPTO) {
    ngtcp2_connection_close_error_set_transport_error_tls_alert(&ccerr, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
  } else {
    ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, liberr, nullptr, 0);
  }
  close_with(ccerr);
}

void Connection::close_now(std::uint64_t code) {
  if (gone_) return;
  auto keep = shared_from_this();
  if (lingering_) return drop();
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_set_application_error(&ccerr, code, nullptr, 0);
  close_with(ccerr);
}

// Sends the CONNECTION_CLOSE and enters the closing period with it.
void Connection::close_with(const ngtcp2_connection_close_error& ccerr) {
  std::vector<std::uint8_t> buf(max_packet);
  ngtcp2_path p = path();
  ngtcp2_pkt_info pi{};
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &p, &pi, buf.data(), buf.size(), &ccerr, now_ns());
  if (n <= 0) return drop();
  buf.resize(static_cast<std::size_t>(n));
  send(buf.data(), buf.size());
  linger(std::move(buf));
}

// The closing period (`close_packet`: the CONNECTION_CLOSE sent) or the draining period (none): the app
// is done now, the IDs stay until the period ends (RFC 9000 §10.2), unless the server is stopping.
void Connection::linger(std::vector<std::uint8_t> close_packet) {
  if (app_) app_->detach();
  app_timer_.cancel();
  if (ep_.stopping) return drop();
  lingering_ = true;
  close_packet_ = std::move(close_packet);
  auto pto = std::chrono::nanoseconds(ngtcp2_conn_get_pto(conn_));
  timer_.expires_after(std::max<Clock::duration>(3 * pto, min_closing_period));
  timer_.async_wait([w = weak_from_this()](error_code ec) {
    if (ec) return;
    if (auto self = w.lock()) self->drop();
  });
}

void Connection::drop() noexcept {
  if (gone_) return;
  gone_ = true;
  timer_.cancel();
  app_timer_.cancel();
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
  if (gone_ || lingering_) return;
  auto keep = shared_from_this();
  if (closing_) return close_now(close_code_);
  // The pass's datagrams go out together (GSO), each run to one address: ngtcp2 says where each packet
  // goes (a path being validated, the new one after a migration), and the last is the connection's.
  // What was gathered goes before a CONNECTION_CLOSE.
  DatagramBatch<max_packet> out;
  auto send_run = [this](const std::uint8_t* data, std::size_t n, std::size_t segment) {
    ep_.send(remote_, remote_len_, data, n, segment);
  };
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  auto close = [&](std::uint64_t code) {
    out.flush(send_run);
    close_now(code);
  };
  std::size_t packets = 0;
  for (std::size_t turn = 0; turn < 4 * packets_per_turn; ++turn) {
    std::int64_t id = -1;
    bool fin = false;
    std::array<QuicVec, 16> vec;
    long count = 0;
    if (ngtcp2_conn_get_handshake_completed(conn_)) {
      count = app_->pending(id, fin, vec.data(), vec.size());
      if (count < 0) return close(app_->error());
    }
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    ngtcp2_ssize datalen = -1;
    ngtcp2_pkt_info pi{};
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, out.room(), max_packet, &datalen, flags, id,
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
        if (!app_->wrote(id, static_cast<std::size_t>(datalen))) return close(app_->error());
        continue;
      }
      out.flush(send_run);
      return fail(static_cast<int>(n));
    }
    if (datalen >= 0 && id >= 0 && !app_->wrote(id, static_cast<std::size_t>(datalen))) return close(app_->error());
    if (n == 0) break;
    const ngtcp2_addr& to = ps.path.remote;
    if (to.addrlen != remote_len_ || std::memcmp(to.addr, &remote_, remote_len_) != 0) {
      out.split(static_cast<std::size_t>(n), send_run);  // what was gathered goes to the address before
      std::memcpy(&remote_, to.addr, to.addrlen);
      remote_len_ = static_cast<socklen_t>(to.addrlen);
    }
    out.add(static_cast<std::size_t>(n), send_run);
    if (++packets == packets_per_turn) {
      wake();  // the rest after the other connections' turns
      break;
    }
  }
  out.flush(send_run);
  // While the app is at work (it may think, or write, for longer than the idle timeout), PINGs keep the
  // connection from going idle; otherwise a silent peer is gone after the idle timeout.
  bool busy = app_->app_at_work();
  if (busy != keep_alive_) {
    keep_alive_ = busy;
    auto idle = static_cast<ngtcp2_duration>(ep_.thread.shared.opt.idle_timeout.count()) * NGTCP2_MILLISECONDS;
    ngtcp2_conn_set_keep_alive_timeout(conn_, busy ? idle / 2 : 0);
  }
  arm_timer();
  arm_app_timer();
}

void Connection::arm_app_timer() {
  Clock::time_point at = app_->deadline();
  if (at == app_at_) return;
  app_at_ = at;
  if (at == Clock::time_point::max()) {
    app_timer_.cancel();
    return;
  }
  app_timer_.expires_at(at);
  app_timer_.async_wait([w = weak_from_this()](error_code ec) {
    if (ec) return;
    if (auto self = w.lock()) self->safely(&Connection::on_app_timer);
  });
}

void Connection::on_app_timer() {
  if (gone_ || lingering_) return;
  auto keep = shared_from_this();
  app_at_ = Clock::time_point::max();
  app_->expired();
  close_now(app_->error());
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
  if (gone_ || lingering_) return;
  auto keep = shared_from_this();
  int rv = ngtcp2_conn_handle_expiry(conn_, now_ns());
  if (rv != 0) return fail(rv);
  write();
}

Endpoint::Endpoint(IoThread& t, const ListenSocket& l, QuicAppMaker m)
    : thread(t), listener(l), maker(m), group(*t.shared.quic), sock_(t.ioc), stop_timer_(t.ioc) {
  cred = load_credentials(t.shared.opt);
  secret = group.secret();
  // The group's socket of this io thread (quic_sockets.hpp); the group keeps its own descriptor.
  int own = group.fd(l.fd, t.index);
  int fd = own < 0 ? -1 : ::fcntl(own, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) throw std::runtime_error("HTTP/3 on " + l.display + ": no UDP socket: " + std::strerror(errno));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("HTTP/3 on " + l.display + ": " + std::strerror(e));
  }
  local = ss;
  local_len = len;
  sock_.assign(ss.ss_family == AF_INET6 ? Udp::v6() : Udp::v4(), fd);
}

}  // namespace csgi::standalone::detail::quic
