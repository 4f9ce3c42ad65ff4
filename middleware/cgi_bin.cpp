#include "csgi/middleware/cgi_bin.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "csgi/core/percent.hpp"

namespace csgi::mw {

struct CgiBin::State {
  CgiBinOptions options;
  std::string root;  // realpath, no trailing '/'
  std::atomic<std::size_t> running{0};
};

namespace {

using Clock = std::chrono::steady_clock;

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return {};
  return buf;
}

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* p = std::getenv("PATH");
  std::string_view path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (!dir.empty()) {
      std::string full = dir + "/" + name;
      struct stat st {};
      if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0) return full;
    }
    if (colon == std::string_view::npos) return {};
    path.remove_prefix(colon + 1);
  }
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

/// A running script: its pipes, the request body still to write, and its reaping. The stream body of
/// the response; also used while the headers are read.
class CgiProcess final : public Stream {
public:
  CgiProcess(std::shared_ptr<CgiBin::State> state, std::string label, ErrorStream* errors)
      : state_(std::move(state)), label_(std::move(label)), errors_(errors) {}
  ~CgiProcess() override { close(); }

  /// Starts the script. Returns 0 or an errno value.
  int spawn(const std::vector<std::string>& argv, const std::vector<std::string>& envp, const std::string& dir,
            std::string body) {
    body_ = std::move(body);
    deadline_ = Clock::now() + state_->options.timeout;
    int in[2], out[2], err[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) return errno;
    if (::pipe2(out, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(in[0]), ::close(in[1]);
      return e;
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      return e;
    }
    std::vector<char*> av, ev;
    for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    for (const auto& e : envp) ev.push_back(const_cast<char*>(e.c_str()));
    ev.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in[1], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, av[0], &fa, &at, av.data(), ev.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    ::close(in[1]), ::close(out[1]), ::close(err[1]);
    in_ = in[0], out_ = out[0], err_ = err[0];
    if (rc != 0) {
      close_fd(in_), close_fd(out_), close_fd(err_);
      return rc;
    }
    pid_ = pid;
    for (int fd : {in_, out_, err_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (body_.empty()) ::shutdown(in_, SHUT_WR), close_fd(in_);
    return 0;
  }

  enum class Got { data, eof, timeout };

  /// Waits for stdout bytes (appended to `out`), feeding stdin and draining stderr meanwhile.
  Got pump(std::string& out) {
    char buf[65536];
    while (true) {
      if (out_ < 0) return Got::eof;
      pollfd fds[3];
      int n = 0;
      fds[n++] = {out_, POLLIN, 0};
      int err_at = -1, in_at = -1;
      if (err_ >= 0) err_at = n, fds[n++] = {err_, POLLIN, 0};
      if (in_ >= 0) in_at = n, fds[n++] = {in_, POLLOUT, 0};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return Got::timeout;
      int r = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(left, INT_MAX)));
      if (r < 0) {
        if (errno == EINTR) continue;
        throw std::system_error(errno, std::generic_category(), "cgi_bin: poll");
      }
      if (r == 0) return Got::timeout;
      if (in_at >= 0 && fds[in_at].revents) feed();
      if (err_at >= 0 && fds[err_at].revents) drain_stderr();
      if (fds[0].revents) {
        ssize_t got = ::read(out_, buf, sizeof buf);
        if (got > 0) {
          out.append(buf, static_cast<std::size_t>(got));
          return Got::data;
        }
        if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          close_fd(out_);
          return Got::eof;
        }
      }
    }
  }

  bool next(std::string& chunk) override {
    if (!pending_.empty()) {
      chunk = std::move(pending_);
      pending_.clear();
      return true;
    }
    chunk.clear();
    switch (pump(chunk)) {
      case Got::data: return true;
      case Got::eof:
        finish();
        return false;
      case Got::timeout:
      default:
        log("timed out after the headers; killed");
        kill_group();
        throw std::runtime_error("cgi_bin: " + label_ + " timed out");
    }
  }

  /// Kills what is still running, reaps, closes every descriptor, frees the slot. Idempotent.
  void close() override {
    if (pid_ > 0) kill_group();
    close_fd(in_), close_fd(out_);
    if (err_ >= 0) {
      drain_stderr();
      close_fd(err_);
    }
    flush_stderr_line();
    release();
  }

