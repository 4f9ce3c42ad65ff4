#pragma once
/// Listening sockets for the standalone server: parsing `--listen` values, opening TCP (IPv4/IPv6) and
/// Unix sockets, and taking over the sockets systemd passes (LISTEN_FDS, sd_listen_fds(3) protocol).
#include <string>
#include <string_view>
#include <vector>

namespace csgi::standalone {

struct ListenAddress {
  enum class Kind { tcp, unix_path } kind = Kind::tcp;
  std::string host;   // "" = every IPv4 address; IPv6 without brackets
  std::string port;   // numeric
  std::string path;   // unix socket path
  bool tls = false;   // given as https://…
};

/// Parses "host:port", "[v6]:port", ":port", "port" or "unix:/path", each optionally after "http://" or
/// "https://" (TLS); throws std::invalid_argument.
ListenAddress parse_listen(std::string_view spec);

/// An open listening socket.
struct ListenSocket {
  int fd = -1;
  bool tcp = true;
  std::string server_name;  // SERVER_NAME default (host part)
  std::string server_port;  // SERVER_PORT ("" for unix sockets: "0" is used)
  std::string display;      // "127.0.0.1:5000", "[::1]:5000", "unix:/run/x.sock"
  bool systemd = false;
  bool tls = false;         // serves TLS (an https:// address, or a systemd socket named "https")
};

/// Opens (socket, bind, listen) one address. With `reuseport` the socket gets SO_REUSEPORT. Throws
/// std::system_error naming the address on failure. A unix path that exists as a socket is replaced.
ListenSocket open_listen(const ListenAddress& addr, bool reuseport, int backlog = 4096);

/// The sockets given by systemd when LISTEN_PID is this process and LISTEN_FDS > 0 (fds 3…), else none;
/// one named "https" in LISTEN_FDNAMES (FileDescriptorName=https) serves TLS. Unsets the variables, as
/// sd_listen_fds(1) does.
std::vector<ListenSocket> systemd_sockets();

/// Fills server_name/server_port/display of a socket from getsockname().
void describe_socket(ListenSocket& s);

}  // namespace csgi::standalone
