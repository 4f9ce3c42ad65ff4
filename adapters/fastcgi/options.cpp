#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "csgi/adapters/fastcgi/fastcgi.hpp"

namespace csgi::fastcgi {

namespace {
bool to_number(std::string_view text, long long min, long long max, long long& out, int base = 10) {
  if (text.empty()) return false;
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, base);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < min || v > max) return false;
  out = v;
  return true;
}
}  // namespace

bool parse_option(Options& o, int argc, char** argv, int& i, std::string& error) {
  std::string_view arg = argv[i];
  std::string_view value;
  bool inline_value = false;
  if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
    value = arg.substr(eq + 1);
    arg = arg.substr(0, eq);
    inline_value = true;
  }
  auto take = [&]() -> bool {
    if (inline_value) return true;
    if (i + 1 >= argc) {
      error = std::string(arg) + " needs a value";
      return false;
    }
    value = argv[++i];
    return true;
  };
  auto number = [&](long long min, long long max, long long& out, int base = 10) {
    if (!take()) return false;
    if (to_number(value, min, max, out, base)) return true;
    error = std::string(arg) + ": bad value '" + std::string(value) + "'";
    return false;
  };
  long long n = 0;
  if (arg == "--listen") {
    if (!take()) return false;
    o.listen = value;
    return true;
  }
  if (arg == "--threads") return number(1, 4096, n) && (o.threads = static_cast<int>(n), true);
  if (arg == "--workers") return number(1, 1024, n) && (o.workers = static_cast<int>(n), true);
  if (arg == "--backlog") return number(1, 65535, n) && (o.backlog = static_cast<int>(n), true);
  if (arg == "--max-body") return number(0, (1LL << 62), n) && (o.max_body = static_cast<std::uint64_t>(n), true);
  if (arg == "--graceful-timeout")
    return number(0, 86400, n) && (o.graceful_timeout = std::chrono::seconds(n), true);
  if (arg == "--socket-mode") return number(0, 07777, n, 8) && (o.socket_mode = static_cast<int>(n), true);
  if (arg == "--script-name") {
    if (!take()) return false;
    if (!value.empty() && value.front() != '/') {
      error = "--script-name must be empty or start with '/'";
      return false;
    }
    o.script_name = std::string(value);
    return true;
  }
  error = "unknown option " + std::string(arg);
  return false;
}

}  // namespace csgi::fastcgi
