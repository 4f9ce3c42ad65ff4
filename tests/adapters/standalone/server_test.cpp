#include "csgi/adapters/standalone/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "csgi/core/extensions.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "running.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/middleware/server_status.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;
using csgi::standalone_test::Running;
using csgi::standalone_test::connect_tcp;
using csgi::standalone_test::recv_until;
using csgi::standalone_test::send_all;

namespace {

bool peer_closed(int fd, std::chrono::milliseconds timeout = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) return true;
  }
}

std::string get(int port, std::string_view path, std::string_view extra = "") {
  int fd = connect_tcp(port);
  send_all(fd, "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + std::string(extra) + "\r\n");
  std::string r = recv_until(fd, "\x01");
  ::close(fd);
  return r;
}

}  // namespace

TEST_CASE("standalone: serves a request and stops gracefully with run() returning 0") {
  auto run = std::make_unique<Running>([](Env&) { return Response::text(200, "hi"); }, csgi::standalone::ServerOptions{});
  std::string r = get(run->port, "/");
  CHECK(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(r.find("\r\n\r\nhi") != std::string::npos);
  run->server.stop();
  run->thread.join();
  CHECK(run->result.get() == 0);
}

TEST_CASE("standalone: Writer::write returns false once the client has gone") {
  std::promise<bool> write_failed;
  auto fut = write_failed.get_future();
  auto app = [&](Env&) {
    return Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      std::thread([w, &write_failed] {
        std::string chunk(16384, 'x');
        bool failed = false;
        for (int i = 0; i < 2000 && !failed; ++i) {  // at most ~10 s
          failed = !w->write(chunk);
          std::this_thread::sleep_for(5ms);
        }
        write_failed.set_value(failed);
        w->close();
      }).detach();
    });
  };
  Running run(app, {});
  int fd = connect_tcp(run.port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(recv_until(fd, "\r\n\r\n").find("200 OK") != std::string::npos);
  ::close(fd);
  REQUIRE(fut.wait_for(15s) == std::future_status::ready);
  CHECK(fut.get());
  // And the connection is closed then, not kept until a timeout (send or graceful, 10 s and more).
  auto& stats = run.server.stats();
  for (int i = 0; i < 250 && stats.snapshot().connections_open > 0; ++i) std::this_thread::sleep_for(20ms);
  CHECK(stats.snapshot().connections_open == 0);
}

TEST_CASE("standalone: two servers in one process each show their own counts on their status pages", "[EXT-7]") {
  auto make = [] {
    return csgi::App(csgi::mw::ServerStatus([](Env&) { return Response::text(200, "hi"); }));
  };
  Running a(make(), {});
  Running b(make(), {});
  for (int i = 0; i < 3; ++i) CHECK(get(a.port, "/").find("\r\n\r\nhi") != std::string::npos);
  CHECK(get(b.port, "/missing").find("\r\n\r\nhi") != std::string::npos);
  // Each page counts its own server's requests before it: 3 on a, 1 on b (the adapter records each
  // response once it is written, so the page's own request is not among them).
  std::string pa = get(a.port, "/server-status?auto");
  std::string pb = get(b.port, "/server-status?auto");
  CHECK(pa.find("Total Accesses: 3\n") != std::string::npos);
  CHECK(pb.find("Total Accesses: 1\n") != std::string::npos);
  CHECK(pa.find("ConnsTotal: 4\n") != std::string::npos);
  CHECK(pb.find("ConnsTotal: 2\n") != std::string::npos);
  CHECK(a.server.stats().snapshot().adapter == "standalone");
  CHECK(&a.server.stats() != &b.server.stats());
  // The app sees its own server's counters in the env (EXT-7).
  std::atomic<const csgi::ServerStats*> seen{nullptr};
  Running c([&seen](Env& env) {
    seen = env.object<csgi::ServerStats>(csgi::keys::x::server_stats);
    return Response::text(200, "ok");
  }, {});
  get(c.port, "/");
  CHECK(seen.load() == &c.server.stats());
}

TEST_CASE("standalone: a responder dropped unanswered gives 500") {
  Running run([](Env&) { return Response::delayed([](csgi::Responder) {}); }, {});
  CHECK(get(run.port, "/").rfind("HTTP/1.1 500", 0) == 0);
}

