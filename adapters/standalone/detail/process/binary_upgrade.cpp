#include "csgi/adapters/standalone/detail/process/binary_upgrade.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

extern char** environ;

namespace csgi::standalone::detail {

namespace {

constexpr const char* fd_variable = "CSGI_UPGRADE_FD";
constexpr std::size_t max_sockets = 1023;  // and the pipe: the child's table of descriptors to move

// The path this process was started from: /proc/self/exe, without the " (deleted)" the kernel adds once
// the file was replaced (as an upgrade does: the new binary is at that path now).
std::string own_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  constexpr std::string_view deleted = " (deleted)";
  if (path.ends_with(deleted)) path.resize(path.size() - deleted.size());
  return path;
}

std::vector<std::string> own_arguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') {
      args.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  return args;
}

bool named(const char* entry, std::string_view name) {
  std::string_view e(entry);
  return e.size() > name.size() && e.substr(0, name.size()) == name && e[name.size()] == '=';
}

// Writes `n` in decimal at `out` (room for 20 digits, NUL-terminated); async-signal-safe.
void put_number(char* out, long n) {
  char digits[24];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && len < 20);
  for (int i = 0; i < len; ++i) out[i] = digits[len - 1 - i];
  out[len] = '\0';
}

}  // namespace

BinaryUpgrade::~BinaryUpgrade() {
  if (fd_ >= 0) ::close(fd_);
}

bool BinaryUpgrade::start(const std::vector<ListenSocket>& sockets, std::chrono::seconds deadline, std::string& why) {
  if (pid_ > 0) {
    why = "an upgrade is under way already (process " + std::to_string(pid_) + ")";
    return false;
  }
  std::string exe = own_executable();
  std::vector<std::string> args = own_arguments();
  if (exe.empty() || args.empty()) {
    why = "cannot read /proc/self/exe or /proc/self/cmdline";
    return false;
  }
  if (sockets.size() >= max_sockets) {
    why = "too many listening sockets to hand over (" + std::to_string(sockets.size()) + ")";
    return false;
  }
  // Everything the child needs is made here: after fork() it may only make async-signal-safe calls.
  const int n = static_cast<int>(sockets.size());
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (!named(*e, "LISTEN_PID") && !named(*e, "LISTEN_FDS") && !named(*e, "LISTEN_FDNAMES") &&
        !named(*e, "WATCHDOG_PID") && !named(*e, fd_variable))
      env_strings.emplace_back(*e);
  env_strings.push_back("LISTEN_FDS=" + std::to_string(n));
  env_strings.push_back(std::string(fd_variable) + "=" + std::to_string(3 + n));
  std::string listen_pid = "LISTEN_PID=" + std::string(24, '\0');
  std::string watchdog_pid = "WATCHDOG_PID=" + std::string(24, '\0');
  bool watchdog = std::getenv("WATCHDOG_USEC") != nullptr;
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(listen_pid.data());
  if (watchdog) envp.push_back(watchdog_pid.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<int> fds;
  for (const ListenSocket& s : sockets) fds.push_back(s.fd);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return false;
  }
  if (pid == 0) {
    // The new binary: sockets on 3…3+n-1, the pipe's write end (blocking) on 3+n, signals unblocked.
    int high[max_sockets + 1];
    int count = n + 1;
    for (int i = 0; i < count; ++i) {
      int from = i < n ? fds[static_cast<std::size_t>(i)] : pipe_fds[1];
      high[i] = ::fcntl(from, F_DUPFD_CLOEXEC, 3 + count);
      if (high[i] < 0) ::_exit(127);
    }
    for (int i = 0; i < count; ++i)
      if (::dup2(high[i], 3 + i) < 0) ::_exit(127);
    ::fcntl(3 + n, F_SETFL, 0);
    put_number(listen_pid.data() + 11, static_cast<long>(::getpid()));
    if (watchdog) put_number(watchdog_pid.data() + 13, static_cast<long>(::getpid()));
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  pid_ = pid;
  fd_ = pipe_fds[0];
  deadline_ = Clock::now() + deadline;
  exit_status_ = -1;
  return true;
}

void BinaryUpgrade::exited(int wait_status) { exit_status_ = wait_status; }

void BinaryUpgrade::finish() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pid_ = 0;
  exit_status_ = -1;
}

BinaryUpgrade::State BinaryUpgrade::poll(Clock::time_point now, std::string& why) {
  if (pid_ <= 0) return State::none;
  char c = 0;
  ssize_t r = ::read(fd_, &c, 1);
  if (r == 1) {
    finish();
    return State::ready;
  }
  bool closed = r == 0;
  // A closed pipe: the new process is most likely exiting; its status says why (bounded wait).
  for (int i = 0; closed && exit_status_ == -1 && i < 50; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) exit_status_ = status;
    else ::usleep(10000);
  }
  bool gone = exit_status_ != -1;
  bool late = now > deadline_;
  if (!closed && !gone && !late) return State::waiting;
  if (gone) {
    int s = exit_status_;
    why = "the new process " + std::to_string(pid_) +
          (WIFSIGNALED(s) ? " was killed by signal " + std::to_string(WTERMSIG(s))
                          : " exited with status " + std::to_string(WEXITSTATUS(s))) +
          " before it was ready";
  } else {
    why = "the new process " + std::to_string(pid_) +
          (closed ? " closed its readiness pipe without being ready" : " was not ready in time") + "; it is stopped";
    ::kill(pid_, SIGTERM);
  }
  finish();
  return State::failed;
}

int take_upgrade_fd() {
  const char* v = std::getenv(fd_variable);
  if (!v) return -1;
  int fd = static_cast<int>(std::strtol(v, nullptr, 10));
  ::unsetenv(fd_variable);
  if (fd < 3 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return -1;
  return fd;
}

void tell_upgrade_ready(int& fd) {
  if (fd < 0) return;
  char c = 'R';
  ssize_t w = ::write(fd, &c, 1);
  (void)w;
  ::close(fd);
  fd = -1;
}

}  // namespace csgi::standalone::detail
