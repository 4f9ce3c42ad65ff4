#include "csgi/middleware/static_prefix.hpp"

#include <stdexcept>

namespace csgi::mw {

StaticPrefix::StaticPrefix(App next, StaticPrefixOptions options)
    : next_(std::move(next)),
      prefixes_(std::move(options.prefixes)),
      pass_through_(options.pass_through),
      strip_(options.strip_prefix),
      files_(std::move(options.files)) {
  if (prefixes_.empty()) throw std::invalid_argument("StaticPrefix: no prefixes");
  for (const std::string& p : prefixes_)
    if (p.empty() || p.front() != '/') throw std::invalid_argument("StaticPrefix: prefix must start with '/': " + p);
}

Response StaticPrefix::operator()(Env& env) {
  std::string_view path = env.get(keys::PATH_INFO);
  const std::string* hit = nullptr;
  for (const std::string& p : prefixes_)
    if (path.starts_with(p)) {
      hit = &p;
      break;
    }
  if (!hit) return next_(env);
  Response res;
  if (strip_) {
    std::string_view prefix = *hit;
    if (prefix.back() == '/') prefix.remove_suffix(1);
    std::string script(env.get(keys::SCRIPT_NAME)), info(path);
    struct Restore {
      Env& env;
      std::string& script;
      std::string& info;
      ~Restore() {
        env.set(keys::SCRIPT_NAME, script);
        env.set(keys::PATH_INFO, info);
      }
    } restore{env, script, info};
    env.set(keys::SCRIPT_NAME, script + std::string(prefix));
    env.set(keys::PATH_INFO, path.substr(prefix.size()));
    res = files_(env);
  } else {
    res = files_(env);
  }
  if (pass_through_ && (res.status == 404 || res.status == 405)) return next_(env);
  return res;
}

}  // namespace csgi::mw
