// The server's env keys, the mount and the app call of every protocol's request (see request.hpp).
#include "csgi/adapters/standalone/detail/exchange/request.hpp"

#include "csgi/adapters/standalone/detail/exchange/inline_watch.hpp"
#include "csgi/adapters/standalone/detail/process/recycle.hpp"
#include "csgi/core/app_failure.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request_env.hpp"

namespace csgi::standalone::detail {

namespace {
/// Sets `key`, a constant of keys.hpp: its bytes are static, so the env keeps the view without copying it.
[[gnu::always_inline]] inline void put_key(Env& env, std::string_view key, Value v) {
  *env.emplace(key, v, false).first = v;
}

// A TLS listener that serves HTTP/3 says so on its HTTP/1.1 and HTTP/2 responses (RFC 7838 Alt-Svc),
// unless the app gave its own.
void advertise_http3(const Shared& sh, const Env& env, Response& res) {
  if (env.get(keys::url_scheme) != "https" || env.get(keys::SERVER_PROTOCOL) == "HTTP/3") return;
  std::string_view port = env.get(keys::SERVER_PORT);
  for (const auto& [p, value] : sh.alt_svc) {
    if (p != port) continue;
    if (!res.headers.has("Alt-Svc")) res.headers.add("Alt-Svc", value);
    return;
  }
}
}  // namespace

void set_server_env(Env& env, const Shared& sh, const RequestObjects& o, bool https_via_proxy) {
  put_key(env, keys::input, Value::of_object(o.input));
  put_key(env, keys::x::input_buffered, Value::of_bool(true));
  put_key(env, keys::errors, Value::of_object(static_cast<ErrorStream*>(&sh.errors)));
  set_server_flags(env, {sh.multithread, sh.multiprocess, false});
  if (o.io) put_key(env, keys::x::io, Value::of_object(o.io));
  put_key(env, keys::x::cleanup, Value::of_bool(true));
  put_key(env, keys::x::cleanup_handlers, Value::of_object(o.cleanup));
  put_key(env, keys::x::informational, Value::of_object(o.informational));
  if (o.websocket) put_key(env, keys::x::websocket, Value::of_object(o.websocket));
  put_key(env, keys::x::request_body_limit, Value::of_int(static_cast<std::int64_t>(sh.opt.max_body_bytes)));
  put_key(env, keys::x::server_stats, Value::of_object(static_cast<ServerStats*>(sh.stats)));
  if (https_via_proxy) env.set_view(keys::HTTPS, "on");
}

bool inside_mount(const Shared& sh, const Env& env) noexcept {
  return sh.opt.script_name.empty() || !env.get(keys::SCRIPT_NAME).empty();
}

Response call_app(const Shared& sh, Env& env, int& failed) noexcept {
  try {
    // An inline call under app_inline_first is timed (a pool thread calls only once the watch said so).
    InlineWatch::Call watch(sh.inline_watch && sh.inline_watch->inline_now() ? sh.inline_watch : nullptr);
    if (sh.alt_svc.empty()) return sh.app(env);  // (copy elision: no move of the response)
    Response res = sh.app(env);
    advertise_http3(sh, env, res);
    return res;
  } catch (...) {
    try {
      Response res = app_failure_response(env, std::current_exception());
      failed = res.status;
      return res;
    } catch (...) {  // building the answer failed too (out of memory)
    }
  }
  failed = 500;
  Response res;
  res.status = 500;
  return res;
}

void response_done(const Shared& sh, const CleanupHandlers& cleanup, int status, std::uint64_t body_bytes) noexcept {
  sh.stats->record_response(status, body_bytes);
  cleanup.report_sent({status, body_bytes});
  if (sh.recycler) sh.recycler->after_request();
}

}  // namespace csgi::standalone::detail
