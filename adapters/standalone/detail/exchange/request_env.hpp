#pragma once
// What every protocol's request shares before the app runs: the env keys the server sets (the same on
// HTTP/1 and HTTP/2), and whether the request is inside the server's mount.
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
  websocket::Upgrade* websocket = nullptr;    // csgix.websocket
  Hijack* io = nullptr;                       // csgix.io (HTTP/1 without TLS only)
};

/// Sets the server's keys of a request's env: csgi.input and csgi.errors, the fixed flags, the
/// extensions, and HTTPS when a PROXY header said the client spoke TLS to the proxy.
void set_server_env(Env& env, const Shared& sh, const RequestObjects& objects, bool https_via_proxy);

/// False when the server is mounted under a prefix (--script-name) and the request is outside it: the
/// answer is 404, and the app is not called.
bool inside_mount(const Shared& sh, const Env& env) noexcept;

}  // namespace csgi::standalone::detail
