#include "csgi/middleware/csrf.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

#include "csgi/core/extensions.hpp"
#include "csgi/core/request.hpp"
#include "csgi/core/text.hpp"
#include "csgi/middleware/session_store.hpp"

namespace csgi::mw {
namespace {

bool safe_method(std::string_view m) { return m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "TRACE"; }

Session& session_of(Env& env) {
  Session* s = env.object<Session>(keys::x::session);
  if (!s) throw std::logic_error("Csrf: no session (put the Sessions middleware in front)");
  return *s;
}

/// The session id the token is bound to: a new id (Sessions::rotate at login) retires the token.
std::string_view session_id(Env& env) {
  auto* o = env.object<SessionOptions>(keys::x::session_options);
  return o ? std::string_view(o->id) : std::string_view{};
}

/// The token kept in the session for its current id; "" when none.
std::string_view stored_token(Env& env, const Session& s) {
  auto it = s.data.find(Csrf::session_key);
  if (it == s.data.end()) return {};
  std::string_view v = it->second;  // "<session id> <token>"
  std::size_t sp = v.rfind(' ');
  if (sp == std::string_view::npos || v.substr(0, sp) != session_id(env)) return {};
  return v.substr(sp + 1);
}

/// `hex` as bytes; "" when it is not hex digits of an even length.
std::string from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return {};
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return {};
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += hex_lower[c >> 4];
    out += hex_lower[c & 0xf];
  }
  return out;
}

/// The token as a page carries it: hex(pad, pad XOR token) with a fresh random pad (Django's and Rails'
/// masking), so no two responses carry the same bytes for a compression side channel (BREACH) to find.
std::string masked(std::string_view token_hex) {
  std::string token = from_hex(token_hex);
  std::string pad(token.size(), '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(pad.data()), static_cast<int>(pad.size())) != 1)
    throw std::runtime_error("RAND_bytes failed");
  std::string x = pad;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<char>(x[i] ^ token[i]);
  return to_hex(pad + x);
}

/// True when `got` is the token `want` (hex), unmasked or masked; compared in constant time.
bool token_matches(std::string_view got, std::string_view want) {
  if (got.size() == want.size()) return CRYPTO_memcmp(got.data(), want.data(), got.size()) == 0;
  if (got.size() != 2 * want.size()) return false;
  std::string g = from_hex(got), w = from_hex(want);
  if (w.empty() || g.size() != 2 * w.size()) return false;
  for (std::size_t i = 0; i < w.size(); ++i) g[i] = static_cast<char>(g[i] ^ g[w.size() + i]);
  return CRYPTO_memcmp(g.data(), w.data(), w.size()) == 0;
}

Response refuse_csrf(std::string_view reason) {
  Response r = Response::text(403, "Forbidden: " + std::string(reason) + "\n");
  r.headers.add("Cache-Control", "no-store");
  return r;
}

}  // namespace

Csrf::Csrf(App next, CsrfOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Csrf: no next app");
  if (!is_token(options_.header)) throw std::invalid_argument("Csrf: bad header name: " + options_.header);
  env_header_ = "HTTP_" + options_.header;
  for (char& c : env_header_) c = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

std::string Csrf::token(Env& env) {
  Session& s = session_of(env);
  if (std::string_view t = stored_token(env, s); !t.empty()) return masked(t);
  std::string t = random_token();
  s.data[std::string(session_key)] = std::string(session_id(env)) + " " + t;
  return masked(t);
}

bool Csrf::trusted(std::string_view origin) const {
  return std::any_of(options_.trusted_origins.begin(), options_.trusted_origins.end(),
                     [&](const std::string& o) { return iequals(o, origin); });
}

std::string_view Csrf::origin_problem(Env& env) const {
  std::string_view origin = env.get(keys::HTTP_ORIGIN);
  if (!origin.empty() && trusted(origin)) return {};
  if (const Value* site = env.find(keys::HTTP_SEC_FETCH_SITE); site && site->is_text()) {
    std::string_view v = site->text();
    return v == "same-origin" || v == "none" ? std::string_view{} : "cross-site request (Sec-Fetch-Site)";
  }
  if (origin.empty()) return {};  // not a browser that sends Origin: the token decides
  Request req(env);
  std::string own = std::string(req.scheme()) + "://" + req.host();
  return iequals(origin, own) ? std::string_view{} : "cross-origin request (Origin)";
}

Response Csrf::operator()(Env& env) {
  Session& s = session_of(env);
  if (safe_method(env.get(keys::REQUEST_METHOD))) return next_(env);
  if (std::string_view why = origin_problem(env); !why.empty()) return refuse_csrf(why);
  std::string_view want = stored_token(env, s);
  if (want.empty()) return refuse_csrf("CSRF token missing from the session");
  std::string_view got = env.get(env_header_);
  if (got.empty() && !options_.form_field.empty())
    got = Request(env).body_parameters().get(options_.form_field).value_or(std::string_view{});
  if (got.empty()) return refuse_csrf("CSRF token missing");
  if (!token_matches(got, want)) return refuse_csrf("CSRF token invalid");
  return next_(env);
}

}  // namespace csgi::mw
