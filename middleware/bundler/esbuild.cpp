#include "csgi/middleware/bundler/detail/esbuild.hpp"

#include "csgi/middleware/bundler/detail/source_map.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <vector>


extern char** environ;

namespace csgi::mw::bundler {

std::string_view esbuild_loader(std::string_view path) noexcept {
  auto dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) return {};
  std::string_view ext = path.substr(dot);
  if (ext == ".ts" || ext == ".mts" || ext == ".cts") return path.ends_with(".d.ts") ? "" : "ts";
  if (ext == ".tsx") return "tsx";
  if (ext == ".jsx") return "jsx";
  if (ext == ".css") return "css";
  return {};
}

namespace {

constexpr auto kTimeLimit = std::chrono::seconds(30);

struct Child {
  int status = -1;
  std::string out, err;
  std::string failure;  // could not run it, or it ran past the limit
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A write to a pipe whose reader has gone (the child exited early) fails with EPIPE instead of raising
// SIGPIPE in a process that has not ignored it: the signal is blocked in this thread for the write and a
// SIGPIPE it caused is taken off the thread's pending set.
ssize_t write_no_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  if (n < 0 && errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

Child run_child(const std::vector<std::string>& args, std::string_view input) {
  Child c;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err}) close_fd(p[0]), close_fd(p[1]);
  };
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    close_all();
    c.failure = "cannot create pipes for " + args[0];
    return c;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  if (rc != 0) {
    close_all();
    c.failure = "cannot run " + args[0] + " (the bundler's esbuild option): " + std::strerror(rc);
    return c;
  }
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  std::size_t sent = 0;
  if (input.empty()) close_fd(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + kTimeLimit;
  char buf[65536];
  while (out[0] >= 0 || err[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      c.failure = args[0] + " ran past " + std::to_string(kTimeLimit.count()) + " s";
      break;
    }
    pollfd fds[3] = {{in[1], POLLOUT, 0}, {out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    if (::poll(fds, 3, int(left.count())) < 0) {
      if (errno == EINTR) continue;
      ::kill(pid, SIGKILL);
      c.failure = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (in[1] >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write_no_sigpipe(in[1], input.data() + sent, input.size() - sent);
      if (n > 0) sent += std::size_t(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) close_fd(in[1]);
    }
    for (int i : {1, 2}) {
      int& fd = i == 1 ? out[0] : err[0];
      if (fd < 0 || !(fds[i].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0)
        (i == 1 ? c.out : c.err).append(buf, std::size_t(n));
      else if (n == 0 || (errno != EINTR && errno != EAGAIN))
        close_fd(fd);
    }
  }
  close_all();
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

// esbuild's first error as "file:line:column: message": its text reads
//   ✘ [ERROR] message\n\n    file:line:column:\n ...
std::string first_error(const std::string& err, std::string_view path) {
  auto tag = err.find("[ERROR] ");
  if (tag == std::string::npos) {
    std::string s = err.substr(0, err.find('\n'));
    return std::string(path) + ": esbuild: " + (s.empty() ? "failed" : s);
  }
  auto eol = err.find('\n', tag);
  std::string message = err.substr(tag + 8, eol == std::string::npos ? std::string::npos : eol - tag - 8);
  std::string where(path);
  if (eol != std::string::npos) {
    auto loc = err.find_first_not_of(" \n", eol);
    auto loc_end = loc == std::string::npos ? loc : err.find('\n', loc);
    if (loc != std::string::npos && loc_end != std::string::npos && loc_end > loc && err[loc_end - 1] == ':')
      where = err.substr(loc, loc_end - loc - 1);
  }
  return where + ": " + message;
}

}  // namespace

Transpiler::Transpiler(std::string program, std::size_t cache_bytes) : program_(std::move(program)), cap_(cache_bytes) {}

TranspileResult Transpiler::run(std::string_view path, std::string_view source, std::string_view tsconfig) {
  std::string_view loader = esbuild_loader(path);
  std::string key;
  key.reserve(loader.size() + tsconfig.size() + source.size() + 2);
  key.append(loader).push_back('\0');
  key.append(tsconfig).push_back('\0');
  key.append(source);
  const std::size_t h = std::hash<std::string>{}(key);
  auto [b, e] = cache_.equal_range(h);
  for (auto it = b; it != e; ++it)
    if (it->second->key == key) {
      ++hits;
      return {it->second->code, it->second->map, {}};
    }
  ++misses;
  std::vector<std::string> args{program_, "--loader=" + std::string(loader), "--sourcefile=" + std::string(path),
                                "--log-level=error", "--color=false"};
  if (loader != "css") args.push_back("--sourcemap=inline");
  if (!tsconfig.empty()) args.push_back("--tsconfig-raw=" + std::string(tsconfig));
  Child c = run_child(args, source);
  if (!c.failure.empty()) return {nullptr, nullptr, std::string(path) + ": " + c.failure};
  if (c.status != 0) return {nullptr, nullptr, first_error(c.err, path)};
  std::shared_ptr<const std::string> map;
  if (auto m = take_inline_map(c.out)) map = std::make_shared<const std::string>(std::move(*m));
  auto code = std::make_shared<const std::string>(std::move(c.out));
  auto entry = std::make_shared<Entry>(Entry{std::move(key), code, map});
  bytes_ += entry->key.size() + code->size() + (map ? map->size() : 0);
  cache_.emplace(h, entry);
  order_.emplace_back(h, entry);
  while (bytes_ > cap_ && order_.size() > 1) {
    auto [oh, oe] = order_.front();
    order_.pop_front();
    bytes_ -= oe->key.size() + oe->code->size() + (oe->map ? oe->map->size() : 0);
    auto [ob, oend] = cache_.equal_range(oh);
    for (auto it = ob; it != oend; ++it)
      if (it->second == oe) {
        cache_.erase(it);
        break;
      }
  }
  return {code, map, {}};
}

}  // namespace csgi::mw::bundler
