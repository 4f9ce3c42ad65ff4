// The app the gateway adapter tests run behind real front servers (loaded with csgi::load_app).
// Routes by PATH_INFO, so it answers the same at "/" and under a prefix:
//   /env...          text "KEY=VALUE\n" for every text key, "key=true|false" for flags
//   /echo            the request body; X-Body-Length header
//   /file            a 300000-byte file body (written at start-up to --app-arg FILE, or DIR/file.bin)
//   /pull            a pull stream of three chunks
//   /stream?id=T     delayed + Writer from another thread: "first\n", then waits (≤5 s) until
//                    /release?id=T is called, then "second\n" — proves each write is flushed to the client.
//                    The token T keys the release, so releases meant for one request (or one front
//                    server's column, all sharing this process) never let another finish early
//   /release?id=T    releases the /stream with token T (or the next one to wait for it)
//   /gone            writes a chunk every 20 ms (≤ 10 s) until write() returns false; /gone-count says how
//                    many writers saw the client leave
//   /throw           throws (→ 500, logged);   /http-error throws HttpError 418
//   /die             kills the process (SIGKILL) before answering;   /hang?ms=N sleeps N ms (≤ 10 s)
//   /barrier?n=N     waits until N requests are inside at once (≤ 5 s): 200 "ok" or 503 "timeout"
//   /status?code=N   empty response with that status;   /headers   repeated Set-Cookie
//   /pid             the process id
//   /websocket       csgi::websocket::accept: these adapters offer no csgix.websocket, so 501
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/websocket.hpp"

namespace {

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::multiset<std::string> released;  // /release tokens not yet taken by a /stream
  int inside = 0;
  int generation = 0;
  std::atomic<int> gone{0};
  std::string file_path;
};

int query_int(std::string_view q, std::string_view name, int fallback) {
  auto p = q.find(std::string(name) + "=");
  if (p == std::string_view::npos) return fallback;
  return std::atoi(std::string(q.substr(p + name.size() + 1)).c_str());
}

std::string query_text(std::string_view q, std::string_view name) {
  for (std::size_t at = 0; at <= q.size();) {
    std::size_t end = std::min(q.find('&', at), q.size());
    std::string_view part = q.substr(at, end - at);
    if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
      return std::string(part.substr(name.size() + 1));
    at = end + 1;
  }
  return {};
}

