#pragma once
// The ASGI `websocket` scope on the csgi servers (csgi serve --asgi, csgi.from_asgi): a WebSocket upgrade
// request that the server can honour (csgix.websocket) goes to the event loop as an AsgiSocket; the app's
// thread waits for the ASGI app's websocket.accept or websocket.close, then answers 101 (and runs the
// connection with a csgi::websocket::Handler) or 403.
#include <memory>

#include "common.hpp"
#include "csgi/core/env.hpp"
#include "loop_queue.hpp"

namespace csgi::python {

/// The scope entries an ASGI http scope has, from the env (from_asgi.cpp).
py::dict asgi_http_scope(const Env& env);

class AsgiSocket;
/// WebSocket handshakes waiting for the event loop.
class AsgiSocketQueue : public LoopQueue<AsgiSocket> {};

/// True when `env` is a WebSocket opening handshake that this request's adapter can upgrade.
bool asgi_websocket_request(const Env& env);

/// Hands the handshake to the event loop through `queue` and waits for the app's answer (bounded).
Response asgi_websocket_call(Env& env, const std::shared_ptr<AsgiSocketQueue>& queue);

void bind_asgi_websocket(py::module_& m);

}  // namespace csgi::python
