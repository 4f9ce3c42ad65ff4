#include <arpa/inet.h>
#include <fcgiapp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "csgi/adapters/cgi/response_writer.hpp"
#include "csgi/adapters/cgi/spool_input.hpp"
#include "csgi/adapters/fastcgi/fastcgi.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/log_files.hpp"
#include "csgi/core/server_stats.hpp"

namespace csgi::fastcgi {

namespace {

/// Sent to worker threads idle in accept() or in a read on a kept connection, to make the call fail with
/// EINTR during a graceful stop. Its handler does nothing.
int wake_signal() { return SIGRTMIN + 4; }
extern "C" void on_wake(int) {}

/// The FastCGI stdout stream. It also notes, for the server's counters, the status of the head (the
/// first write: cgi::format_head's "Status: NNN ..." block) and the body bytes written after it.
class FcgiOutput final : public cgi::Output {
public:
  explicit FcgiOutput(FCGX_Request& r) : r_(r) {}
  bool write(std::string_view bytes) override {
    if (status_ < 0) status_ = head_status(bytes);
    else body_bytes_ += bytes.size();
    return FCGX_PutStr(bytes.data(), static_cast<int>(bytes.size()), r_.out) == static_cast<int>(bytes.size());
  }
  bool flush() override { return FCGX_FFlush(r_.out) == 0; }
  bool client_gone() override {
    pollfd p{r_.ipcFd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
  }
  /// The status sent, 0 when no head went out.
  int status() const noexcept { return status_ < 0 ? 0 : status_; }
  std::uint64_t body_bytes() const noexcept { return body_bytes_; }

private:
  static int head_status(std::string_view head) noexcept {
    constexpr std::string_view prefix = "Status: ";
    if (head.size() < prefix.size() + 3 || head.substr(0, prefix.size()) != prefix) return 0;
    int status = 0;
    for (char c : head.substr(prefix.size(), 3)) {
      if (c < '0' || c > '9') return 0;
      status = status * 10 + (c - '0');
    }
    return status;
  }

  FCGX_Request& r_;
  int status_ = -1;  // -1 until the head is written
  std::uint64_t body_bytes_ = 0;
};

struct Shared {
  App app;
  cgi::EnvOptions env_options;
  std::uint64_t max_body = 0;
  int listen_fd = -1;
  ServerStats stats;  // this process's counters, in every env as csgix.server_stats
  std::atomic<bool> stopping{false};
  std::atomic<int> running{0};
};

struct WorkerSlot {
  std::atomic<bool> idle{false};
  pthread_t thread{};
};

void worker(Shared& s, WorkerSlot& slot) {
  FCGX_Request req;
  FCGX_InitRequest(&req, s.listen_fd, FCGI_FAIL_ACCEPT_ON_INTR);
  Env env;
  ErrorStream& errors = stderr_stream();
  while (!s.stopping.load()) {
    slot.idle.store(true);
    int rc = FCGX_Accept_r(&req);
    slot.idle.store(false);
    if (rc < 0) {
      if (s.stopping.load()) break;
      if (rc == -EINTR) continue;
      errors.write("csgi fastcgi: accept failed: " + std::string(std::strerror(-rc)));
      if (rc == -EBADF || rc == -EINVAL || rc == -ENOTSOCK) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // EMFILE and the like: back off
      continue;
    }
    env.clear();
    env.set_object<ServerStats>(keys::x::server_stats, &s.stats);
    cgi::SpoolInput input(
        [&req](char* buf, std::size_t n) -> std::size_t {
          int got = FCGX_GetStr(buf, static_cast<int>(std::min<std::size_t>(n, 1 << 30)), req.in);
          if (got > 0) return static_cast<std::size_t>(got);
          if (FCGX_GetError(req.in) != 0) throw std::runtime_error("the request body was cut short");
          return 0;
        },
        s.max_body);
    FcgiOutput out(req);
    s.stats.request_started();
    bool ok = cgi::handle_request(s.app, env, req.envp, s.env_options, input, errors, out);
    s.stats.request_finished(out.status(), out.body_bytes());
    if (!ok) {
      // The response is incomplete: end it so that the front server does not take it as whole. A closed
      // connection alone is not enough: nginx without fastcgi_keep_conn takes the close for the end of
      // the response and keeps its client's connection, so a short body would swallow the next response.
      // A record of an unknown protocol version after the bytes written is an error to every front.
      FCGX_FFlush(req.out);
      static constexpr unsigned char bad_record[8] = {0, 6, 0, 1, 0, 0, 0, 0};
      (void)::send(req.ipcFd, bad_record, sizeof bad_record, MSG_NOSIGNAL);
      ::shutdown(req.ipcFd, SHUT_RDWR);
      FCGX_Free(&req, 1);
    }
    env.clear();
  }
  FCGX_Finish_r(&req);
  FCGX_Free(&req, 1);
  s.running.fetch_sub(1);
}

/// The signals the serving loops wait for: SIGTERM/SIGINT stop, SIGUSR1 reopens the log files.
sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  return set;
}

/// Every log file of the process (access_log middleware in the app included) reopens at its path, as
/// logrotate expects after a rename.
void reopen_logs() {
  for (const std::string& failure : log_files::reopen_all()) stderr_stream().write("csgi fastcgi: " + failure);
}

// "csgi fastcgi: SIGTERM: …": what the adapter does on a signal, on stderr (once, by the master with workers).
void log_signal(int sig, const std::string& what) {
  const char* name = ::sigabbrev_np(sig);
  stderr_stream().write("csgi fastcgi: SIG" + (name ? std::string(name) : std::to_string(sig)) + ": " + what);
}

std::string stopping_text(const Options& o) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(o.graceful_timeout.count()) / 1000.0);
  return std::string("stopping gracefully: requests in flight get up to ") + seconds + " s";
}

