#include "csgi/core/websocket.hpp"

#include "csgi/core/env.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::websocket {

namespace {

/// True when the comma-separated list `value` holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    if (iequals(trim_ows(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool is_b64(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/// A base64 encoding of 16 bytes: 22 characters and "==".
bool valid_key(std::string_view key) {
  key = trim_ows(key);
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (char c : key.substr(0, 22))
    if (!is_b64(c)) return false;
  return true;
}

Response upgrade_required(std::string why, bool version) {
  Response r = Response::error(426, why);
  r.headers.add("Upgrade", "websocket");
  if (version) r.headers.add("Sec-WebSocket-Version", "13");
  return r;
}

}  // namespace

bool sendable_close_code(int code) noexcept {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

std::string handshake_problem(const Env& env) {
  if (env.get(keys::REQUEST_METHOD) != "GET") return "a WebSocket handshake is a GET request";
  // HTTP/2: an RFC 8441 extended CONNECT, which the adapter presents as this same handshake (EXT-11).
  std::string_view protocol = env.get(keys::SERVER_PROTOCOL);
  if (protocol != "HTTP/1.1" && protocol != "HTTP/2") return "a WebSocket handshake needs HTTP/1.1 (or HTTP/2)";
  if (!has_token(env.get("HTTP_UPGRADE"), "websocket")) return "the request has no \"Upgrade: websocket\"";
  if (!has_token(env.get("HTTP_CONNECTION"), "upgrade")) return "the request has no \"Connection: Upgrade\"";
  if (!valid_key(env.get("HTTP_SEC_WEBSOCKET_KEY")))
    return "Sec-WebSocket-Key must be the base64 encoding of 16 bytes";
  if (trim_ows(env.get("HTTP_SEC_WEBSOCKET_VERSION")) != "13") return "Sec-WebSocket-Version must be 13";
  return {};
}

const std::vector<std::string>& Handshake::allowed_origins() const {
  static const std::vector<std::string> none;
  return none;
}

namespace {
/// `authority` ("host[:port]") without the port that `scheme` implies.
std::string_view without_default_port(std::string_view authority, std::string_view scheme) {
  std::string_view port = iequals(scheme, "https") || iequals(scheme, "wss") ? ":443"
                          : iequals(scheme, "http") || iequals(scheme, "ws") ? ":80"
                                                                              : "";
  if (!port.empty() && authority.size() > port.size() && authority.ends_with(port))
    authority.remove_suffix(port.size());
  return authority;
}
}  // namespace

std::string origin_problem(const Env& env, const std::vector<std::string>& allowed) {
  const Value* v = env.find("HTTP_ORIGIN");
  if (!v || !v->is_text()) return {};
  std::string_view origin = trim_ows(v->text());
  for (const std::string& a : allowed)
    if (a == "*" || iequals(a, origin)) return {};
  std::size_t sep = origin.find("://");
  if (sep != std::string_view::npos) {
    std::string_view scheme = origin.substr(0, sep), authority = origin.substr(sep + 3);
    std::string_view host = env.get(keys::HTTP_HOST);
    if (!authority.empty() && authority.find('/') == std::string_view::npos &&
        iequals(without_default_port(authority, scheme), without_default_port(host, env.get(keys::url_scheme))))
      return {};
  }
  std::string why = "WebSocket from Origin ";
  why.append(origin.substr(0, 200));
  why += " refused: only the same origin";
  if (!allowed.empty()) why += " and the allowed origins";
  why += " may connect";
  return why;
}

Response accept(Env& env, Handler handler) {
  auto* up = env.object<Handshake>(keys::x::websocket);
  if (!up)
    return Response::error(501, "this server offers no WebSocket here (csgix.websocket is absent): serve the app "
                                "with csgi serve");
  if (std::string why = handshake_problem(env); !why.empty())
    return upgrade_required(why, !env.get("HTTP_SEC_WEBSOCKET_VERSION").empty() &&
                                     trim_ows(env.get("HTTP_SEC_WEBSOCKET_VERSION")) != "13");
  const std::vector<std::string>& origins = handler.allowed_origins.empty() ? up->allowed_origins() : handler.allowed_origins;
  if (std::string why = origin_problem(env, origins); !why.empty()) return Response::error(403, why);
  std::string_view length = env.get(keys::CONTENT_LENGTH);
  if ((!length.empty() && length != "0") || !env.get("HTTP_TRANSFER_ENCODING").empty())
    return Response::error(400, "a WebSocket handshake has no body");
  if (!up->take(std::move(handler)))
    return Response::error(500, "the connection could not be upgraded (csgix.websocket refused the handler)");
  Response r;
  r.status = 101;
  r.headers.add("Upgrade", "websocket");
  return r;
}


}  // namespace csgi::websocket