  /// After stdout's end: waits (until the deadline) for the script to exit, then reaps it.
  void finish() {
    while (pid_ > 0) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        report(status);
        break;
      }
      if (r < 0 && errno != EINTR) {
        pid_ = -1;
        break;
      }
      if (Clock::now() >= deadline_) {
        log("still running after closing stdout at the timeout; killed");
        kill_group();
        break;
      }
      if (err_ >= 0) drain_stderr();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    close();
  }

  void kill_group() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  void set_pending(std::string s) { pending_ = std::move(s); }
  void mark_acquired() { acquired_ = true; }
  void log(const std::string& what) {
    if (errors_) errors_->write("cgi_bin: " + label_ + ": " + what);
  }

private:
  void feed() {
    while (in_ >= 0 && written_ < body_.size()) {
      ssize_t w = ::send(in_, body_.data() + written_, body_.size() - written_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        written_ += static_cast<std::size_t>(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EINTR)) return;
      close_fd(in_);  // EPIPE: the script stopped reading; fine
      return;
    }
    if (in_ >= 0) {
      ::shutdown(in_, SHUT_WR);
      close_fd(in_);
      body_.clear();
      body_.shrink_to_fit();
    }
  }

  void drain_stderr() {
    char buf[4096];
    while (err_ >= 0) {
      ssize_t got = ::read(err_, buf, sizeof buf);
      if (got > 0) {
        err_line_.append(buf, static_cast<std::size_t>(got));
        std::size_t nl;
        while ((nl = err_line_.find('\n')) != std::string::npos) {
          log(err_line_.substr(0, nl));
          err_line_.erase(0, nl + 1);
        }
        if (err_line_.size() > 8192) flush_stderr_line();
        continue;
      }
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
      close_fd(err_);
    }
  }

  void flush_stderr_line() {
    if (!err_line_.empty()) log(err_line_);
    err_line_.clear();
  }

  void report(int status) {
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) log("exited with status " + std::to_string(WEXITSTATUS(status)));
    if (WIFSIGNALED(status)) log("killed by signal " + std::to_string(WTERMSIG(status)));
  }

  void release() {
    if (acquired_) state_->running.fetch_sub(1, std::memory_order_acq_rel);
    acquired_ = false;
  }

  std::shared_ptr<CgiBin::State> state_;
  std::string label_;
  ErrorStream* errors_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string body_;
  std::size_t written_ = 0;
  std::string pending_;
  std::string err_line_;
  Clock::time_point deadline_;
  bool acquired_ = false;
};

struct Located {
  std::string file;         // real path of the script
  std::string script_name;  // SCRIPT_NAME for the script: ours + the script's part of PATH_INFO
  std::string path_info;    // what follows the script
  int status = 0;           // non-zero: refuse with this status
};

Located locate(const CgiBin::State& st, std::string_view script_name, std::string_view path_info) {
  Located loc;
  if (path_info.empty() || path_info.front() != '/') return {{}, {}, {}, 404};
  std::string fs = st.root;
  std::size_t i = 0;
  while (i < path_info.size()) {
    std::size_t start = i + 1;
    std::size_t end = path_info.find('/', start);
    if (end == std::string_view::npos) end = path_info.size();
    std::string_view seg = path_info.substr(start, end - start);
    if (seg.empty() || seg.front() == '.' || seg.find('\0') != std::string_view::npos ||
        seg.find('\\') != std::string_view::npos)
      return {{}, {}, {}, 404};
    fs += '/';
    fs += seg;
    struct stat sb {};
    if (::stat(fs.c_str(), &sb) != 0) return {{}, {}, {}, 404};
    if (S_ISREG(sb.st_mode)) {
      std::string real = real_path(fs);
      if (real.empty() || real.compare(0, st.root.size() + 1, st.root + "/") != 0) return {{}, {}, {}, 403};
      loc.file = real;
      loc.script_name = std::string(script_name) + std::string(path_info.substr(0, end));
      loc.path_info = std::string(path_info.substr(end));
      return loc;
    }
    if (!S_ISDIR(sb.st_mode)) return {{}, {}, {}, 403};
    i = end;
  }
  return {{}, {}, {}, 404};  // a directory: no listing here
}

