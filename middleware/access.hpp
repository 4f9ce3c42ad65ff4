#pragma once
/// Access (Plack::Middleware::Access, Monkey's security plugin): allow or deny requests by client
/// address (IPv4/IPv6 CIDR), method and path prefix. Rules are tried in order; the first rule whose
/// every condition matches decides; when none matches, `default_allow` decides. Denied: 403.
///
///   csgi::mw::AccessOptions o;
///   o.rules = {csgi::mw::AccessRule::allow_from({"127.0.0.1", "10.0.0.0/8", "::1"}),
///              csgi::mw::AccessRule::deny_from({}, {}, "/admin"),      // everyone else: not /admin
///              csgi::mw::AccessRule::deny_from({}, {"DELETE"})};
///
/// A path prefix matches on a '/' boundary ("/admin" matches /admin and /admin/x, not /administrator;
/// a prefix ending in '/' matches what starts with it), against SCRIPT_NAME + PATH_INFO. Adapters give
/// that path canonical (ENV-5: no "." or ".." segments); Access resolves dot segments again by the same
/// rule (csgi::remove_dot_segments) for a PATH_INFO set by a layer above, then collapses "//", so
/// "//admin" or "/x/../admin" still hit "/admin"; a ".." above the root is a csgi::BadRequest (400).
/// A request whose REMOTE_ADDR is not an IP address (reverse_proxy's `unknown` for a forwarding header
/// that names no client, a peer on a Unix socket) fails closed: it matches the address condition of
/// every deny rule and of no allow rule, so neither an allow-list nor a deny-list lets it through.
/// Reads:  REMOTE_ADDR, REQUEST_METHOD, SCRIPT_NAME, PATH_INFO.
/// Writes: nothing; a denied request gets 403 and never reaches the app.
/// Order:  after reverse_proxy (so REMOTE_ADDR is the client), before the apps it protects.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/cidr.hpp"

namespace csgi::mw {

struct AccessRule {
  bool allow = true;
  std::vector<std::string> from;     // CIDR blocks or addresses; empty = any address
  std::vector<std::string> methods;  // e.g. {"GET","HEAD"}; empty = any method
  std::string path_prefix;           // "" = any path

  static AccessRule allow_from(std::vector<std::string> from, std::vector<std::string> methods = {},
                               std::string path_prefix = {}) {
    return {true, std::move(from), std::move(methods), std::move(path_prefix)};
  }
  static AccessRule deny_from(std::vector<std::string> from, std::vector<std::string> methods = {},
                              std::string path_prefix = {}) {
    return {false, std::move(from), std::move(methods), std::move(path_prefix)};
  }
};

struct AccessOptions {
  std::vector<AccessRule> rules;
  bool default_allow = true;
  /// Body of the 403 response.
  std::string message = "Forbidden";
};

class Access {
public:
  /// Throws std::invalid_argument for a malformed CIDR, method or path prefix.
  explicit Access(App next, AccessOptions options);
  Response operator()(Env& env);
  /// Whether the rules let this request through.
  bool allowed(const Env& env) const;

private:
  struct Compiled {
    bool allow;
    CidrSet from;
    bool any_address;
    std::vector<std::string> methods;
    std::string prefix;
  };
  App next_;
  std::vector<Compiled> rules_;
  bool default_allow_;
  std::string message_;
};

}  // namespace csgi::mw
