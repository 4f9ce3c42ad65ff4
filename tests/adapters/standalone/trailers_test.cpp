// Trailer fields on the standalone server's HTTP/1 side (ADP-17): after the last chunk of a chunked body,
// from a pull stream and from a streaming writer; dropped where HTTP/1 cannot carry them (HTTP/1.0, a
// body framed by Content-Length, HEAD) and for the fields RES-15 forbids. HTTP/2: test_h2.py.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/response.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Headers;
using csgi::Response;

namespace {

struct Running : csgi::standalone_test::LoggedRunning {
  explicit Running(csgi::App app) : LoggedRunning(std::move(app), "trailers") {}
};

/// Sends `requests` on one connection and reads until the server closes it (at most 5 s).
std::string talk(int port, std::string_view requests) {
  bool closed = false;
  return csgi::standalone_test::exchange(port, requests, closed);
}

// Two allowed fields around two that RES-15 forbids (Lint is not in front: the adapter drops them).
const Headers kTrailers{{"grpc-status", "0"}, {"Content-Length", "99"}, {"Set-Cookie", "a=1"},
                        {"Server-Timing", "db;dur=5"}};
// The exact trailer section that must follow the last chunk.
constexpr std::string_view kSection = "grpc-status: 0\r\nServer-Timing: db;dur=5\r\n";

/// A chunked response split at its parts: the body, the trailer section's field lines, and whether the
/// bytes end right after the section's empty line ("" body when the framing is broken).
struct Chunked {
  std::string body, trailers;
  bool exact = false;
};

Chunked dechunk(const std::string& response) {
  Chunked c;
  std::size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return c;
  at += 4;
  for (;;) {
    std::size_t eol = response.find("\r\n", at);
    if (eol == std::string::npos) return {};
    std::size_t size = std::stoul(response.substr(at, eol - at), nullptr, 16);
    at = eol + 2;
    if (size == 0) break;
    if (response.compare(at + size, 2, "\r\n") != 0) return {};
    c.body += response.substr(at, size);
    at += size + 2;
  }
  std::size_t end = response.find("\r\n\r\n", at - 2);
  if (end == std::string::npos) return {};
  c.trailers = response.substr(at, end + 2 - at);
  c.exact = end + 4 == response.size();
  return c;
}

/// /stream: a pull stream "ab", "cd" with kTrailers; /writer: the same through a writer on another thread;
/// /early: a writer written, given its trailers and closed in the delayed callable itself; /next: "next".
/// `length` adds a Content-Length to the stream and writer responses.
csgi::App trailer_app(bool length = false) {
  return [length](Env& env) -> Response {
    std::string_view path = env.get("PATH_INFO");
    if (path == "/next") return Response::text(200, "next");
    Headers head{{"Content-Type", "text/plain"}, {"Trailer", "grpc-status, Server-Timing"}};
    if (length) head.add("Content-Length", "4");
    if (path == "/stream") {
      Response r{200, head, std::string()};
      r.body = csgi::make_stream([n = 0]() mutable -> std::optional<std::string> {
        if (n == 2) return std::nullopt;
        return n++ == 0 ? "ab" : "cd";
      }, {}, [] { return kTrailers; });
      return r;
    }
    bool early = path == "/early";
    return Response::delayed([head, early](csgi::Responder rs) {
      auto w = rs.start(200, head);
      auto body = [w] {
        w->write("ab");
        w->write("cd");
        w->set_trailers(kTrailers);
        w->close();
      };
      if (early) body();
      else std::thread([body] {
        std::this_thread::sleep_for(20ms);
        body();
      }).detach();
    });
  };
}

std::string get(std::string_view path, std::string_view version = "HTTP/1.1", std::string_view method = "GET") {
  return std::string(method) + " " + std::string(path) + " " + std::string(version) + "\r\nHost: t\r\n\r\n";
}

bool ends_with(const std::string& s, std::string_view tail) { return s.size() >= tail.size() && s.ends_with(tail); }

}  // namespace