bool valid_env_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::vector<std::string> cgi_environment(const CgiBin::State& st, const Env& env, const Located& loc,
                                         std::size_t body_size) {
  const auto& o = st.options;
  std::vector<std::string> e;
  e.reserve(40);
  auto add = [&e](std::string_view k, std::string_view v) {
    if (v.find('\0') != std::string_view::npos) return;
    std::string s;
    s.reserve(k.size() + v.size() + 1);
    s.append(k).append("=").append(v);
    e.push_back(std::move(s));
  };
  auto copy = [&](std::string_view k) {
    if (const Value* v = env.find(k); v && v->is_text()) add(k, v->text());
  };
  add("GATEWAY_INTERFACE", "CGI/1.1");
  add("SERVER_SOFTWARE", o.server_software);
  add("PATH", o.path);
  add("SCRIPT_NAME", loc.script_name);
  add("SCRIPT_FILENAME", loc.file);
  add("DOCUMENT_ROOT", st.root);
  add("REDIRECT_STATUS", "200");
  if (!loc.path_info.empty()) {
    add("PATH_INFO", loc.path_info);
    add("PATH_TRANSLATED", st.root + loc.path_info);
  }
  add("QUERY_STRING", env.get(keys::QUERY_STRING));
  for (std::string_view k : {keys::REQUEST_METHOD, keys::REQUEST_URI, keys::SERVER_NAME, keys::SERVER_PORT,
                             keys::SERVER_PROTOCOL, keys::REMOTE_ADDR, keys::REMOTE_PORT, keys::REMOTE_USER,
                             keys::CONTENT_TYPE, std::string_view("AUTH_TYPE")})
    copy(k);
  if (std::string_view ra = env.get(keys::REMOTE_ADDR); !ra.empty()) add("REMOTE_HOST", ra);
  if (body_size > 0 || env.contains(keys::CONTENT_LENGTH)) add("CONTENT_LENGTH", std::to_string(body_size));
  if (env.get(keys::url_scheme) == "https") add("HTTPS", "on");
  for (const auto& entry : env) {
    std::string_view k = entry.key;
    if (k.substr(0, 5) != "HTTP_" || !entry.value.is_text()) continue;
    if (k == "HTTP_PROXY" || k == "HTTP_CONTENT_LENGTH" || k == "HTTP_CONTENT_TYPE") continue;
    if (k == keys::HTTP_AUTHORIZATION && !o.pass_authorization) continue;
    if (!valid_env_name(k)) continue;
    add(k, entry.value.text());
  }
  for (const auto& [k, v] : o.extra_env) add(k, v);
  return e;
}

struct Parsed {
  int status = 0;          // 0: none given
  Headers headers;
  std::string location;
  bool content_type = false;
  std::string error;       // non-empty: malformed
};

Parsed parse_head(std::string_view head) {
  Parsed p;
  while (!head.empty()) {
    auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      p.error = "malformed header line";
      return p;
    }
    std::string_view name = line.substr(0, colon);
    for (char c : name)
      if (!token_char(c)) {
        p.error = "malformed header name";
        return p;
      }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        p.error = "control character in a header value";
        return p;
      }
    if (iequals(name, "Status")) {
      int s = 0;
      if (value.size() < 3 || !(value[0] >= '1' && value[0] <= '5') || !(value[1] >= '0' && value[1] <= '9') ||
          !(value[2] >= '0' && value[2] <= '9') || (value.size() > 3 && value[3] != ' ')) {
        p.error = "malformed Status";
        return p;
      }
      s = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
      p.status = s;
      continue;
    }
    if (iequals(name, "Location")) p.location = value;
    if (iequals(name, "Content-Type")) p.content_type = true;
    if (iequals(name, "Connection") || iequals(name, "Keep-Alive") || iequals(name, "Transfer-Encoding") ||
        iequals(name, "Upgrade") || iequals(name, "Proxy-Connection") || iequals(name, "TE") ||
        iequals(name, "Trailer") || iequals(name, "Content-Length"))
      continue;
    p.headers.add(std::string(name), std::string(value));
  }
  return p;
}

