#include "csgi/core/request_env.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

std::string_view canonical_path(Env& env, std::string_view raw) {
  // One pass for the common path, with no '%', no NUL and no "/." (so no dot segment): kept as it came.
  char prev = 0;
  bool plain = true;
  for (char c : raw) {
    if (c == '%' || c == '\0' || (c == '.' && prev == '/')) {
      plain = false;
      break;
    }
    prev = c;
  }
  if (plain) return raw;
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
  // Most paths hold no '.' at all: one memchr instead of has_dot_segment's search for each "/.".
  if (decoded.empty() || std::memchr(decoded.data(), '.', decoded.size()) == nullptr || !has_dot_segment(decoded))
    return decoded;
  char* buf = env.allocate(decoded.size());
  std::memcpy(buf, decoded.data(), decoded.size());
  return {buf, remove_dot_segments(buf, decoded.size())};
}

std::string_view canonical_script_name(Env& env, std::string_view decoded) {
  std::string_view s = without_dot_segments(env, decoded);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

void populate_env(Env& env, const RequestHead& head, const ConnectionInfo& conn) {
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
// Header name → env key body: ASCII letters upper-cased, '-' → '_'. One table for short names; 8 or 16
// bytes at a time (GCC vector extensions: SSE2 or NEON) for the rest. Bit 8 of the table, and the
// returned mask, mark a byte other than a letter, a digit or '-' ('_' among them): a name holding one
// is dropped, as nginx's ignore_invalid_headers does (ENV-9, ENV-10).
constexpr std::array<std::uint16_t, 256> kKeyByte = [] {
  std::array<std::uint16_t, 256> t{};
  for (unsigned c = 0; c < 256; ++c) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    t[c] = static_cast<std::uint16_t>((c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c) | (alnum || c == '-' ? 0 : 0x100));
  }
  t['-'] = '_';
  return t;
}();

template <std::size_t N>
inline std::uint64_t key_chunk(const char* in, char* out) noexcept {
  typedef unsigned char V __attribute__((vector_size(N)));
  V x;
  std::memcpy(&x, in, N);
  V lower = reinterpret_cast<V>((x >= 'a') & (x <= 'z'));
  V dash = reinterpret_cast<V>(x == '-');
  V upper = reinterpret_cast<V>((x >= 'A') & (x <= 'Z'));
  V digit = reinterpret_cast<V>((x >= '0') & (x <= '9'));
  V under = ~(lower | upper | digit | dash);  // a byte that drops the name
  V y = x - (lower & 0x20) + (dash & static_cast<unsigned char>('_' - '-'));
  std::memcpy(out, &y, N);
  std::uint64_t m[N / 8];
  std::memcpy(m, &under, N);
  std::uint64_t any = 0;
  for (std::uint64_t w : m) any |= w;
  return any;
}

// Writes the key body for `n` bytes of `in` to `out`; nonzero when the name holds a byte that drops it.
inline std::uint64_t key_bytes(const char* in, std::size_t n, char* out) noexcept {
  std::uint64_t underscore = 0;
  if (n >= 16) {
    for (std::size_t i = 0; i + 16 < n; i += 16) underscore |= key_chunk<16>(in + i, out + i);
    underscore |= key_chunk<16>(in + n - 16, out + n - 16);
  } else if (n >= 8) {
    underscore |= key_chunk<8>(in, out);
    underscore |= key_chunk<8>(in + n - 8, out + n - 8);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t t = kKeyByte[static_cast<unsigned char>(in[i])];
      out[i] = static_cast<char>(t);
      underscore |= t & 0x100;
    }
  }
  return underscore;
}

constexpr std::string_view kContentType = "HTTP_CONTENT_TYPE", kContentLength = "HTTP_CONTENT_LENGTH",
                           kProxy = "HTTP_PROXY";

