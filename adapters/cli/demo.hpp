#pragma once
/// The demo app of `csgi serve --demo` (and `make run`): "/" greets, "/env" shows the request env as an
/// HTML table, "/stream" streams ten lines through a delayed response's Writer, one every 200 ms,
/// "/websocket" is a page with a WebSocket echo ("/websocket/echo") and a broadcast chat ("/websocket/chat").
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::cli {

App demo_app(const std::vector<std::string>& args = {});

}  // namespace csgi::cli
