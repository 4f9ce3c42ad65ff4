// A CSGI_APP library for websocket_conformance.py: WebSocket endpoints through csgi::websocket::accept and
// plain HTTP beside them.
//   /echo      echoes every message, text as text, binary as binary
//   /small     echoes, with a 1024-byte message limit
//   /throw     on_message throws (the adapter closes with 1011)
//   /close     a message "CODE REASON" makes the server close with that code and reason
//   /thread    on_open starts a thread that sends "from a thread" after 50 ms (send from any thread)
//   /flood     a message "N" makes on_message send N binary messages of 64 KiB at once; it records how many
//              send() refused ("flood refused K") with the bytes it had queued then
//   /slow      echoes, each message after 200 ms (a slow handler: its client is held back)
//   /taken-then-delayed  hands csgix.websocket a handler, then answers with a delayed 200 instead of the 101
//   /events    every on_open/on_close so far, one line each ("close CODE REASON"); plain HTTP
//   /hello     plain HTTP
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "csgi/core/app_library.hpp"
#include "csgi/core/websocket.hpp"

namespace {

namespace ws = csgi::websocket;

std::mutex events_mu;
std::string events;

void record(const std::string& line) {
  std::lock_guard lock(events_mu);
  events += line + "\n";
}

ws::Handler echo() {
  ws::Handler h;
  h.on_open = [](ws::Connection&) { record("open"); };
  h.on_message = [](ws::Connection& c, std::string_view data, bool binary) {
    binary ? c.send_binary(data) : c.send_text(data);
  };
  h.on_close = [](ws::Connection&, int code, std::string_view reason) {
    record("close " + std::to_string(code) + " " + std::string(reason));
  };
  return h;
}

csgi::Response app(csgi::Env& env) {
  std::string_view path = env.get("PATH_INFO");
  if (path == "/hello") return csgi::Response::text(200, "hello");
  if (path == "/events") {
    std::lock_guard lock(events_mu);
    return csgi::Response::text(200, events);
  }
  if (path == "/taken-then-delayed") {
    (void)ws::accept(env, echo());
    return csgi::Response::delayed([](csgi::Responder r) { r.respond(csgi::Response::text(200, "delayed")); });
  }
  ws::Handler h = echo();
  if (path == "/small") h.max_message_bytes = 1024;
  if (path == "/throw") h.on_message = [](ws::Connection&, std::string_view, bool) { throw std::runtime_error("boom"); };
  if (path == "/close")
    h.on_message = [](ws::Connection& c, std::string_view data, bool) {
      std::size_t sp = data.find(' ');
      c.close(std::stoi(std::string(data.substr(0, sp))), sp == std::string_view::npos ? "" : data.substr(sp + 1));
    };
  if (path == "/flood")
    h.on_message = [](ws::Connection& c, std::string_view data, bool) {
      std::string chunk(64 * 1024, 'f');
      int n = std::stoi(std::string(data)), refused = 0;
      std::size_t most = 0;
      for (int i = 0; i < n; ++i) {
        if (!c.send_binary(chunk)) ++refused;
        most = std::max(most, c.buffered_amount());
      }
      record("flood refused " + std::to_string(refused) + " queued " + std::to_string(most));
    };
  if (path == "/slow")
    h.on_message = [](ws::Connection& c, std::string_view data, bool binary) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      binary ? c.send_binary(data) : c.send_text(data);
    };
  if (path == "/thread")
    h.on_open = [](ws::Connection& c) {
      std::thread([conn = c.shared_from_this()] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        conn->send_text("from a thread");
      }).detach();
    };
  return ws::accept(env, std::move(h));
}

csgi::App make_app(const csgi::AppArgs&) { return app; }

}  // namespace

CSGI_APP(make_app)
