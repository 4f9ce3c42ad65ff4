#include "csgi/adapters/cgi/cgi.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>

#include "csgi/adapters/cgi/response_writer.hpp"
#include "csgi/adapters/cgi/spool_input.hpp"
#include "csgi/core/io.hpp"

extern char** environ;

namespace csgi::cgi {

namespace {

/// Buffered output to a file descriptor (64 KB), written out on flush() or when full.
class FdOutput final : public Output {
public:
  explicit FdOutput(int fd) : fd_(fd) { buf_.reserve(65536); }
  bool write(std::string_view bytes) override {
    if (failed_) return false;
    if (buf_.size() + bytes.size() > 65536 && !flush()) return false;
    if (bytes.size() >= 65536) return write_all(bytes);
    buf_.append(bytes);
    return true;
  }
  bool flush() override {
    if (failed_) return false;
    bool ok = write_all(buf_);
    buf_.clear();
    return ok;
  }
  bool client_gone() override {
    pollfd p{fd_, 0, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
  }

private:
  bool write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t w = ::write(fd_, bytes.data(), bytes.size());
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        failed_ = true;
        return false;
      }
      bytes.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }
  int fd_;
  std::string buf_;
  bool failed_ = false;
};

std::uint64_t content_length(const char* const* vars) {
  for (const char* const* v = vars; v && *v; ++v) {
    std::string_view kv = *v;
    if (kv.starts_with("CONTENT_LENGTH=")) {
      std::string_view n = kv.substr(15);
      if (n.empty() || n.find_first_not_of("0123456789") != std::string_view::npos || n.size() > 18) continue;
      return std::stoull(std::string(n));
    }
  }
  return ~std::uint64_t{0};
}

}  // namespace

int serve_request(const App& app, const char* const* vars, int in_fd, int out_fd, const Options& options) {
  std::uint64_t left = content_length(vars);
  SpoolInput input(
      [in_fd, &left](char* buf, std::size_t n) -> std::size_t {
        if (left == 0) return 0;
        if (n > left) n = static_cast<std::size_t>(left);
        for (;;) {
          ssize_t r = ::read(in_fd, buf, n);
          if (r < 0 && errno == EINTR) continue;
          if (r < 0) throw std::system_error(errno, std::generic_category(), "reading the request body");
          if (left != ~std::uint64_t{0}) {
            if (r == 0) throw std::runtime_error("the request body ended before CONTENT_LENGTH");
            left -= static_cast<std::uint64_t>(r);
          }
          return static_cast<std::size_t>(r);
        }
      },
      options.max_body);
  EnvOptions env_options;
  env_options.script_name = options.script_name;
  env_options.run_once = true;
  env_options.multiprocess = true;
  Env env;
  FdOutput out(out_fd);
  bool ok = handle_request(app, env, vars, env_options, input, stderr_stream(), out);
  ok = out.flush() && ok;
  return ok ? 0 : 1;
}

int serve(const App& app, const Options& options) {
  ::signal(SIGPIPE, SIG_IGN);
  return serve_request(app, environ, 0, 1, options);
}

}  // namespace csgi::cgi
