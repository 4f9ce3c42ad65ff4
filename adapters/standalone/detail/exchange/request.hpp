#pragma once
// What every protocol's request shares from its env to the end of its response: the env keys the server
// sets (the same on HTTP/1 and HTTP/2), whether the request is inside the server's mount, the app call,
// and the end: the stats, the access log and --max-requests.
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi::standalone::detail {

/// The request's objects the env points at; those a protocol does not offer are null.
struct RequestObjects {
  Input* input = nullptr;                     // csgi.input: the whole body, read before the app runs
  CleanupHandlers* cleanup = nullptr;         // csgix.cleanup.handlers
  Informational* informational = nullptr;     // csgix.informational
  websocket::Handshake* websocket = nullptr;    // csgix.websocket
  Hijack* io = nullptr;                       // csgix.io (HTTP/1 without TLS only)
};

/// Sets the server's keys of a request's env: csgi.input and csgi.errors, the fixed flags, the
/// extensions, and HTTPS when a PROXY header said the client spoke TLS to the proxy.
void set_server_env(Env& env, const Shared& sh, const RequestObjects& objects, bool https_via_proxy);

/// False when the server is mounted under a prefix (--script-name) and the request is outside it: the
/// answer is 404, and the app is not called.
bool inside_mount(const Shared& sh, const Env& env) noexcept;

/// Calls the app on this thread (an io thread, or a pool thread: then only `env` and the shared state
/// are touched). An exception becomes the response app_failure_response() gives (logged where the
/// server is at fault); `failed` is its status (0 when the app returned).
Response call_app(const Shared& sh, Env& env, int& failed) noexcept;

/// A request's response ended (complete, or cut short by the connection with `body_bytes` sent): counted
/// in the server's stats and toward the worker's --max-requests, and reported to the request's cleanup
/// handlers, which run next (EXT-4: the access log middleware logs it).
void response_done(const Shared& sh, const CleanupHandlers& cleanup, int status, std::uint64_t body_bytes) noexcept;

}  // namespace csgi::standalone::detail
