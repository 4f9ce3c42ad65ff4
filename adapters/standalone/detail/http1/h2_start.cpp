// The HTTP/1 connection's way into HTTP/2: a connection whose first bytes are the HTTP/2 preface, whose TLS
// handshake chose h2, or (when allowed) an HTTP/1.1 `Upgrade: h2c` request hands its byte stream to the
// HTTP/2 codec (H2Conn), its sibling on the transport.
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

namespace csgi::standalone::detail {

namespace {
// RFC 4648 §5 (base64url), padding optional: the token68 of HTTP2-Settings. False on a bad character.
bool base64url_decode(std::string_view in, std::string& out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26 : ch >= '0' && ch <= '9' ? ch - '0' + 52
            : ch == '-' ? 62 : ch == '_' ? 63 : -1;
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

// True when the comma-separated `list` holds `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}
}  // namespace

// With h2c_upgrade on, HTTP/1.1 `Upgrade: h2c` with HTTP2-Settings (RFC 7540 §3.2) on a request without a
// body: answered 101, and the request is served as stream 1 of an HTTP/2 connection. Anything else is
// served as HTTP/1.1. Cleartext only (RFC 7540 §3.2): a TLS connection negotiates h2 by ALPN instead.
bool H1Conn::try_h2c_upgrade() {
  if (!sh_.opt.h2c_upgrade || tr_.tls() || !env_ || req_.http10 || !parser_ || !parser_->is_done() || req_.body_begun) return false;
  Env& old = *env_;
  if (!has_token(old.get("HTTP_UPGRADE"), "h2c") || !has_token(old.get("HTTP_CONNECTION"), "upgrade") ||
      !has_token(old.get("HTTP_CONNECTION"), "http2-settings") || !old.contains("HTTP_HTTP2_SETTINGS") ||
      sh_.opt.h2_max_streams == 0)
    return false;
  std::string settings;
  if (!base64url_decode(trim_ows(old.get("HTTP_HTTP2_SETTINGS")), settings)) return false;
  // The request's env again, copied out of the read buffer, as HTTP/2 has it (ENV-16).
  auto env = t_.acquire_env();
  for (const Env::Entry& e : old) {
    if (!e.value.is_text() || e.key == "HTTP_UPGRADE" || e.key == "HTTP_CONNECTION" || e.key == "HTTP_HTTP2_SETTINGS" ||
        e.key == "HTTP_KEEP_ALIVE" || e.key == "HTTP_TE")
      continue;
    env->set(e.key, e.value.text());
  }
  env->set(keys::SERVER_PROTOCOL, "HTTP/2");
  bool head = req_.head;
  std::string rest(in_.unparsed());
  parser_.reset();
  t_.release_env(std::move(env_));
  req_.stage = Request::none;
  phase_ = Phase::h2;
  tr_.start_h2_upgraded(settings, std::move(env), head, rest);
  return true;
}

// The connection's first bytes were the HTTP/2 preface, or its TLS handshake chose h2.
void H1Conn::start_h2() {
  phase_ = Phase::h2;  // nothing HTTP/1 is ever written on this connection
  std::string_view initial = in_.unparsed();
  in_.begin = in_.end = 0;
  tr_.start_h2(initial);
}

}  // namespace csgi::standalone::detail
