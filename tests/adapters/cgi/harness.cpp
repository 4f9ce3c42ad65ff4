#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace csgi::test {

namespace {
using clock = std::chrono::steady_clock;

int connect_tcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(w));
  }
  return true;
}

/// Reads what arrives within the deadline; returns false on timeout, true at EOF.
bool read_some(int fd, std::string& out, clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
  if (left <= 0) return false;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
  char buf[65536];
  ssize_t r = ::recv(fd, buf, sizeof buf, 0);
  if (r <= 0) return true;
  out.append(buf, static_cast<std::size_t>(r));
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Parses a complete header block; returns the offset of the body or npos when incomplete.
std::size_t parse_head(const std::string& raw, HttpResponse& res, bool cgi) {
  std::size_t end = raw.find("\r\n\r\n");
  std::size_t sep = 4;
  if (end == std::string::npos) {
    end = raw.find("\n\n");
    sep = 2;
  }
  if (end == std::string::npos) return std::string::npos;
  std::istringstream in(raw.substr(0, end));
  std::string line;
  bool first = !cgi;
  if (cgi) res.status = 200;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (first) {
      first = false;
      auto sp = line.find(' ');
      res.status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (cgi && lower(name) == "status") {
      res.status = std::atoi(value.c_str());
      continue;
    }
    res.headers.emplace_back(name, value);
  }
  return end + sep;
}

/// Decodes a chunked body; returns true when the last chunk was seen.
bool dechunk(std::string_view in, std::string& out) {
  for (;;) {
    auto eol = in.find("\r\n");
    if (eol == std::string_view::npos) return false;
    std::size_t size = std::strtoul(std::string(in.substr(0, eol)).c_str(), nullptr, 16);
    in.remove_prefix(eol + 2);
    if (size == 0) return true;
    if (in.size() < size + 2) {
      out.append(in.substr(0, std::min(in.size(), size)));
      return false;
    }
    out.append(in.substr(0, size));
    in.remove_prefix(size + 2);
  }
}
}  // namespace