// Appends `value` to a repeated field's text, joined with ", " ("; " for Cookie, RFC 9113 §8.2.3) (ENV-9).
void join_field(Env& env, std::string_view key, Value& existing, std::string_view value) {
  std::string_view sep = key == keys::HTTP_COOKIE ? std::string_view("; ") : std::string_view(", ");
  std::string_view old = existing.text();
  char* joined = env.allocate(old.size() + sep.size() + value.size());
  // An empty view may have a null data(): memcpy must not see it, even for 0 bytes.
  if (!old.empty()) std::memcpy(joined, old.data(), old.size());
  std::memcpy(joined + old.size(), sep.data(), sep.size());
  if (!value.empty()) std::memcpy(joined + old.size() + sep.size(), value.data(), value.size());
  existing = Value::of_text({joined, old.size() + sep.size() + value.size()});
}
}  // namespace

std::string_view header_key(Env& env, std::string_view name) {
  std::size_t n = name.size();
  if (n == 0 || n > 256) return {};
  // The key is written straight into the arena; a dropped or repeated field leaves its bytes there until
  // clear() (at most the request's own header names).
  char* key = env.allocate(5 + n);
  std::memcpy(key, "HTTP_", 5);
  if (key_bytes(name.data(), n, key + 5) != 0) return {};
  std::string_view k(key, 5 + n);
  // Only "content-type", "content-length" and "proxy" in any case map to these keys ('_' is refused).
  if (n == 12 && k == kContentType) return keys::CONTENT_TYPE;
  if (n == 14 && k == kContentLength) return keys::CONTENT_LENGTH;
  if (n == 5 && k == kProxy) return {};
  return k;
}

bool header_meta_variable(std::string_view key) noexcept {
  if (key.size() <= 5 || !key.starts_with("HTTP_")) return false;
  if (key == kContentType || key == kContentLength || key == kProxy) return false;
  for (char c : key.substr(5))
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool add_header(Env& env, std::string_view name, std::string_view value) {
  std::string_view k = header_key(env, name);
  if (k.empty()) return false;
  auto [existing, inserted] = env.emplace(k, Value::of_text(value), false);
  // Repeated Content-Type/Content-Length: adapters reject differing values before this point.
  if (!inserted && existing->is_text() && k.starts_with("HTTP_")) join_field(env, k, *existing, value);
  return true;
}

namespace {
// The bytes of a reg-name or IPv4 address in a Host (RFC 3986 unreserved, sub-delims and '%').
constexpr std::array<bool, 256> kHostByte = [] {
  std::array<bool, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  for (char c : std::string_view("-._~!$&'()*+,;=%")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();
}  // namespace

bool valid_host(std::string_view host) noexcept {
  if (host.empty()) return false;
  std::string_view port;
  if (host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    for (char c : host.substr(1, close - 1)) {
      bool ok = hex_value(c) >= 0 || c == ':' || c == '.';
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
    for (char c : name)
      if (!kHostByte[static_cast<unsigned char>(c)]) return false;
  }
  if (port.size() > 5) return false;
  for (char c : port)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string_view target_authority(std::string_view target) noexcept {
  if (target.empty() || target.front() == '/') return {};
  std::size_t scheme_end = target.find("://");
  if (scheme_end == std::string_view::npos) return {};
  std::string_view scheme = target.substr(0, scheme_end);
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return {};
  std::string_view rest = target.substr(scheme_end + 3);
  return rest.substr(0, rest.find_first_of("/?#"));
}

namespace {
// The name and port of a Host value: "[::1]:8080" → "[::1]", "8080"; "a.example" → "a.example", "". An
// unclosed '[' has no name.
std::pair<std::string_view, std::string_view> split_host(std::string_view host) noexcept {
  std::size_t name_end = host.starts_with('[') ? host.find(']') : host.find(':');
  if (host.starts_with('[')) {
    if (name_end == std::string_view::npos) return {};
    ++name_end;
  }
  std::string_view name = host.substr(0, name_end), rest = host.substr(name.size());
  return {name, rest.starts_with(':') ? rest.substr(1) : std::string_view()};
}
}  // namespace

void set_server_from_host(Env& env) {
  auto [name, port] = split_host(env.get(keys::HTTP_HOST));
  if (!name.empty()) env.set_view(keys::SERVER_NAME, name);
}

void set_server_from_host(Env& env, std::string_view default_port) {
  auto [name, port] = split_host(env.get(keys::HTTP_HOST));
  if (!name.empty()) env.set_view(keys::SERVER_NAME, name);
  env.set_view(keys::SERVER_PORT, port.empty() ? default_port : port);
}

}  // namespace csgi
