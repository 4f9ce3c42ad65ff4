// WebSocket echo as an app library: "/" is a page that talks to "/ws", which sends every message back.
//   csgi serve --app build/examples/libwebsocket_echo.so     then open http://127.0.0.1:5000/
// Under FastCGI or CGI "/ws" answers 501: only `csgi serve` offers csgix.websocket.
#include "csgi/core/app_library.hpp"
#include "csgi/core/websocket.hpp"

namespace {

namespace ws = csgi::websocket;

constexpr const char* page = R"(<!doctype html><meta charset=utf-8><title>WebSocket echo</title>
<h1>WebSocket echo</h1>
<form id=f><input id=m autocomplete=off value="hello"><button>send</button></form><pre id=log></pre>
<script>
const log = (s) => document.getElementById('log').textContent += s + '\n';
const url = new URL('ws', location.href); url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
const sock = new WebSocket(url);
sock.onopen = () => log('open');
sock.onmessage = (e) => log('echo: ' + e.data);
sock.onclose = (e) => log('closed ' + e.code + ' ' + e.reason);
document.getElementById('f').onsubmit = (e) => { e.preventDefault(); sock.send(document.getElementById('m').value); };
</script>)";

csgi::Response app(csgi::Env& env) {
  std::string_view path = env.get("PATH_INFO");
  if (path == "/" || path.empty()) return csgi::Response::html(200, page);
  if (path != "/ws") return csgi::Response::error(404);
  ws::Handler h;
  h.on_message = [](ws::Connection& c, std::string_view data, bool binary) {
    binary ? c.send_binary(data) : c.send_text(data);
  };
  return ws::accept(env, std::move(h));
}

csgi::App make_app(const csgi::AppArgs&) { return app; }

}  // namespace

CSGI_APP(make_app)
