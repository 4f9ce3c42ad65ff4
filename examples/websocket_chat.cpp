// A broadcast chat as an app library: "/" is the page, "/ws" the room. Every text message a member sends
// goes to every member; joins and leaves are announced. The room lives in the process: with --workers
// each worker has its own room.
//   csgi serve --app build/examples/libwebsocket_chat.so     then open http://127.0.0.1:5000/ twice
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/core/websocket.hpp"

namespace {

namespace ws = csgi::websocket;

/// The members, shared by the io (or app pool) threads that run the handlers.
class Room {
public:
  void join(ws::Connection& c) {
    std::size_t n;
    {
      std::lock_guard lock(mu_);
      members_.insert(c.shared_from_this());
      n = members_.size();
    }
    say("* " + c.remote_addr() + " joined (" + std::to_string(n) + " here)");
  }
  void leave(ws::Connection& c) {
    {
      std::lock_guard lock(mu_);
      members_.erase(c.shared_from_this());
    }
    say("* " + c.remote_addr() + " left");
  }
  /// Sends to every member; one that cannot keep up (its send queue full) misses the message.
  void say(std::string_view text) {
    std::vector<std::shared_ptr<ws::Connection>> to;
    {
      std::lock_guard lock(mu_);
      to.assign(members_.begin(), members_.end());
    }
    for (auto& m : to) m->send_text(text);
  }

private:
  std::mutex mu_;
  std::set<std::shared_ptr<ws::Connection>> members_;
};

constexpr const char* page = R"(<!doctype html><meta charset=utf-8><title>WebSocket chat</title>
<h1>WebSocket chat</h1>
<form id=f><input id=m autocomplete=off placeholder="say something"><button>send</button></form><pre id=log></pre>
<script>
const log = (s) => document.getElementById('log').textContent += s + '\n';
const url = new URL('ws', location.href); url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
const sock = new WebSocket(url);
sock.onmessage = (e) => log(e.data);
sock.onclose = (e) => log('* closed ' + e.code + ' ' + e.reason);
document.getElementById('f').onsubmit = (e) => {
  e.preventDefault(); const m = document.getElementById('m'); sock.send(m.value); m.value = '';
};
</script>)";

csgi::App make_app(const csgi::AppArgs&) {
  auto room = std::make_shared<Room>();
  return [room](csgi::Env& env) {
    std::string_view path = env.get("PATH_INFO");
    if (path == "/" || path.empty()) return csgi::Response::html(200, page);
    if (path != "/ws") return csgi::Response::error(404);
    ws::Handler h;
    h.max_message_bytes = 4096;
    h.on_open = [room](ws::Connection& c) { room->join(c); };
    h.on_message = [room](ws::Connection& c, std::string_view text, bool binary) {
      if (binary) return c.close(ws::close_code::unsupported_data, "text only");
      room->say(c.remote_addr() + ": " + std::string(text));
    };
    h.on_close = [room](ws::Connection& c, int, std::string_view) { room->leave(c); };
    return ws::accept(env, std::move(h));
  };
}

}  // namespace

CSGI_APP(make_app)