void prepare_signals() {
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_wake;  // no SA_RESTART: blocking calls fail with EINTR
  sigemptyset(&sa.sa_mask);
  ::sigaction(wake_signal(), &sa, nullptr);
  sigset_t set = handled_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

/// One process: N threads; returns when a stop signal arrived and the threads finished.
int serve_threads(App app, const Options& o, int listen_fd, bool spawned) {
  prepare_signals();
  Shared s;
  s.app = std::move(app);
  s.listen_fd = listen_fd;
  s.max_body = o.max_body;
  int threads = o.threads < 1 ? 1 : o.threads;
  s.env_options.script_name = o.script_name;
  s.env_options.multithread = threads > 1;
  s.env_options.multiprocess = o.workers > 0 || spawned;
  s.env_options.run_once = false;
  s.stats.attach_adapter("fastcgi");
  s.stats.set_workers(static_cast<std::uint64_t>(o.workers > 0 ? o.workers : 1));

  std::vector<std::unique_ptr<WorkerSlot>> slots;
  std::vector<std::thread> pool;
  s.running.store(threads);
  for (int i = 0; i < threads; ++i) {
    slots.push_back(std::make_unique<WorkerSlot>());
    WorkerSlot& slot = *slots.back();
    pool.emplace_back([&s, &slot] { worker(s, slot); });
    slot.thread = pool.back().native_handle();
  }

  sigset_t set = handled_signals();
  timespec tick{0, 200 * 1000 * 1000};
  while (s.running.load() > 0) {
    int sig = ::sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      if (o.workers == 0) log_signal(sig, stopping_text(o));
      break;
    }
    if (sig == SIGUSR1) {
      reopen_logs();
      if (o.workers == 0) log_signal(sig, "reopened the log files");
    }
  }
  s.stopping.store(true);
  s.stats.begin_drain();
  auto deadline = std::chrono::steady_clock::now() + o.graceful_timeout;
  while (s.running.load() > 0) {
    for (auto& slot : slots)
      if (slot->idle.load()) ::pthread_kill(slot->thread, wake_signal());
    if (std::chrono::steady_clock::now() > deadline) {
      stderr_stream().write("csgi fastcgi: requests still running after the graceful timeout; exiting");
      std::_Exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& t : pool) t.join();
  return 0;
}

/// The master of `workers` processes: restarts children that die, forwards SIGTERM/SIGINT and SIGUSR1.
int serve_workers(App app, const Options& o, int listen_fd, bool spawned) {
  prepare_signals();
  std::vector<pid_t> children(static_cast<std::size_t>(o.workers), -1);
  std::vector<std::chrono::steady_clock::time_point> started(children.size());
  auto spawn = [&](std::size_t i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int rc = serve_threads(app, o, listen_fd, spawned);
      std::_Exit(rc);
    }
    if (pid < 0) stderr_stream().write("csgi fastcgi: fork failed: " + std::string(std::strerror(errno)));
    children[i] = pid;
    started[i] = std::chrono::steady_clock::now();
  };
  for (std::size_t i = 0; i < children.size(); ++i) spawn(i);

  sigset_t set = handled_signals();
  timespec tick{0, 100 * 1000 * 1000};
  int stop_sig = 0;
  while (stop_sig == 0) {
    int sig = ::sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      log_signal(sig, stopping_text(o) + ", in each of the " + std::to_string(children.size()) + " workers");
      stop_sig = sig;
      break;
    }
    if (sig == SIGUSR1) {
      reopen_logs();
      for (pid_t pid : children)
        if (pid > 0) ::kill(pid, SIGUSR1);
      log_signal(sig, "reopened the log files (the workers reopen theirs)");
    }
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i] > 0) {
        int status = 0;
        if (::waitpid(children[i], &status, WNOHANG) != children[i]) continue;
        stderr_stream().write("csgi fastcgi: worker " + std::to_string(children[i]) + " exited (" +
                              (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                   : "status " + std::to_string(WEXITSTATUS(status))) +
                              "); restarting it");
        children[i] = -1;
      }
      // A child that dies at once is restarted at most once a second.
      if (children[i] < 0 && std::chrono::steady_clock::now() - started[i] > std::chrono::seconds(1)) spawn(i);
    }
  }
  for (pid_t pid : children)
    if (pid > 0) ::kill(pid, stop_sig);
  for (pid_t pid : children)
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  return 0;
}

