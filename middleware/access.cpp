#include "csgi/middleware/access.hpp"

#include <stdexcept>

#include "csgi/core/percent.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

namespace {
/// SCRIPT_NAME + PATH_INFO made canonical as adapters make it (csgi::remove_dot_segments; a ".." that
/// climbs above the root throws csgi::BadRequest), then with "//" collapsed, so that "//admin" and an
/// app-set "/x/../admin" still hit "/admin". Slashes are collapsed only after the dot segments are gone:
/// "/admin//.." is refused as adapters refuse it, never taken for "/".
std::string normalized_path(std::string_view script, std::string_view path) {
  std::string full;
  full.reserve(script.size() + path.size() + 1);
  full.append(script).append(path);
  full.resize(remove_dot_segments(full.data(), full.size()));
  std::string out;
  out.reserve(full.size());
  for (char c : full)
    if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
  return out.empty() ? std::string("/") : out;
}

}  // namespace

Access::Access(App next, AccessOptions options)
    : next_(std::move(next)), default_allow_(options.default_allow), message_(std::move(options.message)) {
  if (!next_) throw std::invalid_argument("Access: no next app");
  for (auto& r : options.rules) {
    for (const auto& m : r.methods) {
      if (m.empty()) throw std::invalid_argument("Access: empty method in a rule");
      for (char c : m)
        if (!(c >= 'A' && c <= 'Z') && c != '-' && c != '_')
          throw std::invalid_argument("Access: method must be upper-case: " + m);
    }
    if (!r.path_prefix.empty() && r.path_prefix.front() != '/')
      throw std::invalid_argument("Access: path prefix must start with '/': " + r.path_prefix);
    rules_.push_back(Compiled{r.allow, CidrSet(r.from), r.from.empty(), std::move(r.methods), std::move(r.path_prefix)});
  }
}

bool Access::allowed(const Env& env) const {
  std::optional<IpAddress> addr;
  bool parsed = false;
  std::string_view method = env.get(keys::REQUEST_METHOD);
  std::string path;
  for (const auto& r : rules_) {
    if (!r.any_address) {
      if (!parsed) {
        addr = IpAddress::parse(env.get(keys::REMOTE_ADDR));
        parsed = true;
      }
      // An address that is not an IP (reverse_proxy's "unknown", a Unix socket peer) cannot be shown to
      // be outside a denied block: it fails closed, matching every deny rule's address and no allow's.
      if (addr ? !r.from.contains(*addr) : r.allow) continue;
    }
    if (!r.methods.empty()) {
      bool hit = false;
      for (const auto& m : r.methods) hit = hit || m == method;
      if (!hit) continue;
    }
    if (!r.prefix.empty()) {
      if (path.empty()) path = normalized_path(env.get(keys::SCRIPT_NAME), env.get(keys::PATH_INFO));
      if (!within_prefix(path, r.prefix)) continue;
    }
    return r.allow;
  }
  return default_allow_;
}

Response Access::operator()(Env& env) {
  if (!allowed(env)) return Response::text(403, message_ + "\n");
  return next_(env);
}

}  // namespace csgi::mw
