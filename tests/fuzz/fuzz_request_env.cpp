// Request line and header fields → env (core/request_env.hpp): never crashes, never throws anything but
// csgi::BadRequest, and the env keeps the spec's invariants (ENV rules; canonical paths: ENV-5).
#include <cstring>
#include <string_view>

#include "csgi/core/env.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace csgi;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view method = fuzz::take(in, ' ');
  std::string_view target = fuzz::take(in, '\n');
  static Env env;  // reused, as adapters reuse one per connection
  env.clear();
  try {
    ConnectionInfo conn;
    conn.script_name = target.size() > 3 && target[1] == 'a' ? "/a" : "";
    populate_env(env, {method, target, "HTTP/1.1"}, conn);
  } catch (const BadRequest&) {
    return 0;
  }
  while (!in.empty()) {
    std::string_view line = fuzz::take(in, '\n');
    std::string_view name = fuzz::take(line, ':');
    add_header(env, name, line);
  }
  set_server_from_host(env);
  std::string_view script = env.get(keys::SCRIPT_NAME), path = env.get(keys::PATH_INFO);
  fuzz::check(script.empty() || script.front() == '/', "SCRIPT_NAME empty or starts with /");
  fuzz::check(path.empty() || path.front() == '/', "PATH_INFO empty or starts with /");
  fuzz::check(env.contains(keys::QUERY_STRING), "QUERY_STRING present");
  fuzz::check(!env.contains("HTTP_CONTENT_LENGTH") && !env.contains("HTTP_CONTENT_TYPE"), "no HTTP_CONTENT_*");
  fuzz::check(!env.contains("HTTP_PROXY"), "no HTTP_PROXY");
  fuzz::check(path.empty() || std::memchr(path.data(), '\0', path.size()) == nullptr, "no NUL in PATH_INFO");
  fuzz::check(!has_dot_segment(script) && !has_dot_segment(path), "no dot segment in SCRIPT_NAME or PATH_INFO (ENV-5)");
  return 0;
}
