#include "csgi/adapters/cli/demo.hpp"
#include "csgi/core/text.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "csgi/core/response.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi::cli {

namespace {


std::string value_text(const Value& v) {
  switch (v.type()) {
    case Value::Type::text: return std::string(v.text());
    case Value::Type::integer: return std::to_string(v.integer());
    case Value::Type::boolean: return v.truthy() ? "true" : "false";
    case Value::Type::object: return "(object)";
  }
  return {};
}

Response env_page(Env& env) {
  std::string body =
      "<!doctype html><meta charset=utf-8><title>csgi env</title>"
      "<style>body{font:14px sans-serif;margin:2em}td{padding:2px 8px;border-bottom:1px solid #ddd;"
      "font-family:monospace}</style><h1>The request env</h1><table>";
  for (const auto& e : env) {
    body += "<tr><td>" + csgi::html_escape(e.key) + "</td><td>" + csgi::html_escape(value_text(e.value)) + "</td></tr>";
  }
  body += "</table><p><a href=\"./\">back</a></p>";
  return Response::html(200, std::move(body));
}

Response stream_page() {
  static std::atomic<int> running{0};
  if (running.load() >= 32) return Response::error(503, "too many demo streams at once");
  return Response::delayed([](Responder r) {
    auto w = r.start(200, {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}});
    ++running;
    std::thread([w] {
      for (int i = 1; i <= 10; ++i) {
        if (!w->write("line " + std::to_string(i) + " of 10, written by a delayed writer\n")) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      w->close();
      --running;
    }).detach();
  });
}

// The WebSocket page: an echo and a broadcast chat in one (examples/websocket_echo.cpp and
// examples/websocket_chat.cpp are the same as app libraries of their own).
constexpr const char* websocket_html = R"(<!doctype html><meta charset=utf-8><title>WebSocket demo</title>
<h1>WebSocket</h1><p id=state>connecting…</p>
<h2>Echo</h2><form id=ef><input id=em autocomplete=off value="hello"><button>send</button></form><pre id=elog></pre>
<h2>Chat</h2><p>Open this page twice.</p>
<form id=cf><input id=cm autocomplete=off placeholder="say something"><button>send</button></form><pre id=clog></pre>
<p><a href="./">back</a></p>
<script>
const at = (p) => { const u = new URL(p, location.href); u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:'; return u; };
const out = (id) => (s) => document.getElementById(id).textContent += s + '\n';
const echo = new WebSocket(at('websocket/echo')), chat = new WebSocket(at('websocket/chat'));
echo.onopen = () => document.getElementById('state').textContent = 'connected';
echo.onmessage = (e) => out('elog')('echo: ' + e.data);
chat.onmessage = (e) => out('clog')(e.data);
echo.onclose = chat.onclose = (e) => document.getElementById('state').textContent = 'closed ' + e.code + ' ' + e.reason;
document.getElementById('ef').onsubmit = (e) => { e.preventDefault(); echo.send(document.getElementById('em').value); };
document.getElementById('cf').onsubmit = (e) => {
  e.preventDefault(); const m = document.getElementById('cm'); chat.send(m.value); m.value = '';
};
</script>)";

struct ChatRoom {
  std::mutex mu;
  std::set<std::shared_ptr<websocket::Connection>> members;
  void say(const std::string& text) {
    std::vector<std::shared_ptr<websocket::Connection>> to;
    {
      std::lock_guard lock(mu);
      to.assign(members.begin(), members.end());
    }
    for (auto& m : to) m->send_text(text);
  }
};

Response websocket_endpoint(Env& env, std::string_view which, const std::shared_ptr<ChatRoom>& room) {
  namespace ws = websocket;
  ws::Handler h;
  h.max_message_bytes = 4096;
  if (which == "echo") {
    h.on_message = [](ws::Connection& c, std::string_view data, bool binary) {
      binary ? c.send_binary(data) : c.send_text(data);
    };
    return ws::accept(env, std::move(h));
  }
  h.on_open = [room](ws::Connection& c) {
    {
      std::lock_guard lock(room->mu);
      room->members.insert(c.shared_from_this());
    }
    room->say("* " + c.remote_addr() + " joined");
  };
  h.on_message = [room](ws::Connection& c, std::string_view text, bool) {
    room->say(c.remote_addr() + ": " + std::string(text));
  };
  h.on_close = [room](ws::Connection& c, int, std::string_view) {
    {
      std::lock_guard lock(room->mu);
      room->members.erase(c.shared_from_this());
    }
    room->say("* " + c.remote_addr() + " left");
  };
  return ws::accept(env, std::move(h));
}

}  // namespace

App demo_app(const std::vector<std::string>& args) {
  std::string name = args.empty() ? "csgi" : args.front();
  auto room = std::make_shared<ChatRoom>();
  return [name, room](Env& env) -> Response {
    std::string_view path = env.get(keys::PATH_INFO);
    if (path == "/" || path.empty()) {
      return Response::html(200,
                            "<!doctype html><meta charset=utf-8><title>" + csgi::html_escape(name) +
                                " demo</title><h1>Hello from " + csgi::html_escape(name) +
                                "!</h1><ul><li><a href=\"env\">env</a>: the request env"
                                "<li><a href=\"stream\">stream</a>: a streamed response"
                                "<li><a href=\"websocket\">websocket</a>: an echo and a chat over WebSocket</ul>");
    }
    if (path == "/env") return env_page(env);
    if (path == "/stream") return stream_page();
    if (path == "/websocket") return Response::html(200, websocket_html);
    if (path == "/websocket/echo" || path == "/websocket/chat") return websocket_endpoint(env, path.substr(11), room);
    if (path == "/hello") return Response::text(200, "Hello, world!");
    return Response::error(404);
  };
}

}  // namespace csgi::cli