csgi::App make_app(const csgi::AppArgs& args) {
  auto s = std::make_shared<Shared>();
  s->file_path = args.empty() ? "/tmp/csgi-gateway-app-file" : args[0];
  if (struct stat st {}; ::stat(s->file_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) s->file_path += "/file.bin";
  if (FILE* f = std::fopen(s->file_path.c_str(), "wb")) {
    for (int i = 0; i < 300000; ++i) std::fputc('a' + (i * 7 + i / 1000) % 26, f);
    std::fclose(f);
  }
  return [s](csgi::Env& env) -> csgi::Response {
    std::string_view path = env.get("PATH_INFO");
    std::string_view query = env.get("QUERY_STRING");
    if (path.starts_with("/env")) {
      std::string out;
      for (const auto& e : env) {
        out += e.key;
        out += '=';
        if (e.value.is_text()) out += e.value.text();
        else if (e.value.type() == csgi::Value::Type::boolean) out += e.value.truthy() ? "true" : "false";
        else if (e.value.type() == csgi::Value::Type::integer) out += std::to_string(e.value.integer());
        else out += "<object>";
        out += '\n';
      }
      return csgi::Response::text(200, out);
    }
    if (path == "/echo") {
      std::string body = env.input().read_all();
      env.input().rewind();
      std::string again = env.input().read_all();
      auto r = csgi::Response::text(200, body, std::string(env.get("CONTENT_TYPE", "application/octet-stream")));
      r.headers.add("X-Body-Length", std::to_string(body.size()));
      r.headers.add("X-Rewind-Ok", again == body ? "yes" : "no");
      return r;
    }
    if (path == "/file") {
      csgi::Response r;
      r.headers.add("Content-Type", "application/octet-stream");
      r.body = csgi::FileBody::open(s->file_path);
      return r;
    }
    if (path == "/pull") {
      auto n = std::make_shared<int>(0);
      csgi::Response r;
      r.headers.add("Content-Type", "text/plain");
      r.body = csgi::make_stream([n]() -> std::optional<std::string> {
        if (*n == 3) return std::nullopt;
        return "pull " + std::to_string((*n)++) + "\n";
      });
      return r;
    }
    if (path == "/stream") {
      return csgi::Response::delayed([s, id = query_text(query, "id")](csgi::Responder responder) {
        std::thread([s, id, responder] {
          auto w = responder.start(200, {{"Content-Type", "text/plain"}});
          w->write("first\n");
          {
            std::unique_lock lock(s->mu);
            s->cv.wait_for(lock, std::chrono::seconds(5), [&] { return s->released.count(id) > 0; });
            if (auto it = s->released.find(id); it != s->released.end()) s->released.erase(it);
          }
          w->write("second\n");
          w->close();
        }).detach();
      });
    }
    if (path == "/framed") {
      // Declares Content-Length: declared (default 5) and streams "hello", then with forge=1 a forged
      // response past it; writer=1 writes through a Writer instead of a pull stream (ADP-13).
      std::string declared = std::to_string(query_int(query, "declared", 5));
      auto chunks = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"hel", "lo"});
      if (query_int(query, "forge", 0)) chunks->push_back("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged");
      if (query_int(query, "writer", 0)) {
        return csgi::Response::delayed([declared, chunks](csgi::Responder responder) {
          auto w = responder.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", declared}});
          for (const auto& c : *chunks)
            if (!w->write(c)) break;
          w->close();
        });
      }
      auto i = std::make_shared<std::size_t>(0);
      csgi::Response r;
      r.headers.add("Content-Type", "text/plain");
      r.headers.add("Content-Length", declared);
      r.body = csgi::make_stream([i, chunks]() -> std::optional<std::string> {
        if (*i == chunks->size()) return std::nullopt;
        return (*chunks)[(*i)++];
      });
      return r;
    }
    if (path == "/release") {
      std::lock_guard lock(s->mu);
      s->released.insert(query_text(query, "id"));
      s->cv.notify_all();
      return csgi::Response::text(200, "released\n");
    }
    if (path == "/gone") {
      return csgi::Response::delayed([s](csgi::Responder responder) {
        auto w = responder.start(200, {{"Content-Type", "text/plain"}});
        for (int i = 0; i < 500; ++i) {
          if (!w->write(std::string(1024, 'g') + "\n")) {
            s->gone.fetch_add(1);
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        w->close();
      });
    }
    if (path == "/gone-count") return csgi::Response::text(200, std::to_string(s->gone.load()));
    if (path == "/throw") throw std::runtime_error("gateway test app: deliberate failure");
    if (path == "/http-error") throw csgi::HttpError(418, "teapot");
    if (path == "/die") {
      ::kill(::getpid(), SIGKILL);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (path == "/hang") {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(query_int(query, "ms", 3000), 10000)));
      return csgi::Response::text(200, "woke\n");
    }
    if (path == "/barrier") {
      int n = query_int(query, "n", 2);
      std::unique_lock lock(s->mu);
      int gen = s->generation;
      if (++s->inside >= n) {
        s->inside = 0;
        ++s->generation;
        s->cv.notify_all();
        return csgi::Response::text(200, "ok\n");
      }
      if (s->cv.wait_for(lock, std::chrono::seconds(5), [&] { return s->generation != gen; }))
        return csgi::Response::text(200, "ok\n");
      --s->inside;
      return csgi::Response::text(503, "timeout\n");
    }
    if (path == "/status") {
      csgi::Response r;
      r.status = query_int(query, "code", 200);
      return r;
    }
    if (path == "/headers") {
      auto r = csgi::Response::text(200, "cookies\n");
      r.headers.add("Set-Cookie", "a=1");
      r.headers.add("Set-Cookie", "b=2");
      return r;
    }
    if (path == "/pid") return csgi::Response::text(200, std::to_string(::getpid()));
    if (path == "/websocket") return csgi::websocket::accept(env, {});
    return csgi::Response::error(404);
  };
}

}  // namespace

CSGI_APP(make_app)