TempDir::TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/csgi-gw-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  ::chmod(path_.c_str(), 0755);
}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int free_port() {
  static std::mt19937 rng(static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 200; ++attempt) {
    int port = 20000 + static_cast<int>(rng() % 12000);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return port;
  }
  throw std::runtime_error("no free port");
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  auto deadline = clock::now() + timeout;
  while (clock::now() < deadline) {
    int fd = connect_tcp(port);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool wait_for_unix(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = clock::now() + timeout;
  while (clock::now() < deadline) {
    int fd = connect_unix(path);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

Process::Process(std::vector<std::string> argv, const std::string& log, int stdin_fd, std::vector<std::string> extra_env) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a killed test run leaves no server behind
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
    else {
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    for (auto& e : extra_env) ::putenv(e.data());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::_Exit(127);
  }
}

bool Process::running() {
  if (reaped_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

std::optional<int> Process::stop(int sig, std::chrono::milliseconds timeout) {
  if (reaped_) return 0;
  ::kill(pid_, sig);
  auto deadline = clock::now() + timeout;
  while (clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

Process::~Process() {
  if (pid_ <= 0 || reaped_) return;
  if (!stop(SIGTERM)) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::kill(-pid_, SIGKILL);  // anything the server left in its process group
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text, int mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string render(const std::string& template_path, const std::map<std::string, std::string>& vars) {
  std::string text = read_file(template_path);
  if (text.empty()) throw std::runtime_error("cannot read template " + template_path);
  for (const auto& [name, value] : vars) {
    std::string key = "@" + name + "@";
    for (std::size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + value.size()))
      text.replace(p, key.size(), value);
  }
  // A placeholder is @ + capitals/underscore + @ (not e.g. an e-mail address).
  for (std::size_t p = text.find('@'); p != std::string::npos; p = text.find('@', p + 1)) {
    std::size_t q = p + 1;
    while (q < text.size() && (std::isupper(static_cast<unsigned char>(text[q])) || text[q] == '_')) ++q;
    if (q < text.size() && q > p + 1 && text[q] == '@')
      throw std::runtime_error("template " + template_path + " leaves " + text.substr(p, q - p + 1) + " unset");
  }
  return text;
}

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& [n, v] : headers)
    if (lower(n) == lower(name)) return v;
  return {};
}
std::vector<std::string> HttpResponse::all(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [n, v] : headers)
    if (lower(n) == lower(name)) out.push_back(v);
  return out;
}

HttpResponse http_raw(int port, const std::string& request, std::chrono::milliseconds timeout) {
  HttpResponse res;
  int fd = connect_tcp(port);
  if (fd < 0) return res;
  auto deadline = clock::now() + timeout;
  send_all(fd, request);
  std::string raw;
  std::size_t body_at = std::string::npos;
  bool head_request = request.rfind("HEAD ", 0) == 0;
  for (;;) {
    std::size_t before = raw.size();
    bool alive = read_some(fd, raw, deadline);
    bool eof = alive && raw.size() == before;
    if (body_at == std::string::npos) body_at = parse_head(raw, res, false);
    if (body_at != std::string::npos) {
      std::string_view body = std::string_view(raw).substr(body_at);
      std::string te = lower(res.header("Transfer-Encoding"));
      std::string cl = res.header("Content-Length");
      if (head_request || res.status == 304 || res.status == 204) {
        res.complete = true;
        break;
      }
      if (te.find("chunked") != std::string::npos) {
        res.body.clear();
        if (dechunk(body, res.body)) {
          res.complete = true;
          break;
        }
      } else if (!cl.empty()) {
        res.body = std::string(body.substr(0, std::stoul(cl)));
        if (body.size() >= std::stoul(cl)) {
          res.complete = true;
          break;
        }
      } else {
        res.body = std::string(body);
        if (eof) {
          res.complete = true;
          break;
        }
      }
    }
    if (!alive || eof) break;
  }
  ::close(fd);
  return res;
}

HttpResponse http(int port, const std::string& method, const std::string& target, const std::string& body,
                  std::vector<std::pair<std::string, std::string>> headers, std::chrono::milliseconds timeout) {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n";
  for (const auto& [n, v] : headers) req += n + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  return http_raw(port, req, timeout);
}

Connection::Connection(int port) : fd_(connect_tcp(port)) {
  if (fd_ < 0) throw std::runtime_error("cannot connect to port " + std::to_string(port));
}
Connection::~Connection() { close(); }
void Connection::send(const std::string& bytes) { send_all(fd_, bytes); }
std::string Connection::read_until(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = clock::now() + timeout;
  while (got_.find(needle) == std::string::npos) {
    std::size_t before = got_.size();
    if (!read_some(fd_, got_, deadline) || got_.size() == before) break;
  }
  return got_;
}
void Connection::close(bool reset) {
  if (fd_ < 0) return;
  if (reset) {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  ::close(fd_);
  fd_ = -1;
}

namespace {
void put_length(std::string& out, std::size_t n) {
  if (n < 128) {
    out.push_back(static_cast<char>(n));
  } else {
    out.push_back(static_cast<char>(0x80 | ((n >> 24) & 0x7f)));
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
  }
}
void put_record(std::string& out, int type, std::string_view content) {
  do {
    std::size_t n = std::min<std::size_t>(content.size(), 65535);
    unsigned char h[8] = {1, static_cast<unsigned char>(type), 0, 1, static_cast<unsigned char>(n >> 8),
                          static_cast<unsigned char>(n & 0xff), 0, 0};
    out.append(reinterpret_cast<char*>(h), 8);
    out.append(content.substr(0, n));
    content.remove_prefix(n);
  } while (!content.empty());
}
}  // namespace

FcgiResult fastcgi_request(const std::string& unix_path, const std::vector<std::pair<std::string, std::string>>& params,
                           const std::string& body, std::chrono::milliseconds timeout) {
  FcgiResult result;
  int fd = connect_unix(unix_path);
  if (fd < 0) return result;
  std::string out;
  put_record(out, 1, std::string("\0\1\0\0\0\0\0\0", 8));  // BEGIN_REQUEST, RESPONDER, no keep-conn
  std::string p;
  for (const auto& [n, v] : params) {
    put_length(p, n.size());
    put_length(p, v.size());
    p += n;
    p += v;
  }
  if (!p.empty()) put_record(out, 4, p);
  put_record(out, 4, {});
  if (!body.empty()) put_record(out, 5, body);
  put_record(out, 5, {});
  send_all(fd, out);
  auto deadline = clock::now() + timeout;
  std::string raw;
  std::size_t pos = 0;
  while (!result.ended) {
    while (raw.size() - pos >= 8) {
      auto* h = reinterpret_cast<const unsigned char*>(raw.data() + pos);
      std::size_t len = (std::size_t{h[4]} << 8) | h[5], pad = h[6];
      if (raw.size() - pos < 8 + len + pad) break;
      std::string_view content(raw.data() + pos + 8, len);
      if (h[1] == 6) result.stdout_data.append(content);
      else if (h[1] == 7) result.stderr_data.append(content);
      else if (h[1] == 3) result.ended = true;
      pos += 8 + len + pad;
    }
    if (result.ended) break;
    std::size_t before = raw.size();
    if (!read_some(fd, raw, deadline) || raw.size() == before) break;
  }
  ::close(fd);
  return result;
}

HttpResponse parse_cgi_response(const std::string& raw) {
  HttpResponse res;
  std::size_t body_at = parse_head(raw, res, true);
  if (body_at == std::string::npos) return res;
  res.body = raw.substr(body_at);
  res.complete = true;
  return res;
}

std::map<std::string, std::string> parse_env(const std::string& body) {
  std::map<std::string, std::string> env;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::string source_dir() { return CSGI_SOURCE_DIR; }

}  // namespace csgi::test

namespace csgi::test {

bool running_as_root() { return ::geteuid() == 0; }

std::string log_path(const TempDir& dir, const std::string& name) { return dir / (name + ".log"); }

std::unique_ptr<Process> start_apache(const TempDir& dir, int port, const std::string& docroot, const std::string& include_conf,
                                      const std::string& modules, std::string& why) {
  const std::string mods = "/usr/lib/apache2/modules/";
  std::string conf;
  conf += "ServerRoot \"" + dir.path() + "\"\n";
  conf += "DefaultRuntimeDir \"" + dir.path() + "\"\n";
  conf += "Mutex file:" + dir.path() + "\n";
  conf += "PidFile \"" + dir.path() + "/httpd.pid\"\n";
  conf += "Listen 127.0.0.1:" + std::to_string(port) + "\n";
  conf += "ServerName 127.0.0.1\n";
  conf += "ErrorLog \"" + log_path(dir, "apache-error") + "\"\nLogLevel warn\n";
  conf += "LoadModule mpm_event_module " + mods + "mod_mpm_event.so\n";
  conf += "LoadModule authz_core_module " + mods + "mod_authz_core.so\n";
  conf += "LoadModule mime_module " + mods + "mod_mime.so\n";
  conf += "LoadModule dir_module " + mods + "mod_dir.so\n";
  conf += modules;
  conf += "TypesConfig /etc/mime.types\n";
  if (running_as_root()) conf += "User nobody\nGroup nogroup\n";
  conf += "DocumentRoot \"" + docroot + "\"\n";
  conf += "DirectoryIndex disabled\n";
  conf += "Timeout 10\nKeepAlive On\n";
  conf += include_conf + "\n";
  write_file(dir / "httpd.conf", conf);
  auto p = std::make_unique<Process>(std::vector<std::string>{"apache2", "-f", dir / "httpd.conf", "-DFOREGROUND"},
                                     log_path(dir, "apache-console"));
  if (!wait_for_port(port)) {
    why = "apache2 did not start: " + read_file(log_path(dir, "apache-console")) + read_file(log_path(dir, "apache-error"));
    return nullptr;
  }
  return p;
}

std::unique_ptr<Process> start_nginx(const TempDir& dir, const std::string& http_conf, int wait_port, std::string& why) {
  std::string conf;
  conf += "daemon off;\nmaster_process on;\nworker_processes 1;\n";
  if (running_as_root()) conf += "user root root;\n";
  conf += "pid " + dir.path() + "/nginx.pid;\n";
  conf += "error_log " + log_path(dir, "nginx-error") + " info;\n";
  conf += "events { worker_connections 4096; }\n";
  conf += "http {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    conf += std::string("  ") + t + "_temp_path " + dir.path() + "/" + t + "_temp;\n";
  conf += "  include " + dir.path() + "/csgi.conf;\n}\n";
  write_file(dir / "nginx.conf", conf);
  write_file(dir / "fastcgi_params", read_file("/etc/nginx/fastcgi_params"));
  write_file(dir / "csgi.conf", http_conf);
  auto p = std::make_unique<Process>(std::vector<std::string>{"nginx", "-p", dir.path(), "-c", dir / "nginx.conf"},
                                     log_path(dir, "nginx-console"));
  if (!wait_for_port(wait_port)) {
    why = "nginx did not start: " + read_file(log_path(dir, "nginx-console")) + read_file(log_path(dir, "nginx-error"));
    return nullptr;
  }
  return p;
}

}  // namespace csgi::test