// "csgi: listening on unix:/run/app.sock (FastCGI, socket mode 0660)" once the socket is open, as the
// HTTP server prints; a unix socket only its owner may write to gets the option that opens it.
void print_listening(int fd, const std::string& spec) {
  std::string where = spec, note = "FastCGI";
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char host[INET6_ADDRSTRLEN] = {0};
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    where = std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    where = "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  } else if (ss.ss_family == AF_UNIX) {
    std::string path = spec.rfind("unix:", 0) == 0 ? spec.substr(5) : spec;
    where = "unix:" + path;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      note += ", socket mode " + std::string(mode);
      if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
        note += ": only its owner may connect; a front server running as another user needs --socket-mode, e.g. 0660";
    }
  }
  std::printf("csgi: listening on %s (%s)\n", where.c_str(), note.c_str());
  std::fflush(stdout);
}

}  // namespace

bool is_fastcgi_socket(int fd) noexcept {
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) return false;
  int type = 0;
  len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return false;
  return listening != 0 && type == SOCK_STREAM;
}

int open_socket(const std::string& spec, int backlog, int socket_mode) {
  std::string path = spec;
  bool unix_socket = false;
  if (path.rfind("unix:", 0) == 0) {
    path = path.substr(5);
    unix_socket = true;
  } else if (!path.empty() && path.front() == '/') {
    unix_socket = true;
  }
  if (unix_socket) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  } else if (auto colon = path.rfind(':'); colon == std::string::npos || std::atoi(path.c_str() + colon + 1) == 0) {
    errno = EINVAL;  // libfcgi takes HOST:0 for a unix socket of that name
    return -1;
  }
  int fd = FCGX_OpenSocket(path.c_str(), backlog);
  if (fd < 0) return -1;
  if (unix_socket && socket_mode >= 0) ::chmod(path.c_str(), static_cast<mode_t>(socket_mode));
  return fd;
}

int serve(App app, const Options& options) {
  if (FCGX_Init() != 0) {
    stderr_stream().write("csgi fastcgi: FCGX_Init failed");
    return 1;
  }
  int fd = 0;
  bool spawned = options.listen.empty();
  if (spawned) {
    if (!is_fastcgi_socket(0)) {
      stderr_stream().write("csgi fastcgi: fd 0 is not a listening socket; give --listen unix:/path or host:port");
      return 1;
    }
  } else {
    fd = open_socket(options.listen, options.backlog, options.socket_mode);
    if (fd < 0) {
      stderr_stream().write("csgi fastcgi: cannot listen on " + options.listen + ": " +
                            (errno == EINVAL ? "give unix:/PATH or HOST:PORT with a port from 1 to 65535"
                                             : std::strerror(errno)));
      return 1;
    }
    prepare_signals();  // before the line: a signal sent once it is seen is handled, not fatal
    print_listening(fd, options.listen);
  }
  int rc = options.workers > 0 ? serve_workers(std::move(app), options, fd, spawned)
                               : serve_threads(std::move(app), options, fd, spawned);
  if (!spawned && options.listen.rfind("unix:", 0) == 0) ::unlink(options.listen.c_str() + 5);
  return rc;
}

}  // namespace csgi::fastcgi