TEST_CASE("standalone: a stream's trailers follow its last chunk on HTTP/1.1 (ADP-17)", "[ADP-17][RES-15]") {
  Running run(trailer_app());
  // Pipelined behind a request that follows it: the trailer section ends the first response exactly.
  std::string got = talk(run.port, get("/stream") + "GET /next HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  auto second = got.find("HTTP/1.1 200 OK", 1);
  REQUIRE(second != std::string::npos);
  std::string first = got.substr(0, second);
  CHECK(first.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(first.find("Trailer: grpc-status, Server-Timing\r\n") != std::string::npos);
  Chunked c = dechunk(first);
  CHECK(c.body == "abcd");
  CHECK(c.trailers == kSection);
  CHECK(c.exact);
  CHECK(ends_with(got, "\r\n\r\nnext"));
  CHECK(got.find("a=1") == std::string::npos);
  CHECK(got.find("99") == std::string::npos);
}

TEST_CASE("standalone: a writer's trailers follow its last chunk on HTTP/1.1 (ADP-17)", "[ADP-17][RES-15]") {
  Running run(trailer_app());
  for (std::string_view path : {"/writer", "/early"}) {
    INFO(path);
    std::string got = talk(run.port, get(path) + "GET /next HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    auto second = got.find("HTTP/1.1 200 OK", 1);
    REQUIRE(second != std::string::npos);
    std::string first = got.substr(0, second);
    CHECK(first.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
    Chunked c = dechunk(first);
    CHECK(c.body == "abcd");
    CHECK(c.trailers == kSection);
    CHECK(c.exact);
    CHECK(ends_with(got, "\r\n\r\nnext"));
  }
}

TEST_CASE("standalone: no trailers on HTTP/1.0, HEAD or a Content-Length body (ADP-17)", "[ADP-17]") {
  Running run(trailer_app());
  for (std::string_view path : {"/stream", "/writer", "/early"}) {
    INFO(path);
    std::string old = talk(run.port, get(path, "HTTP/1.0"));
    CHECK(old.find("Transfer-Encoding") == std::string::npos);
    CHECK(ends_with(old, "\r\n\r\nabcd"));
    CHECK(old.find("grpc-status: 0") == std::string::npos);
    std::string head = talk(run.port, get(path, "HTTP/1.1", "HEAD") + get("/next", "HTTP/1.0"));
    CHECK(head.find("grpc-status: 0") == std::string::npos);
    CHECK(head.find("ab") == std::string::npos);
    CHECK(ends_with(head, "\r\n\r\nnext"));
  }
  Running counted(trailer_app(true));
  for (std::string_view path : {"/stream", "/writer", "/early"}) {
    INFO(path);
    std::string got = talk(counted.port, get(path) + get("/next", "HTTP/1.0"));
    CHECK(got.find("Content-Length: 4\r\n") != std::string::npos);
    CHECK(got.find("\r\n\r\nabcdHTTP/1.1 200 OK") != std::string::npos);
    CHECK(got.find("grpc-status: 0") == std::string::npos);
  }
}

TEST_CASE("standalone: an empty stream with trailers is an empty chunked body with them on HTTP/1.1 (ADP-17)",
          "[ADP-17][RES-15]") {
  auto app = [](Env&) {
    Response r{200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status, Server-Timing"}}, std::string()};
    r.body = csgi::make_stream([]() -> std::optional<std::string> { return std::nullopt; }, {}, [] { return kTrailers; });
    return r;
  };
  for (unsigned threads : {csgi::standalone_test::app_inline, 2u}) {
    INFO(threads);
    csgi::standalone::ServerOptions opt;
    opt.app_threads = threads;
    csgi::standalone_test::Running run(app, opt);
    std::string got = talk(run.port, get("/") + "GET / HTTP/1.0\r\nHost: t\r\n\r\n");
    auto second = got.find("HTTP/1.1 200 OK", 1);
    REQUIRE(second != std::string::npos);
    std::string first = got.substr(0, second);
    CHECK(first.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
    Chunked c = dechunk(first);
    CHECK(c.body.empty());
    CHECK(c.trailers == kSection);
    CHECK(c.exact);
    std::string old = got.substr(second);
    CHECK(old.find("Content-Length: 0\r\n") != std::string::npos);
    CHECK(old.find("grpc-status: 0") == std::string::npos);
  }
}

TEST_CASE("standalone: a stream whose trailers() throws ends its body without them (ADP-17)", "[ADP-17]") {
  Running run([](Env&) {
    Response r = Response::text(200, "");
    r.body = csgi::make_stream([n = 0]() mutable -> std::optional<std::string> {
      if (n++ == 1) return std::nullopt;
      return std::string("ab");
    }, {}, []() -> Headers { throw std::runtime_error("no trailers today"); });
    return r;
  });
  std::string got = talk(run.port, get("/") + get("/", "HTTP/1.0"));
  CHECK(got.find("2\r\nab\r\n0\r\n\r\nHTTP/1.1 200 OK") != std::string::npos);
  CHECK(run.errors().find("trailers() threw; the body ends without them: no trailers today") != std::string::npos);
}
