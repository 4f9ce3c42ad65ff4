#include "csgi/middleware/cgi_bin_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "csgi/core/text.hpp"

namespace csgi::mw {

namespace cgi_bin_detail {

namespace {
constexpr long long cancel_slice_ms = 100;  // how often a waiting pump looks whether the app is gone

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Slot Slot::acquire(const std::shared_ptr<CgiBin::State>& st) {
  Slot s;
  if (st->running.fetch_add(1, std::memory_order_acq_rel) >= st->options.max_processes) {
    st->running.fetch_sub(1, std::memory_order_acq_rel);
    return s;
  }
  s.st_ = st;
  return s;
}

Slot& Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    release();
    st_ = std::move(o.st_);
  }
  return *this;
}

void Slot::release() noexcept {
  if (st_) st_->running.fetch_sub(1, std::memory_order_acq_rel);
  st_.reset();
}

int Process::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& envp, const std::string& dir,
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

Process::Got Process::pump(std::string& out) {
  char buf[65536];
  while (true) {
    if (out_ < 0) return Got::eof;
    if (state_->cancelled()) return Got::cancelled;
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {out_, POLLIN, 0};
    int err_at = -1, in_at = -1;
    if (err_ >= 0) err_at = static_cast<int>(n), fds[n++] = {err_, POLLIN, 0};
    if (in_ >= 0) in_at = static_cast<int>(n), fds[n++] = {in_, POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (left <= 0) return Got::timeout;
    int r = ::poll(fds, n, static_cast<int>(std::min<long long>(left, cancel_slice_ms)));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "cgi_bin: poll");
    }
    if (r == 0) continue;  // a slice ended: the deadline and the app's end are checked again
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

bool Process::next(std::string& chunk) {
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
    case Got::cancelled:
      log("the app was destroyed while the script ran; killed");
      close();
      throw std::runtime_error("cgi_bin: " + label_ + " stopped");
    case Got::timeout:
    default:
      log("timed out after the headers; killed");
      close();
      throw std::runtime_error("cgi_bin: " + label_ + " timed out");
  }
}

void Process::close() {
  if (pid_ > 0) kill_group();
  close_fd(in_), close_fd(out_);
  if (err_ >= 0) {
    drain_stderr();
    close_fd(err_);
  }
  flush_stderr_line();
  slot_.release();
}

void Process::finish() {
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
    if (Clock::now() >= deadline_ || state_->cancelled()) {
      log("still running after closing stdout; killed");
      kill_group();
      break;
    }
    if (err_ >= 0) drain_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close();
}

void Process::kill_group() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void Process::log(const std::string& what) {
  if (errors_) errors_->write("cgi_bin: " + label_ + ": " + what);
}

void Process::feed() {
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

void Process::drain_stderr() {
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

void Process::flush_stderr_line() {
  if (!err_line_.empty()) log(err_line_);
  err_line_.clear();
}

void Process::report(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) log("exited with status " + std::to_string(WEXITSTATUS(status)));
  if (WIFSIGNALED(status)) log("killed by signal " + std::to_string(WTERMSIG(status)));
}

// ---------------------------------------------------------------------------------------------------
// The CGI response's head.

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
    if (!is_token(name)) {
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
      if (value.size() < 3 || !(value[0] >= '1' && value[0] <= '5') || !(value[1] >= '0' && value[1] <= '9') ||
          !(value[2] >= '0' && value[2] <= '9') || (value.size() > 3 && value[3] != ' ')) {
        p.error = "malformed Status";
        return p;
      }
      p.status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
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

namespace {
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

Head fail(Process& proc, std::string_view why, int status) {
  proc.log(std::string(why));
  proc.close();
  Head h;
  h.failure = Response::error(status);
  return h;
}
}  // namespace

Head read_head(Process& proc, std::size_t max_header_bytes) {
  std::string buf;
  std::size_t body_start = 0, end = std::string::npos;
  while ((end = head_end(buf, body_start)) == std::string::npos) {
    if (buf.size() > max_header_bytes) return fail(proc, "header block too large", 502);
    switch (proc.pump(buf)) {
      case Process::Got::data: break;
      case Process::Got::timeout: return fail(proc, "no response headers before the timeout; killed", 504);
      case Process::Got::cancelled: return fail(proc, "the app was destroyed while the script ran; killed", 503);
      case Process::Got::eof:
        proc.finish();
        return fail(proc, buf.empty() ? "no output" : "output ended inside the headers", 502);
    }
  }
  Head h;
  h.parsed = parse_head(std::string_view(buf).substr(0, end));
  if (!h.parsed.error.empty()) return fail(proc, h.parsed.error, 502);
  h.rest = buf.substr(body_start);
  return h;
}

void discard_output(Process& proc) {
  std::string ignored;
  while (true) {
    ignored.clear();
    switch (proc.pump(ignored)) {
      case Process::Got::data: continue;
      case Process::Got::eof: proc.finish(); return;
      case Process::Got::timeout: proc.log("timed out after the headers; killed"); break;
      case Process::Got::cancelled: proc.log("the app was destroyed while the script ran; killed"); break;
    }
    proc.close();
    return;
  }
}

}  // namespace cgi_bin_detail
}  // namespace csgi::mw
