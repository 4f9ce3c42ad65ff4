// FastCGI/CGI parameters → env (adapters/cgi/gateway.hpp, used by both adapters): lines "NAME=VALUE";
// only csgi::HttpError may escape, and the env keeps the spec's invariants.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/cgi/gateway.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  while (!in.empty() && lines.size() < 200) lines.emplace_back(csgi::fuzz::take(in, '\n'));
  std::vector<const char*> vars;
  for (auto& l : lines) vars.push_back(l.c_str());
  vars.push_back(nullptr);
  static csgi::Env env;
  env.clear();
  csgi::cgi::EnvOptions opt;
  opt.max_params_bytes = 4096;
  if (size % 3 == 0) opt.script_name = "/app";
  try {
    csgi::cgi::build_env(env, vars.data(), opt);
  } catch (const csgi::HttpError&) {
    return 0;
  }
  std::string_view script = env.get(csgi::keys::SCRIPT_NAME), path = env.get(csgi::keys::PATH_INFO);
  csgi::fuzz::check(script.empty() || script.front() == '/', "SCRIPT_NAME empty or starts with /");
  csgi::fuzz::check(script != "/", "SCRIPT_NAME is never /");
  csgi::fuzz::check(path.empty() || path.front() == '/', "PATH_INFO empty or starts with /");
  csgi::fuzz::check(!csgi::has_dot_segment(script) && !csgi::has_dot_segment(path),
                    "no dot segment in SCRIPT_NAME or PATH_INFO (ENV-5)");
  csgi::fuzz::check(env.contains(csgi::keys::QUERY_STRING), "QUERY_STRING present");
  csgi::fuzz::check(!env.contains("HTTP_PROXY") && !env.contains("HTTP_CONTENT_LENGTH"), "dropped keys");
  return 0;
}