TEST_CASE("standalone: an HttpError is answered as problem+json to a JSON client; a 5xx keeps its message in the log",
          "[ADP-5][ADP-6]") {
  Running run([](Env& env) -> Response {
    if (env.get(csgi::keys::PATH_INFO) == "/db") throw csgi::HttpError(503, "db down at 10.0.0.5");
    throw csgi::BadRequest("no such field");
  }, {});
  std::string text = get(run.port, "/x");
  CHECK(text.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(text.find("Content-Type: text/plain") != std::string::npos);
  CHECK(text.find("no such field") != std::string::npos);
  std::string json = get(run.port, "/x", "Accept: application/json\r\n");
  CHECK(json.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(json.find("Content-Type: application/problem+json") != std::string::npos);
  CHECK(json.find("\"detail\":\"no such field\"") != std::string::npos);
  std::string db = get(run.port, "/db", "Accept: application/json\r\n");
  CHECK(db.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(db.find("\"status\":503") != std::string::npos);
  CHECK(db.find("10.0.0.5") == std::string::npos);
}

TEST_CASE("standalone: writes that outrun the writer's start are framed (chunked) like the rest") {
  // The delayed callable runs on the io thread, so these writes and the close all happen before the
  // posted start: the bytes must still go out as chunks, and the terminating chunk must follow.
  Running run(
      [](Env&) {
        return Response::delayed([](csgi::Responder r) {
          auto w = r.start(200, {{"Content-Type", "text/plain"}});
          w->write("one ");
          w->write("two");
          w->close();
        });
      },
      [] {
        csgi::standalone::ServerOptions opt;
        opt.app_threads = csgi::standalone_test::app_inline;  // the callable on the io thread
        return opt;
      }());
  int fd = connect_tcp(run.port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string r = recv_until(fd, "\x01");
  ::close(fd);
  auto first = r.find("Transfer-Encoding: chunked\r\n");
  REQUIRE(first != std::string::npos);
  std::string framed = "\r\n\r\n7\r\none two\r\n0\r\n\r\n";
  auto body = r.find(framed);
  REQUIRE(body != std::string::npos);
  // The second (pipelined) response follows the first's terminating chunk, framed the same way.
  CHECK(r.compare(body + framed.size(), 15, "HTTP/1.1 200 OK") == 0);
  CHECK(r.find(framed, body + framed.size()) != std::string::npos);
}

TEST_CASE("standalone: a 103 sent from another thread while a delayed response waits goes out before it") {
  std::vector<std::thread> answering;
  std::mutex mu;
  {
    Running run(
        [&](Env& env) {
          auto* info = env.object<csgi::Informational>(csgi::keys::x::informational);
          return Response::delayed([&, info](csgi::Responder r) {
            std::lock_guard lock(mu);
            // The thread of a language host answering the request: neither an io nor a pool thread.
            answering.emplace_back([info, r = std::move(r)]() mutable {
              bool sent = info->send(103, csgi::Headers{{"Link", "</a.css>; rel=preload"}});
              r.respond(Response::text(200, sent ? "sent" : "not sent"));
            });
          });
        },
        {});
    std::string r = get(run.port, "/");
    CHECK(r.rfind("HTTP/1.1 103", 0) == 0);
    CHECK(r.find("Link: </a.css>") != std::string::npos);
    CHECK(r.find("\r\n\r\nsent") != std::string::npos);
    std::lock_guard lock(mu);
    for (auto& t : answering) t.join();
  }
}

TEST_CASE("standalone: csgix.io taken from another thread while a delayed response waits") {
  std::vector<std::thread> answering;
  std::mutex mu;
  {
    Running run(
        [&](Env& env) {
          auto* io = env[csgi::keys::PATH_INFO] == "/take" ? env.object<csgi::Hijack>(csgi::keys::x::io) : nullptr;
          return Response::delayed([&, io](csgi::Responder r) {
            std::lock_guard lock(mu);
            // A language host's thread: it takes the socket and speaks its own protocol on it.
            answering.emplace_back([io, r = std::move(r)]() mutable {
              std::string pending;
              int fd = io ? io->take(pending) : -1;
              if (fd >= 0) {
                send_all(fd, "taken; pending=" + pending + "\n");
                std::string more = recv_until(fd, "\n");
                send_all(fd, "echo " + more);
                ::close(fd);
              }
              r.respond(Response::text(200, "ignored"));  // after a take the adapter ignores it
            });
          });
        },
        {});
    int fd = connect_tcp(run.port);
    send_all(fd, "GET /take HTTP/1.1\r\nHost: t\r\n\r\nearly");
    CHECK(recv_until(fd, "\n") == "taken; pending=early\n");
    send_all(fd, "ping\n");
    CHECK(recv_until(fd, "\x01") == "echo ping\n");
    ::close(fd);
    CHECK(get(run.port, "/").find("\r\n\r\nignored") != std::string::npos);  // the server serves on
    std::lock_guard lock(mu);
    for (auto& t : answering) t.join();
  }
}

TEST_CASE("standalone: a pull stream is closed when the client goes away mid-body") {
  std::promise<void> closed;
  auto fut = closed.get_future();
  std::atomic<bool> once{false};
  auto app = [&](Env&) {
    Response r = Response::text(200, "");
    r.body = csgi::make_stream([] { return std::optional<std::string>(std::string(65536, 'y')); },
                               [&] {
                                 if (!once.exchange(true)) closed.set_value();
                               });
    return r;
  };
  csgi::standalone::ServerOptions opt;
  opt.send_timeout = 2s;
  Running run(app, opt);
  int fd = connect_tcp(run.port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  recv_until(fd, "yyyy");
  ::close(fd);
  CHECK(fut.wait_for(10s) == std::future_status::ready);
}

TEST_CASE("standalone: an exception from a stream ends the connection and close() still runs") {
  std::atomic<bool> closed{false};
  auto app = [&](Env&) {
    Response r = Response::text(200, "");
    int n = 0;
    r.body = csgi::make_stream(
        [n]() mutable -> std::optional<std::string> {
          if (n++ == 0) return std::string("first");
          throw std::runtime_error("stream broke");
        },
        [&] { closed = true; });
    return r;
  };
  Running run(app, {});
  int fd = connect_tcp(run.port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string got = recv_until(fd, "\x01");  // until close
  ::close(fd);
  CHECK(got.find("first") != std::string::npos);
  CHECK(got.find("0\r\n\r\n") == std::string::npos);  // no clean end: the client sees a truncated body
  CHECK(closed);
}

TEST_CASE("standalone: max_connections pauses accepting and resumes when one closes") {
  csgi::standalone::ServerOptions opt;
  opt.max_connections = 2;
  Running run([](Env&) { return Response::text(200, "ok"); }, opt);
  int a = connect_tcp(run.port), b = connect_tcp(run.port);
  for (int fd : {a, b}) {
    send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    REQUIRE(recv_until(fd, "ok").find("ok") != std::string::npos);
  }
  int c = connect_tcp(run.port);  // queued by the kernel, not accepted
  send_all(c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(recv_until(c, "ok", 300ms).empty());
  ::close(a);
  CHECK(recv_until(c, "ok").find("ok") != std::string::npos);
  ::close(b);
  ::close(c);
}

TEST_CASE("standalone: graceful stop finishes the request in flight, then refuses new ones") {
  std::promise<void> entered;
  auto entered_f = entered.get_future();
  auto app = [&](Env&) {
    entered.set_value();
    std::this_thread::sleep_for(300ms);
    return Response::text(200, "finished");
  };
  auto run = std::make_unique<Running>(app, csgi::standalone::ServerOptions{});
  int fd = connect_tcp(run->port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  REQUIRE(entered_f.wait_for(5s) == std::future_status::ready);
  run->server.stop();
  std::string got = recv_until(fd, "finished");
  CHECK(got.find("finished") != std::string::npos);
  CHECK(got.find("Connection: close") != std::string::npos);
  CHECK(peer_closed(fd));
  ::close(fd);
  run->thread.join();
  CHECK(run->result.get() == 0);
}

TEST_CASE("standalone: a slow request body gets 408 after body_timeout") {
  csgi::standalone::ServerOptions opt;
  opt.body_timeout = 300ms;
  Running run([](Env& env) { return Response::text(200, env.input().read_all()); }, opt);
  int fd = connect_tcp(run.port);
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab");
  std::string got = recv_until(fd, "\x01");
  CHECK(got.rfind("HTTP/1.1 408", 0) == 0);
  ::close(fd);
}

TEST_CASE("standalone: a slow request body does not stall the other connections of its io thread") {
  // One io thread. The body (100 KB: bigger than the connection's buffer, within --body-buffer-bytes)
  // is read before the app runs, so while its client stalls, another client is answered at once
  // (an app reading it would block the thread until body_timeout, 20 s here).
  csgi::standalone::ServerOptions opt;
  opt.body_timeout = 20s;
  Running run([](Env& env) { return Response::text(200, "read " + std::to_string(env.input().read_all().size())); },
              opt);
  int slow = connect_tcp(run.port);
  send_all(slow, "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + std::string(30000, 'b'));
  std::this_thread::sleep_for(100ms);
  std::string other = get(run.port, "/other");  // reads until the server closes (Connection: close), ≤ 5 s
  CHECK(other.find("\r\n\r\nread 0") != std::string::npos);
  // The stalled body still arrives whole once its client goes on.
  send_all(slow, std::string(70000, 'b'));
  CHECK(recv_until(slow, "read 100000").find("read 100000") != std::string::npos);
  ::close(slow);
}

TEST_CASE("standalone: a body over body_buffer_bytes sent in pieces reaches the app whole") {
  csgi::standalone::ServerOptions opt;
  opt.body_buffer_bytes = 10000;
  Running run([&](Env& env) { return Response::text(200, "read " + std::to_string(env.input().read_all().size())); },
              opt);
  int fd = connect_tcp(run.port);
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n" + std::string(1000, 'c'));
  std::this_thread::sleep_for(50ms);
  send_all(fd, std::string(49000, 'c'));
  CHECK(recv_until(fd, "read 50000").find("read 50000") != std::string::npos);
  ::close(fd);
}

TEST_CASE("standalone: a large body reaches the app whole, through its temporary file") {
  Running run([](Env& env) { return Response::text(200, std::to_string(env.input().read_all().size())); }, {});
  int fd = connect_tcp(run.port);
  std::string body(3 * 1024 * 1024, 'z');
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  std::thread sender([&] { send_all(fd, body); });
  std::string got = recv_until(fd, "3145728");
  sender.join();
  CHECK(got.find("\r\n\r\n3145728") != std::string::npos);
  ::close(fd);
}

TEST_CASE("standalone: listens on a unix socket") {
  std::string path = "/tmp/csgi-standalone-test-" + std::to_string(::getpid()) + ".sock";
  csgi::standalone::ServerOptions opt;
  opt.listen = {"unix:" + path};
  Running run([](Env& env) { return Response::text(200, std::string(env.get("SERVER_PORT"))); }, opt);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string got = recv_until(fd, "\x01");
  ::close(fd);
  CHECK(got.rfind("HTTP/1.1 200 OK", 0) == 0);
}

TEST_CASE("standalone: script_name mounts the app; other paths get 404") {
  csgi::standalone::ServerOptions opt;
  opt.script_name = "/app";
  Running run([](Env& env) { return Response::text(200, std::string(env.get("SCRIPT_NAME")) + "|" + std::string(env.get("PATH_INFO"))); },
              opt);
  CHECK(get(run.port, "/app/x").find("\r\n\r\n/app|/x") != std::string::npos);
  CHECK(get(run.port, "/other").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(get(run.port, "/application").rfind("HTTP/1.1 404", 0) == 0);
}

namespace {
// The app behind the access_log middleware, writing `path` in the combined format.
csgi::App logged(csgi::App app, const std::string& path) {
  csgi::mw::AccessLogOptions a;
  a.path = path;
  return csgi::wrap<csgi::mw::AccessLog>(std::move(app), a);
}
}  // namespace

TEST_CASE("standalone: the access log (middleware) gets one combined-format line per request") {
  std::string log = "/tmp/csgi-standalone-access-" + std::to_string(::getpid()) + ".log";
  ::unlink(log.c_str());
  csgi::standalone::ServerOptions opt;
  {
    Running run(logged([](Env&) { return Response::text(201, "made"); }, log), opt);
    get(run.port, "/thing?x=1", "User-Agent: tester\r\n");
  }
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str().find("\"GET /thing?x=1 HTTP/1.1\" 201 4 \"-\" \"tester\"") != std::string::npos);
  ::unlink(log.c_str());
}

TEST_CASE("standalone: the access log escapes quotes and control bytes of the request line and fields") {
  std::string log = "/tmp/csgi-standalone-escape-" + std::to_string(::getpid()) + ".log";
  ::unlink(log.c_str());
  csgi::standalone::ServerOptions opt;
  {
    Running run(logged([](Env&) { return Response::text(200, "ok"); }, log), opt);
    get(run.port, "/a\"b", "User-Agent: x\" 999 \"forged\tz\\\r\nReferer: r\xc3\xa9\xff\r\n");
  }
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  INFO(ss.str());
  CHECK(ss.str().find(R"("GET /a\x22b HTTP/1.1" 200 2 "r\xC3\xA9\xFF" "x\x22 999 \x22forged\x09z\x5C")") != std::string::npos);
  CHECK(ss.str().find("\"forged") == std::string::npos);
  ::unlink(log.c_str());
}

namespace {

// Reads the head and about 100 KB of `path`'s body, then resets the connection.
void read_a_little_then_reset(int port, std::string_view path) {
  int fd = connect_tcp(port);
  send_all(fd, "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n\r\n");
  std::size_t got = 0;
  char buf[16384];
  while (got < 100000) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  linger lg{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
}

// The access log's text once it holds `needle` (or after 5 s).
std::string log_with(const std::string& path, std::string_view needle) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string text;
  do {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    if (text.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return text;
}

// The body bytes of the access log line of `request` ("GET /x HTTP/1.1"), or -1.
long long logged_bytes(const std::string& text, std::string_view request) {
  std::string key = "\"" + std::string(request) + "\" 200 ";
  auto at = text.find(key);
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + key.size());
}

}  // namespace

TEST_CASE("standalone: a response cut short by the client still gets its access log line, with the bytes sent (reported to the middleware)") {
  std::string log = "/tmp/csgi-standalone-cut-" + std::to_string(::getpid()) + ".log";
  std::string file = "/tmp/csgi-standalone-cut-" + std::to_string(::getpid()) + ".bin";
  ::unlink(log.c_str());
  constexpr long long file_size = 256ll << 20;
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    REQUIRE(::ftruncate(::fileno(f), file_size) == 0);
    std::fclose(f);
  }
  constexpr long long chunks = 4096, chunk = 65536;
  csgi::standalone::ServerOptions opt;
  Running run(logged([&](Env& env) {
    if (env.get("PATH_INFO") == "/file") return Response{200, {{"Content-Type", "application/octet-stream"}}, csgi::FileBody::open(file)};
    if (env.get("PATH_INFO") != "/stream") return Response::text(200, "hi");
    auto left = std::make_shared<long long>(chunks);
    return Response{200, {{"Content-Type", "application/octet-stream"}},
                    csgi::make_stream([left]() -> std::optional<std::string> {
                      if ((*left)-- <= 0) return std::nullopt;
                      return std::string(chunk, 'x');
                    })};
  }, log), opt);

  read_a_little_then_reset(run.port, "/stream");
  std::string text = log_with(log, "\"GET /stream HTTP/1.1\" 200 ");
  long long streamed = logged_bytes(text, "GET /stream HTTP/1.1");
  CHECK(streamed >= 100000);
  CHECK(streamed < chunks * chunk);

  read_a_little_then_reset(run.port, "/file");
  text = log_with(log, "\"GET /file HTTP/1.1\" 200 ");
  long long sent = logged_bytes(text, "GET /file HTTP/1.1");
  CHECK(sent >= 100000 - 1000);
  CHECK(sent < file_size);

  // The server goes on serving, and counts those connections closed.
  CHECK(get(run.port, "/hi").find("\r\n\r\nhi") != std::string::npos);
  auto& stats = run.server.stats();
  for (int i = 0; i < 250 && stats.snapshot().connections_open > 0; ++i) std::this_thread::sleep_for(20ms);
  CHECK(stats.snapshot().connections_open == 0);
  ::unlink(log.c_str());
  ::unlink(file.c_str());
}

TEST_CASE("standalone: a response header with CR/LF is dropped, not sent (no response splitting)") {
  Running run([](Env&) {
    Response r = Response::text(200, "ok");
    r.headers.add("X-Evil", "a\r\nSet-Cookie: x=1");
    return r;
  }, {});
  std::string got = get(run.port, "/");
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.find("Set-Cookie") == std::string::npos);
}

TEST_CASE("standalone: repeated Cookie fields reach the app joined with \"; \"", "[ENV-9]") {
  Running run([](Env& env) { return Response::text(200, "[" + std::string(env.get(csgi::keys::HTTP_COOKIE)) + "]"); }, {});
  std::string got = get(run.port, "/", "Cookie: x=a,__Host-sid=evil\r\nCookie: __Host-sid=real\r\n");
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.find("\r\n\r\n[x=a,__Host-sid=evil; __Host-sid=real]") != std::string::npos);
}

TEST_CASE("standalone: options are checked") {
  csgi::standalone::ServerOptions opt;
  opt.script_name = "/bad/";
  CHECK_THROWS_AS(csgi::standalone::Server([](Env&) { return Response::text(200, ""); }, opt), std::invalid_argument);
  CHECK_THROWS_AS(csgi::standalone::Server(csgi::App{}, {}), std::invalid_argument);
}
