#pragma once
/// Test harness for the gateway adapters behind real front servers: temp dirs, free loopback ports,
/// child processes, the docs/deploy templates rendered with @NAME@ placeholders, a small HTTP/1.1
/// client (Content-Length, chunked and close-delimited bodies) and a raw FastCGI client.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace csgi::test {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// A loopback TCP port below 32768 that was free a moment ago.
int free_port();
/// Waits until something accepts on 127.0.0.1:port (or the unix socket path); false after `timeout`.
bool wait_for_port(int port, std::chrono::milliseconds timeout = std::chrono::seconds(10));
bool wait_for_unix(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// A child process; stopped (SIGTERM, then SIGKILL after 5 s) when destroyed.
class Process {
public:
  /// Runs argv[0] with argv; stdout and stderr go to `log` (appended). `stdin_fd` ≥ 0 becomes fd 0.
  Process(std::vector<std::string> argv, const std::string& log, int stdin_fd = -1,
          std::vector<std::string> extra_env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  /// Sends `sig` and waits up to `timeout`; returns the wait status, or nullopt when still running.
  std::optional<int> stop(int sig, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  bool running();

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text, int mode = 0644);
/// Replaces every @NAME@ in the template file with vars["NAME"]; throws when a placeholder is left.
std::string render(const std::string& template_path, const std::map<std::string, std::string>& vars);

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool complete = false;  // the body ended as its framing said
  std::string header(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
};

/// Sends `request` (a full HTTP/1.1 request; "Connection: close" is advised) and reads the response.
HttpResponse http_raw(int port, const std::string& request, std::chrono::milliseconds timeout = std::chrono::seconds(10));
/// GET/POST helpers adding Host and Connection: close.
HttpResponse http(int port, const std::string& method, const std::string& target, const std::string& body = {},
                  std::vector<std::pair<std::string, std::string>> headers = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// An open connection for tests that read a response piece by piece or abandon it.
class Connection {
public:
  explicit Connection(int port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  void send(const std::string& bytes);
  /// Reads until `needle` has been received (or timeout); returns everything read so far.
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// Closes at once, with a RST (SO_LINGER 0) when `reset`.
  void close(bool reset = false);

private:
  int fd_ = -1;
  std::string got_;
};

/// One FastCGI request sent straight to a FastCGI socket ("unix:/path" or port); returns the raw CGI
/// response the app wrote to stdout, and whether the request ended with FCGI_END_REQUEST.
struct FcgiResult {
  std::string stdout_data;
  std::string stderr_data;
  bool ended = false;
};
FcgiResult fastcgi_request(const std::string& unix_path, const std::vector<std::pair<std::string, std::string>>& params,
                           const std::string& body = {}, std::chrono::milliseconds timeout = std::chrono::seconds(10));
/// Splits a CGI response ("Status: ..." + headers + body) into an HttpResponse.
HttpResponse parse_cgi_response(const std::string& raw);

/// The source tree root and the build's output files (set by CMake as compile definitions).
std::string source_dir();
/// Reads "KEY=VALUE" lines (the /env route of the gateway app) into a map.
std::map<std::string, std::string> parse_env(const std::string& body);

}  // namespace csgi::test

namespace csgi::test {

/// The account front servers run their workers as: when the tests run as root, Apache refuses to serve as
/// root, so it gets nobody/nogroup and the state directories are made world-accessible.
bool running_as_root();

/// Starts Apache 2.4 (event MPM, foreground) on 127.0.0.1:port serving `docroot`, with `include_conf`
/// (a rendered docs/deploy/apache/httpd-*.conf) and `modules` (extra LoadModule lines) added. Waits
/// until it accepts; returns nullptr (and a reason) when it does not start.
std::unique_ptr<Process> start_apache(const TempDir& dir, int port, const std::string& docroot, const std::string& include_conf,
                                      const std::string& modules, std::string& why);

/// Starts nginx (foreground) with `http_conf` (a rendered docs/deploy/nginx-csgi.conf) inside its http
/// block; waits for `wait_port`.
std::unique_ptr<Process> start_nginx(const TempDir& dir, const std::string& http_conf, int wait_port, std::string& why);

/// The log file name every Process started through the starters above writes to: dir / "<name>.log".
std::string log_path(const TempDir& dir, const std::string& name);

}  // namespace csgi::test
