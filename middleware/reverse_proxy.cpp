#include "csgi/middleware/reverse_proxy.hpp"

#include <optional>
#include <stdexcept>
#include <string_view>

#include "csgi/core/text.hpp"

namespace csgi::mw {

namespace {

struct Hop {
  std::string_view node;   // for=, as sent (may be "unknown", "_hidden", "[::1]:80")
  std::string_view proto;
  std::string_view host;
  std::string_view port;   // X-Forwarded-Port
};

std::vector<std::string_view> split_list(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    auto comma = s.find(',');
    auto item = trim_ows(s.substr(0, comma));
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

/// Parses an RFC 7239 Forwarded value into hops; nullopt when it is malformed or empty.
/// Quoted values are unquoted in `storage` (backslash escapes dropped).
std::optional<std::vector<Hop>> parse_forwarded(std::string_view s, std::vector<std::string>& storage) {
  std::vector<Hop> hops;
  Hop cur;
  std::size_t i = 0;
  storage.reserve(s.size());  // views into storage must not move
  auto skip_ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  while (true) {
    skip_ws();
    std::size_t k = i;
    while (i < s.size() && s[i] != '=' && s[i] != ';' && s[i] != ',' && s[i] != ' ') ++i;
    std::string_view key = s.substr(k, i - k);
    if (key.empty() || i >= s.size() || s[i] != '=') return std::nullopt;
    ++i;
    std::string_view value;
    if (i < s.size() && s[i] == '"') {
      ++i;
      std::string v;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        v += s[i++];
      }
      if (i >= s.size()) return std::nullopt;
      ++i;
      storage.push_back(std::move(v));
      value = storage.back();
    } else {
      std::size_t v = i;
      while (i < s.size() && s[i] != ';' && s[i] != ',' && s[i] != ' ' && s[i] != '\t') ++i;
      value = s.substr(v, i - v);
    }
    if (iequals(key, "for")) cur.node = value;
    else if (iequals(key, "proto")) cur.proto = value;
    else if (iequals(key, "host")) cur.host = value;
    skip_ws();
    if (i >= s.size()) {
      hops.push_back(cur);
      break;
    }
    if (s[i] == ';') {
      ++i;
      continue;
    }
    if (s[i] == ',') {
      ++i;
      hops.push_back(cur);
      cur = Hop{};
      continue;
    }
    return std::nullopt;
  }
  return hops;
}

/// Splits a node ("1.2.3.4", "1.2.3.4:80", "[::1]:80", "::1") into an address and a port.
std::optional<IpAddress> parse_node(std::string_view node, std::string_view& port) {
  port = {};
  if (auto whole = IpAddress::parse(node); whole && (node.empty() || node.front() != '[')) return whole;
  if (!node.empty() && node.front() == '[') {
    auto close = node.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = node.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
    }
    return IpAddress::parse(node.substr(1, close - 1));
  }
  auto colon = node.find(':');
  if (colon == std::string_view::npos || node.find(':', colon + 1) != std::string_view::npos) return std::nullopt;
  port = node.substr(colon + 1);
  auto a = IpAddress::parse(node.substr(0, colon));
  if (!a || !a->v4) return std::nullopt;
  return a;
}

bool valid_port(std::string_view p) {
  if (p.empty() || p.size() > 5) return false;
  unsigned v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v > 0 && v < 65536;
}

bool valid_host(std::string_view h) {
  if (h.empty() || h.size() > 255) return false;
  for (char c : h) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == ':' || c == '[' || c == ']' || c == '_';
    if (!ok) return false;
  }
  return true;
}

/// Splits "host:port" / "[v6]:port" into name and port ("" when absent).
void split_host(std::string_view host, std::string_view& name, std::string_view& port) {
  port = {};
  name = host;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    if (close != std::string_view::npos && close + 1 < host.size() && host[close + 1] == ':') {
      name = host.substr(0, close + 1);
      port = host.substr(close + 2);
    }
    return;
  }
  auto colon = host.rfind(':');
  if (colon != std::string_view::npos && host.find(':') == colon) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
  }
}

/// What a trusted proxy's headers say: one hop per address entry, left to right.
struct Chain {
  bool present = false;    // the address header was sent (even empty)
  bool malformed = false;  // ... but could not be parsed
  std::vector<Hop> hops;
};

Chain read_forwarded(const Env& env, std::vector<std::string>& storage) {
  Chain c;
  const Value* v = env.find("HTTP_FORWARDED");
  if (!v || !v->is_text()) return c;
  c.present = true;
  if (auto parsed = parse_forwarded(v->text(), storage)) c.hops = std::move(*parsed);
  else c.malformed = true;
  return c;
}

