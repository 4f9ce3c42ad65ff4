// A sealed header list (Headers::seal) goes out as the block it was sealed into when it can, and field by
// field (framing fields dropped, bad fields logged and dropped) when it cannot: the wire is the same as
// for the ordinary list, the order of the app's fields kept.
#include <catch2/catch.hpp>

#include <string>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/response.hpp"
#include "running.hpp"

using csgi::Env;
using csgi::Headers;
using csgi::Response;

namespace {

struct Running : csgi::standalone_test::LoggedRunning {
  explicit Running(csgi::App app) : LoggedRunning(std::move(app), "sealed") {}
};

using csgi::standalone_test::exchange;

int count(const std::string& s, std::string_view what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// Answers every request with `body` and a copy of `head`, sealed.
csgi::App sealed_app(Headers head, std::string body) {
  head.seal();
  return [head, body](Env&) {
    Response r;
    r.headers = head;
    r.body = body;
    return r;
  };
}

constexpr std::string_view kTwo =
    "GET /a HTTP/1.1\r\nHost: t\r\n\r\n"
    "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

}  // namespace

TEST_CASE("standalone: a sealed list goes out whole, one Content-Length, Date added (RES-3, ADP-12)") {
  Running run(sealed_app({{"Content-Length", "5"}, {"Content-Type", "text/plain"}, {"Set-Cookie", "a=1"},
                          {"Set-Cookie", "b=2"}},
                         "hello"));
  bool closed = false;
  std::string got = exchange(run.port, kTwo, closed);
  CHECK(count(got, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\n"
                   "Set-Cookie: b=2\r\nDate: ") == 2);
  CHECK(count(got, "Content-Length") == 2);
  CHECK(count(got, "\r\n\r\nhello") == 2);
  CHECK(got.find("Connection: close\r\n") != std::string::npos);  // the second asked for it
  CHECK(closed);
  CHECK(run.errors().empty());
}

TEST_CASE("standalone: a sealed list whose Content-Length differs from the body is framed by the body (ADP-13)") {
  Running run(sealed_app({{"Content-Type", "text/plain"}, {"Content-Length", "100"}}, "hello"));
  bool closed = false;
  std::string got = exchange(run.port, kTwo, closed);
  CHECK(count(got, "Content-Length: 5\r\n") == 2);
  CHECK(got.find("Content-Length: 100") == std::string::npos);
  CHECK(got.find("\r\n\r\nhelloHTTP/1.1 200") != std::string::npos);
  CHECK(run.errors().find("Content-Length (100) differs from its body's length (5)") != std::string::npos);
}

TEST_CASE("standalone: a sealed list with framing or bad fields is sent field by field (ADP-1, RES-4)") {
  Running run(sealed_app({{"Content-Type", "text/plain"}, {"Connection", "close"}, {"Transfer-Encoding", "gzip"},
                          {"X-Bad", "a\r\nInjected: 1"}, {"X-Good", "1"}},
                         "hello"));
  bool closed = false;
  std::string got = exchange(run.port, kTwo, closed);
  CHECK(count(got, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Good: 1\r\nDate: ") == 2);
  CHECK(got.find("Injected") == std::string::npos);
  CHECK(got.find("Transfer-Encoding") == std::string::npos);
  CHECK(count(got, "Connection: close") == 1);  // the server's own, for the second request only
  CHECK(count(got, "\r\n\r\nhello") == 2);
  CHECK(run.errors().find("response header \"X-Bad\"") != std::string::npos);
}

TEST_CASE("standalone: HEAD with a sealed list keeps its Content-Length, no body (ADP-2)") {
  Running run([](Env& env) {
    Headers h{{"Content-Length", "1024"}, {"Content-Type", "text/plain"}};
    h.seal();
    Response r;
    r.headers = h;
    r.body = env.get("REQUEST_METHOD") == "HEAD" ? std::string() : std::string(1024, 'x');
    return r;
  });
  bool closed = false;
  std::string got = exchange(run.port,
                             "HEAD /a HTTP/1.1\r\nHost: t\r\n\r\n"
                             "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                             closed);
  CHECK(count(got, "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\nContent-Type: text/plain\r\nDate: ") == 2);
  CHECK(got.ends_with("\r\n\r\n" + std::string(1024, 'x')));
  CHECK(count(got, std::string(1024, 'x')) == 1);
  CHECK(run.errors().empty());
}