/// Where the header block ends: index past the blank line, and npos when not yet complete.
std::size_t head_end(std::string_view buf, std::size_t& body_start) {
  std::size_t a = buf.find("\n\n");
  std::size_t b = buf.find("\n\r\n");
  if (a == std::string_view::npos && b == std::string_view::npos) return std::string_view::npos;
  if (b == std::string_view::npos || (a != std::string_view::npos && a < b)) {
    body_start = a + 2;
    return a + 1;
  }
  body_start = b + 3;
  return b + 1;
}

/// Restores what a local redirect changes in the env.
class EnvRestore {
public:
  explicit EnvRestore(Env& env) : env_(env) {
    for (std::string_view k : names) {
      const Value* v = env.find(k);
      saved_.push_back(v ? std::optional<std::string>(std::string(v->text())) : std::nullopt);
    }
  }
  ~EnvRestore() {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (saved_[i])
        env_.set(names[i], *saved_[i]);
      else
        env_.erase(names[i]);
    }
  }
  static constexpr std::array<std::string_view, 7> names{keys::SCRIPT_NAME, keys::PATH_INFO, keys::QUERY_STRING,
                                                         keys::REQUEST_METHOD, keys::REQUEST_URI,
                                                         keys::CONTENT_LENGTH, keys::CONTENT_TYPE};

private:
  Env& env_;
  std::vector<std::optional<std::string>> saved_;
};

Response run(const std::shared_ptr<CgiBin::State>& st, Env& env);

Response local_redirect(const std::shared_ptr<CgiBin::State>& st, Env& env, const std::string& location) {
  const auto& o = st->options;
  std::int64_t depth = 0;
  if (const Value* v = env.find("cgi_bin.redirects")) depth = v->integer();
  if (depth >= o.max_local_redirects) {
    env.errors().write("cgi_bin: too many local redirects, at " + location);
    return Response::error(500);
  }
  std::string_view loc = location;
  std::string_view query;
  if (auto q = loc.find('?'); q != std::string_view::npos) {
    query = loc.substr(q + 1);
    loc = loc.substr(0, q);
  }
  std::string path;
  try {
    path = percent_decode(loc);
  } catch (const std::exception&) {
    return Response::error(502, "bad local redirect");
  }
  std::string base(env.get(keys::SCRIPT_NAME));
  bool ours = path.compare(0, base.size(), base) == 0 && (path.size() == base.size() || path[base.size()] == '/');
  if (!ours && !o.redirect_app) {
    Response r = Response::text(302, "Found\n");
    r.headers.add("Location", location);
    return r;
  }
  EnvRestore restore(env);
  env.set_int("cgi_bin.redirects", depth + 1);
  env.set(keys::REQUEST_METHOD, "GET");
  env.set(keys::QUERY_STRING, query);
  env.set(keys::REQUEST_URI, location);
  env.erase(keys::CONTENT_LENGTH);
  env.erase(keys::CONTENT_TYPE);
  if (ours) {
    env.set(keys::PATH_INFO, std::string_view(path).substr(base.size()));
    return run(st, env);
  }
  env.set(keys::SCRIPT_NAME, "");
  env.set(keys::PATH_INFO, path);
  return o.redirect_app(env);
}

