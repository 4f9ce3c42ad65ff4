// The PROXY protocol at the start of a connection (--proxy-protocol; proxy_protocol.hpp parses). The
// first bytes are peeked (MSG_PEEK) until they tell: a trusted proxy's header is then consumed exactly,
// and nothing after it, so the request (or a TLS handshake) that follows is read by serve() as on any
// connection. A peer that is not trusted is only looked at: it is served unless it sends a header.
#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"
#include "csgi/adapters/standalone/detail/transport/transport.hpp"

namespace csgi::standalone::detail {

namespace pp = proxy_protocol;

namespace {

// "1.2.3.4:5678" or "[::1]:5678", for the error log.
std::string peer_text(const char* addr, const char* port) {
  std::string a = addr[0] ? addr : "?";
  if (a.find(':') != std::string::npos) a = "[" + a + "]";
  return a + ":" + (port[0] ? port : "?");
}

// Text (an HTTP request, a version 1 header) rather than binary bytes (version 2, TLS): worth a 400.
bool looks_like_text(std::string_view bytes) {
  if (bytes.empty()) return false;
  char c = bytes.front();
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

// The peer has closed its side (after the bytes still unread).
bool peer_closed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

void Transport::read_proxy_header() {
  if (!peer_.addr[0]) {  // no peer address: reset before it was accepted (HAProxy's checks close so)
    close();
    return;
  }
  state_ = State::proxy;
  char head[pp::max_header];
  ssize_t n;
  do n = ::recv(fd_, head, sizeof head, MSG_PEEK);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    dead_ = true;
    close();
    return;
  }
  if (n == 0) {  // closed before a byte (a TCP health check)
    close();
    return;
  }
  std::string_view bytes(head, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (sh_.proxy.trusts(peer_.addr)) proxy_from_trusted(bytes);
  else proxy_from_untrusted(bytes);
}

// A trusted proxy's connection: its header is required.
void Transport::proxy_from_trusted(std::string_view bytes) {
  peer_.proxy_partial = !bytes.empty();
  pp::Result r = pp::parse(bytes);
  switch (r.status) {
    case pp::Status::complete: accept_proxy_header(r.header, r.length); return;
    case pp::Status::invalid: refuse_proxy(r.why, bytes); return;
    case pp::Status::absent: refuse_proxy("no PROXY header from a --trusted-proxy address", bytes); return;
    case pp::Status::need_more: break;
  }
  if (!bytes.empty() && peer_closed(fd_)) {
    refuse_proxy("the connection closed within the PROXY header", bytes);
    return;
  }
  wait_proxy_bytes();
}

// Any other peer is served, unless its first bytes are a PROXY header.
void Transport::proxy_from_untrusted(std::string_view bytes) {
  if (pp::has_signature(bytes)) {
    refuse_proxy("a PROXY header from an address that is not a --trusted-proxy", bytes);
  } else if (pp::parse(bytes).status == pp::Status::need_more && !peer_closed(fd_)) {
    wait_proxy_bytes();
  } else {
    serve();
  }
}

void Transport::wait_proxy_bytes() {
  socket_.async_wait(Socket::wait_read, [self = shared_from_this()](error_code ec) {
    if (self->state_ != State::proxy) return;
    if (ec) {
      self->dead_ = true;
      self->close();
      return;
    }
    self->read_proxy_header();
  });
}

// Consumes the header (already received: the bytes are there) and takes the client's addresses from it.
void Transport::accept_proxy_header(const pp::Header& h, std::size_t length) {
  char sink[pp::max_header];
  while (length > 0) {
    ssize_t n = ::recv(fd_, sink, length, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      dead_ = true;
      close();
      return;
    }
    length -= static_cast<std::size_t>(n);
  }
  peer_.https = h.ssl;
  if (h.family == AF_INET || h.family == AF_INET6) {
    ::inet_ntop(h.family, h.src.data(), peer_.addr, sizeof peer_.addr);
    std::memset(peer_.port, 0, sizeof peer_.port);
    std::to_chars(peer_.port, peer_.port + sizeof peer_.port - 1, h.src_port);
    std::memset(peer_.server_port, 0, sizeof peer_.server_port);
    std::to_chars(peer_.server_port, peer_.server_port + sizeof peer_.server_port - 1, h.dst_port);
  }
  serve();
}

// Logged with the peer's own address; text gets a 400 with the reason (then the connection closes), other
// bytes a plain close.
void Transport::refuse_proxy(std::string_view why, std::string_view bytes) {
  sh_.errors.write("csgi: PROXY protocol: refused the connection from " + peer_text(peer_.addr, peer_.port) + ": " +
                   std::string(why));
  if (!looks_like_text(bytes)) return close();
  state_ = State::open;
  h1_->reject(400, why);
}

void Transport::proxy_timeout() {
  if (peer_.proxy_partial)
    sh_.errors.write("csgi: PROXY protocol: refused the connection from " + peer_text(peer_.addr, peer_.port) +
                     ": no complete PROXY header within the header timeout");
  close();
}

}  // namespace csgi::standalone::detail
