#include "csgi/adapters/standalone/listen.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace csgi::standalone {

namespace {
bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return std::atoi(std::string(s).c_str()) <= 65535;
}
ListenAddress parse_plain_listen(std::string_view spec);
}  // namespace

ListenAddress parse_listen(std::string_view spec) {
  bool tls = spec.substr(0, 8) == "https://";
  if (tls || spec.substr(0, 7) == "http://") {
    spec.remove_prefix(tls ? 8 : 7);
    if (!spec.empty() && spec.back() == '/') spec.remove_suffix(1);  // the URL form "https://host:443/"
  }
  ListenAddress a = parse_plain_listen(spec);
  a.tls = tls;
  return a;
}

namespace {
ListenAddress parse_plain_listen(std::string_view spec) {
  ListenAddress a;
  if (spec.substr(0, 5) == "unix:") {
    a.kind = ListenAddress::Kind::unix_path;
    a.path = std::string(spec.substr(5));
    if (a.path.empty() || a.path.size() >= sizeof(sockaddr_un{}.sun_path))
      throw std::invalid_argument("bad unix socket path in --listen " + std::string(spec));
    return a;
  }
  if (all_digits(spec)) {
    a.port = std::string(spec);
    return a;
  }
  std::string_view host, port;
  if (!spec.empty() && spec.front() == '[') {
    auto close = spec.find(']');
    if (close == std::string_view::npos || close + 1 >= spec.size() || spec[close + 1] != ':')
      throw std::invalid_argument("expected [ipv6]:port in --listen " + std::string(spec));
    host = spec.substr(1, close - 1);
    port = spec.substr(close + 2);
  } else {
    auto colon = spec.rfind(':');
    if (colon == std::string_view::npos) throw std::invalid_argument("expected host:port in --listen " + std::string(spec));
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      throw std::invalid_argument("IPv6 addresses need brackets: [::1]:port, in --listen " + std::string(spec));
  }
  if (!all_digits(port)) throw std::invalid_argument("bad port in --listen " + std::string(spec));
  a.host = std::string(host);
  a.port = std::string(port);
  return a;
}
}  // namespace

void describe_socket(ListenSocket& s) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    s.tcp = true;
    s.server_name = host;
    s.server_port = std::to_string(ntohs(in->sin_port));
    s.display = s.server_name + ":" + s.server_port;
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    s.tcp = true;
    s.server_name = std::string("[") + host + "]";
    s.server_port = std::to_string(ntohs(in6->sin6_port));
    s.display = s.server_name + ":" + s.server_port;
  } else if (ss.ss_family == AF_UNIX) {
    auto* un = reinterpret_cast<sockaddr_un*>(&ss);
    s.tcp = false;
    s.server_name = "localhost";
    s.server_port = "0";
    s.display = std::string("unix:") + un->sun_path;
  }
}

ListenSocket open_listen(const ListenAddress& addr, bool reuseport, int backlog) {
  ListenSocket s;
  auto fail = [&](const std::string& what) {
    int e = errno;
    if (s.fd >= 0) ::close(s.fd);
    std::string name = addr.kind == ListenAddress::Kind::unix_path ? "unix:" + addr.path : addr.host + ":" + addr.port;
    throw std::system_error(e, std::generic_category(), "cannot listen on " + name + " (" + what + ")");
  };
  if (addr.kind == ListenAddress::Kind::unix_path) {
    s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.fd < 0) fail("socket");
    struct stat st {};
    if (::lstat(addr.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(addr.path.c_str());
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, addr.path.c_str(), addr.path.size() + 1);
    if (::bind(s.fd, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) fail("bind");
    if (::listen(s.fd, backlog) != 0) fail("listen");
    describe_socket(s);
    s.tls = addr.tls;
    return s;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const char* host = addr.host.empty() ? "0.0.0.0" : addr.host.c_str();
  if (int rc = ::getaddrinfo(host, addr.port.c_str(), &hints, &res); rc != 0 || !res)
    throw std::runtime_error("cannot resolve " + addr.host + ": " + ::gai_strerror(rc));
  s.fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.fd < 0) {
    ::freeaddrinfo(res);
    fail("socket");
  }
  int one = 1;
  ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (res->ai_family == AF_INET6) ::setsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  // Wake the acceptor only when the request's first bytes have arrived (saves a read that would block).
  int defer = 1;
  ::setsockopt(s.fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
  int rc = ::bind(s.fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (rc != 0) fail("bind");
  if (::listen(s.fd, backlog) != 0) fail("listen");
  describe_socket(s);
  s.tls = addr.tls;
  return s;
}

std::vector<ListenSocket> systemd_sockets() {
  std::vector<ListenSocket> out;
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds) return out;
  bool mine = std::strtol(pid, nullptr, 10) == static_cast<long>(::getpid());
  int n = static_cast<int>(std::strtol(fds, nullptr, 10));
  std::vector<std::string> names;
  if (const char* fdnames = std::getenv("LISTEN_FDNAMES")) {
    std::string_view all(fdnames);
    for (std::size_t pos = 0; pos <= all.size();) {
      std::size_t colon = std::min(all.find(':', pos), all.size());
      names.emplace_back(all.substr(pos, colon - pos));
      pos = colon + 1;
    }
  }
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!mine || n <= 0) return out;
  for (int fd = 3; fd < 3 + n; ++fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ListenSocket s;
    s.fd = fd;
    s.systemd = true;
    describe_socket(s);
    s.tls = static_cast<std::size_t>(fd - 3) < names.size() && names[static_cast<std::size_t>(fd - 3)] == "https";
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace csgi::standalone