Chain read_x_forwarded(const Env& env) {
  Chain c;
  auto fors = split_list(env.get("HTTP_X_FORWARDED_FOR"));
  auto protos = split_list(env.get("HTTP_X_FORWARDED_PROTO"));
  auto hosts = split_list(env.get("HTTP_X_FORWARDED_HOST"));
  auto ports = split_list(env.get("HTTP_X_FORWARDED_PORT"));
  c.present = env.find("HTTP_X_FORWARDED_FOR") != nullptr;
  c.malformed = c.present && fors.empty();
  std::size_t n = fors.empty() ? 1 : fors.size();  // proto/host without a For: one hop, our proxy
  c.hops.resize(n);
  auto spread = [n](const std::vector<std::string_view>& list, auto member, std::vector<Hop>& hs) {
    if (list.empty()) return;
    if (list.size() == n) {
      for (std::size_t i = 0; i < n; ++i) hs[i].*member = list[i];
    } else {
      for (auto& h : hs) h.*member = list.back();
    }
  };
  for (std::size_t i = 0; i < fors.size(); ++i) c.hops[i].node = fors[i];
  spread(protos, &Hop::proto, c.hops);
  spread(hosts, &Hop::host, c.hops);
  spread(ports, &Hop::port, c.hops);
  return c;
}

/// The client found by walking the chain from the right; `known` false when an entry that had to be
/// read was not an IP address.
struct Client {
  bool known = false;
  IpAddress addr{};
  std::string_view port;
  std::size_t hop = 0;  // the hop whose scheme and host apply
};

Client walk(const std::vector<Hop>& hops, const CidrSet& trusted) {
  Client c;
  // Hop k was written by the (trusted) proxy at position k+1, the last one by REMOTE_ADDR.
  for (std::size_t k = hops.size(); k-- > 0;) {
    c.hop = k;
    std::string_view port;
    auto a = parse_node(hops[k].node, port);
    if (!a) {
      c.known = false;
      return c;
    }
    c.known = true;
    c.addr = *a;
    c.port = port;
    if (!trusted.contains(*a)) break;
  }
  return c;
}

void apply_scheme_host(Env& env, const Hop& hop, const ReverseProxyOptions& o) {
  bool scheme_set = false;
  std::string_view scheme = env.get(keys::url_scheme, "http");
  if (o.use_proto && (iequals(hop.proto, "http") || iequals(hop.proto, "https"))) {
    env.set("reverse_proxy.url_scheme", scheme);
    env.set(keys::url_scheme, iequals(hop.proto, "https") ? "https" : "http");
    scheme = env.get(keys::url_scheme);
    scheme_set = true;
  }
  bool host_set = false;
  if (o.use_host && valid_host(hop.host)) {
    std::string_view name, port;
    split_host(hop.host, name, port);
    if (!name.empty() && (port.empty() || valid_port(port))) {
      env.set("reverse_proxy.HTTP_HOST", env.get(keys::HTTP_HOST));
      env.set(keys::HTTP_HOST, hop.host);
      host_set = true;
    }
  }
  std::string_view fwd_port = o.use_port ? hop.port : std::string_view{};
  if (!host_set && !scheme_set && fwd_port.empty()) return;
  std::string_view name, port;
  split_host(env.get(keys::HTTP_HOST), name, port);
  if (host_set && !name.empty()) env.set(keys::SERVER_NAME, name);
  if (valid_port(port)) {
    env.set(keys::SERVER_PORT, port);
  } else if (valid_port(fwd_port)) {
    env.set(keys::SERVER_PORT, fwd_port);
  } else if (host_set || scheme_set) {
    env.set(keys::SERVER_PORT, scheme == "https" ? "443" : "80");
  }
}

}  // namespace

ReverseProxy::ReverseProxy(App next, ReverseProxyOptions options)
    : next_(std::move(next)), options_(std::move(options)), trusted_(options_.trusted) {
  if (!next_) throw std::invalid_argument("ReverseProxy: no next app");
}

void ReverseProxy::apply(Env& env) const {
  std::string_view remote = env.get(keys::REMOTE_ADDR);
  if (!trusted_.contains(remote)) return;

  std::vector<std::string> storage;
  Chain chain = options_.header == ProxyHeader::forwarded ? read_forwarded(env, storage) : read_x_forwarded(env);
  if (chain.malformed) {
    // A header was sent but names no client: the peer (a trusted proxy) must not pass for it.
    env.set("reverse_proxy.REMOTE_ADDR", remote);
    env.set(keys::REMOTE_ADDR, "unknown");
    return;
  }
  if (chain.hops.empty()) return;
  Client client{};
  if (chain.present) {
    client = walk(chain.hops, trusted_);
    env.set("reverse_proxy.REMOTE_ADDR", remote);
    env.set(keys::REMOTE_ADDR, client.known ? client.addr.str() : std::string("unknown"));
    if (client.known && valid_port(client.port)) env.set(keys::REMOTE_PORT, client.port);
  } else {
    client.hop = chain.hops.size() - 1;  // no address header: the peer is the client
  }
  apply_scheme_host(env, chain.hops[client.hop], options_);
}

Response ReverseProxy::operator()(Env& env) {
  apply(env);
  return next_(env);
}

}  // namespace csgi::mw
