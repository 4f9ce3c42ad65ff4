#include "csgi/core/request_env.hpp"

#include <cstring>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

std::string_view canonical_path(Env& env, std::string_view raw) {
  if (raw.find('%') == std::string_view::npos) {
    if (!raw.empty() && std::memchr(raw.data(), '\0', raw.size()) != nullptr) throw BadRequest("NUL in the request path");
    return without_dot_segments(env, raw);
  }
  char* buf = env.allocate(raw.size());
  std::size_t n = percent_decode_to(raw, buf, false);
  if (std::memchr(buf, '\0', n) != nullptr) throw BadRequest("NUL (%00) in the request path");
  return {buf, remove_dot_segments(buf, n)};
}

std::string_view without_dot_segments(Env& env, std::string_view decoded) {
  if (!has_dot_segment(decoded)) return decoded;
  char* buf = env.allocate(decoded.size());
  std::memcpy(buf, decoded.data(), decoded.size());
  return {buf, remove_dot_segments(buf, decoded.size())};
}

std::string_view canonical_script_name(Env& env, std::string_view decoded) {
  std::string_view s = without_dot_segments(env, decoded);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

void populate_env(Env& env, const RequestHead& head, const Connection& conn) {
  std::string_view target = head.target;
  env.set_view(keys::REQUEST_METHOD, head.method);
  env.set_view(keys::SERVER_PROTOCOL, head.protocol);
  env.set_view(keys::REQUEST_URI, target);

  // A fragment is never part of a request target (RFC 9112 §3.2).
  if (target.find('#') != std::string_view::npos) throw BadRequest("'#' in the request target");
  std::string_view path = target, query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  // absolute-form (RFC 9112 §3.2.2): keep only path and query; an empty path is "/".
  if (!path.empty() && path.front() != '/') {
    std::size_t scheme_end = path.find("://");
    if (target == "*" && head.method == "OPTIONS") {
      path = {};
    } else if (scheme_end == std::string_view::npos) {
      throw BadRequest("request target is neither origin-form nor absolute-form");
    } else if (!iequals(path.substr(0, scheme_end), "http") && !iequals(path.substr(0, scheme_end), "https")) {
      throw BadRequest("absolute-form request target with a scheme other than http or https");
    } else {
      std::size_t path_start = path.find('/', scheme_end + 3);
      path = path_start == std::string_view::npos ? std::string_view("/") : path.substr(path_start);
    }
  }
  env.set_view(keys::QUERY_STRING, query);

  std::string_view decoded = canonical_path(env, path);
  std::string_view script = conn.script_name;
  if (!script.empty() && decoded.starts_with(script) &&
      (decoded.size() == script.size() || decoded[script.size()] == '/')) {
    decoded.remove_prefix(script.size());
  } else {
    script = {};
  }
  env.set_view(keys::SCRIPT_NAME, script);
  env.set_view(keys::PATH_INFO, decoded);
  env.set_view(keys::SERVER_NAME, conn.server_name);
  env.set_view(keys::SERVER_PORT, conn.server_port);
  if (!conn.remote_addr.empty()) env.set_view(keys::REMOTE_ADDR, conn.remote_addr);
  if (!conn.remote_port.empty()) env.set_view(keys::REMOTE_PORT, conn.remote_port);
  env.set_view(keys::version, keys::spec_version);
  env.set_view(keys::url_scheme, conn.url_scheme);
}

namespace {
// Header name → env key body: ASCII letters upper-cased, '-' → '_'. Branch-free, so it vectorises.
inline void key_bytes(const char* in, std::size_t n, char* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    c = static_cast<unsigned char>(c ^ ((static_cast<unsigned char>(c - 'a') < 26u) << 5));
    c = static_cast<unsigned char>(c + (c == '-') * ('_' - '-'));
    out[i] = static_cast<char>(c);
  }
}
}  // namespace

bool add_header(Env& env, std::string_view name, std::string_view value) {
  if (name.empty() || name.size() > 256) return false;
  std::string_view key;
  if (name.size() == 12 && iequals(name, "content-type")) {
    key = keys::CONTENT_TYPE;
  } else if (name.size() == 14 && iequals(name, "content-length")) {
    key = keys::CONTENT_LENGTH;
  } else if (name.size() == 5 && iequals(name, "proxy")) {
    return false;
  } else {
    if (std::memchr(name.data(), '_', name.size()) != nullptr) return false;
    char buf[5 + 256];
    std::memcpy(buf, "HTTP_", 5);
    key_bytes(name.data(), name.size(), buf + 5);
    auto [existing, inserted] = env.emplace(std::string_view(buf, 5 + name.size()), Value::of_text(value), true);
    if (!inserted && existing->is_text()) {
      std::string_view old = existing->text();
      char* joined = env.allocate(old.size() + 2 + value.size());
      // An empty view may have a null data(): memcpy must not see it, even for 0 bytes.
      if (!old.empty()) std::memcpy(joined, old.data(), old.size());
      std::memcpy(joined + old.size(), ", ", 2);
      if (!value.empty()) std::memcpy(joined + old.size() + 2, value.data(), value.size());
      *existing = Value::of_text({joined, old.size() + 2 + value.size()});
    }
    return true;
  }
  // Repeated Content-Type/Content-Length: adapters reject differing values before this point.
  env.emplace(key, Value::of_text(value), false);
  return true;
}

bool valid_host(std::string_view host) noexcept {
  if (host.empty()) return false;
  std::string_view port;
  if (host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    for (char c : host.substr(1, close - 1)) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
      if (!ok) return false;
    }
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    port = rest.empty() ? rest : rest.substr(1);
  } else {
    auto colon = host.find(':');
    std::string_view name = host.substr(0, colon);
    if (colon != std::string_view::npos) port = host.substr(colon + 1);
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(name[i]);
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("-._~!$&'()*+,;=%").find(static_cast<char>(c)) != std::string_view::npos;
      if (!ok) return false;
    }
  }
  if (port.size() > 5) return false;
  for (char c : port)
    if (c < '0' || c > '9') return false;
  return true;
}

void set_server_from_host(Env& env) {
  std::string_view host = env.get(keys::HTTP_HOST);
  if (host.empty()) return;
  if (host.front() == '[') {
    auto end = host.find(']');
    if (end != std::string_view::npos) env.set_view(keys::SERVER_NAME, host.substr(0, end + 1));
    return;
  }
  env.set_view(keys::SERVER_NAME, host.substr(0, host.find(':')));
}

}  // namespace csgi