Response run(const std::shared_ptr<CgiBin::State>& st, Env& env) {
  const auto& o = st->options;
  Located loc = locate(*st, env.get(keys::SCRIPT_NAME), env.get(keys::PATH_INFO));
  if (loc.status) return Response::error(loc.status);

  std::vector<std::string> argv;
  auto dot = loc.file.rfind('.');
  auto slash = loc.file.rfind('/');
  std::string ext = dot != std::string::npos && dot > slash ? loc.file.substr(dot) : std::string();
  if (auto it = o.interpreters.find(ext); it != o.interpreters.end()) {
    argv = it->second;
  } else if (::access(loc.file.c_str(), X_OK) != 0) {
    return Response::error(403);
  }
  argv.push_back(loc.file);
  std::string dir = loc.file.substr(0, slash == 0 ? 1 : slash);

  std::string body;
  if (env.contains(keys::CONTENT_LENGTH) || env.find(keys::input)) {
    body = env.input().read_all(o.max_request_body);  // throws HttpError(413) past the limit
  }

  // A slot, or 503.
  if (st->running.fetch_add(1, std::memory_order_acq_rel) >= o.max_processes) {
    st->running.fetch_sub(1, std::memory_order_acq_rel);
    Response r = Response::error(503, "too many CGI scripts running");
    r.headers.add("Retry-After", "1");
    return r;
  }
  auto proc = std::make_shared<CgiProcess>(st, loc.script_name, &env.errors());
  proc->mark_acquired();
  std::vector<std::string> cgi_env = cgi_environment(*st, env, loc, body.size());
  int rc = proc->spawn(argv, cgi_env, dir, std::move(body));
  if (rc != 0) {
    proc->log(std::string("cannot run: ") + std::strerror(rc));
    proc->close();
    return Response::error(rc == EACCES || rc == ENOEXEC ? 403 : 500);
  }

  std::string buf;
  std::size_t body_start = 0, end = std::string::npos;
  while ((end = head_end(buf, body_start)) == std::string::npos) {
    if (buf.size() > o.max_header_bytes) {
      proc->log("header block too large");
      proc->close();
      return Response::error(502);
    }
    auto got = proc->pump(buf);
    if (got == CgiProcess::Got::timeout) {
      proc->log("no response headers before the timeout; killed");
      proc->close();
      return Response::error(504);
    }
    if (got == CgiProcess::Got::eof) {
      proc->finish();
      proc->log(buf.empty() ? "no output" : "output ended inside the headers");
      return Response::error(502);
    }
  }
  Parsed p = parse_head(std::string_view(buf).substr(0, end));
  if (!p.error.empty()) {
    proc->log(p.error);
    proc->close();
    return Response::error(502);
  }
  std::string rest = buf.substr(body_start);

  if (!p.location.empty() && p.location.front() == '/' && p.status == 0) {
    proc->close();  // the script's own body is not used (RFC 3875 §6.2.2)
    return local_redirect(st, env, p.location);
  }
  Response res;
  res.status = p.status ? p.status : !p.location.empty() ? 302 : 200;
  res.headers = std::move(p.headers);
  if (status_has_no_body(res.status)) {
    res.headers.remove("Content-Type");
    std::string ignored;
    while (proc->next(ignored)) {
    }
    proc->close();
    res.body = std::string();
    return res;
  }
  if (!p.content_type) res.headers.add("Content-Type", "application/octet-stream");
  proc->set_pending(std::move(rest));
  res.body = StreamPtr(proc);
  return res;
}

}  // namespace

CgiBin::CgiBin(CgiBinOptions options) : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  auto& o = state_->options;
  struct stat sb {};
  if (o.root.empty() || ::stat(o.root.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
    throw std::invalid_argument("CgiBin: root is not a directory: " + o.root);
  state_->root = real_path(o.root);
  if (state_->root.empty()) throw std::invalid_argument("CgiBin: cannot resolve root " + o.root);
  if (state_->root == "/") state_->root.clear();  // "/" + segments
  if (o.max_processes == 0 || o.timeout.count() <= 0 || o.max_header_bytes == 0)
    throw std::invalid_argument("CgiBin: max_processes, timeout and max_header_bytes must be positive");
  for (const auto& [k, v] : o.extra_env)
    if (!valid_env_name(k)) throw std::invalid_argument("CgiBin: bad extra_env name: " + k);
  for (auto it = o.interpreters.begin(); it != o.interpreters.end();) {
    if (it->second.empty()) throw std::invalid_argument("CgiBin: empty interpreter for " + it->first);
    std::string found = find_on_path(it->second.front());
    if (found.empty()) {
      it = o.interpreters.erase(it);
      continue;
    }
    it->second.front() = found;
    ++it;
  }
}

bool CgiBin::has_interpreter(const std::string& extension) const {
  return state_->options.interpreters.count(extension) != 0;
}

std::size_t CgiBin::running() const noexcept { return state_->running.load(std::memory_order_relaxed); }

Response CgiBin::operator()(Env& env) const { return run(state_, env); }

}  // namespace csgi::mw
