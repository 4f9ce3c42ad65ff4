// A request body the app does not read is never parsed as the next request (ADP-9): it is read whole
// before the app runs (up to --max-body-bytes), the connection is kept and a pipelined request behind the
// body is answered, whatever valid chunked form the body takes (RFC 9112 §7.1); past the limit the
// response (413) says Connection: close and nothing after it is served.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;

namespace {

constexpr std::string_view next_request = "GET /next HTTP/1.1\r\nHost: x\r\n\r\n";

/// /next answers "next"; /stream answers a two-chunk pull stream; /delayed "ok" through a Responder;
/// anything else "ok". None reads the body.
Response app(Env& env) {
  auto path = env.get(csgi::keys::PATH_INFO);
  if (path == "/next") return Response::text(200, "next");
  if (path == "/delayed") return Response::delayed([](csgi::Responder r) { r.respond(Response::text(200, "ok")); });
  if (path == "/stream") {
    struct Two : csgi::Stream {
      int n = 0;
      bool next(std::string& out) override {
        if (n++ >= 2) return false;
        out = "part";
        return true;
      }
    };
    return Response{200, {{"Content-Type", "text/plain"}}, csgi::StreamPtr(std::make_shared<Two>())};
  }
  return Response::text(200, "ok");
}

struct Running : csgi::standalone_test::Running {
  explicit Running(csgi::standalone::ServerOptions opt = {}) : csgi::standalone_test::Running(app, std::move(opt)) {}
};

struct Reply {
  std::string bytes;
  bool closed = false;
};

/// Sends each piece as its own write (with a pause between them, so they arrive as separate TCP
/// segments), then reads until the answer to /next is in, the server closes, or 5 s pass.
Reply talk(int port, const std::vector<std::string>& pieces, std::chrono::milliseconds pause = 0ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0 && pause > 0ms) std::this_thread::sleep_for(pause);
    std::string_view s = pieces[i];
    while (!s.empty()) {
      ssize_t w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) break;  // the server closed (a body over the limit)
      s.remove_prefix(static_cast<std::size_t>(w));
    }
  }
  Reply r;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline && r.bytes.find("\r\n\r\nnext") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[8192];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      r.closed = true;
      break;
    }
    r.bytes.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return r;
}

std::size_t responses(const std::string& bytes) {
  std::size_t n = 0;
  for (auto p = bytes.find("HTTP/1.1 "); p != std::string::npos; p = bytes.find("HTTP/1.1 ", p + 1)) ++n;
  return n;
}

std::string chunked_post(std::string_view path = "/noread") {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
}

/// The first response is 200 "ok" without Connection: close, and the pipelined /next is answered.
void require_kept(const Reply& r) {
  INFO(r.bytes);
  CHECK(r.bytes.rfind("HTTP/1.1 200 ", 0) == 0);
  auto first_end = r.bytes.find("\r\n\r\n");
  REQUIRE(first_end != std::string::npos);
  CHECK(r.bytes.substr(0, first_end).find("Connection: close") == std::string::npos);
  CHECK(responses(r.bytes) == 2);
  CHECK(r.bytes.find("\r\n\r\nnext") != std::string::npos);
}

}  // namespace

TEST_CASE("standalone: an unread chunked body in each valid form is discarded; the pipelined request is answered",
          "[standalone][ADP-9]") {
  Running srv;
  std::string body;
  SECTION("a chunk extension") { body = "5;ext=1\r\nhello\r\n0\r\n\r\n"; }
  SECTION("several extensions, one a quoted string") { body = "5;a=1;b=\"x y\";c\r\nhello\r\n0;d=2\r\n\r\n"; }
  SECTION("trailer fields") { body = "5\r\nhello\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n"; }
  SECTION("uppercase hex sizes") { body = "A\r\n0123456789\r\n1F\r\n" + std::string(31, 'x') + "\r\n0\r\n\r\n"; }
  SECTION("lowercase hex sizes") { body = "a\r\n0123456789\r\n1f\r\n" + std::string(31, 'x') + "\r\n0\r\n\r\n"; }
  SECTION("leading zeros") { body = "0005\r\nhello\r\n000\r\n\r\n"; }
  SECTION("several chunks") { body = "1\r\na\r\n2\r\nbc\r\n3\r\ndef\r\n0\r\n\r\n"; }
  SECTION("an empty body") { body = "0\r\n\r\n"; }
  SECTION("a body bigger than the connection's buffer") {
    for (int i = 0; i < 40; ++i) body += "1000\r\n" + std::string(4096, 'b') + "\r\n";
    body += "0\r\n\r\n";
  }
  SECTION("bytes that look like a request, inside a chunk") {
    std::string inner(next_request);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", inner.size());
    body = std::string(size) + "\r\n" + inner + "\r\n0\r\n\r\n";
  }
  Reply r = talk(srv.port, {chunked_post() + body + std::string(next_request)});
  require_kept(r);
}

TEST_CASE("standalone: an unread chunked body split across TCP writes is discarded as it comes",
          "[standalone][ADP-9]") {
  Running srv;
  // Cut inside the chunk size, the extension, the data, the CRLFs and the trailer section.
  Reply r = talk(srv.port,
                 {chunked_post(), "1", "0;e", "xt=1\r", "\n0123456789abcdef", "\r\n3\r\nab", "c\r\n0\r", "\nX-T: 1\r\n",
                  "\r", "\n" + std::string(next_request)},
                 30ms);
  require_kept(r);
}

TEST_CASE("standalone: an unread chunked body under a delayed response is discarded as it comes",
          "[standalone][ADP-9]") {
  Running srv;
  Reply r = talk(srv.port, {chunked_post("/delayed"), "5;e=1\r\nhel", "lo\r\n0\r\n\r\n" + std::string(next_request)}, 30ms);
  require_kept(r);
}

TEST_CASE("standalone: an unread chunked body under a streamed response is discarded after it",
          "[standalone][ADP-9]") {
  Running srv;
  Reply r = talk(srv.port, {chunked_post("/stream") + "5;x=y\r\nhello\r\n0\r\n\r\n" + std::string(next_request)});
  INFO(r.bytes);
  CHECK(responses(r.bytes) == 2);
  CHECK(r.bytes.find("\r\n\r\nnext") != std::string::npos);
}

TEST_CASE("standalone: an unread body is read whole before the app; the requests in its bytes are not served",
          "[standalone][ADP-9]") {
  csgi::standalone::ServerOptions opt;
  opt.body_buffer_bytes = 100;  // past it, the body goes to a temporary file
  Running srv(opt);
  // The body's bytes hold a request: it must not be served.
  std::string data;
  while (data.size() < 5000) data += next_request;
  std::vector<std::string> pieces;
  SECTION("chunked") {
    char size[16];
    std::snprintf(size, sizeof size, "%zX", data.size());
    pieces = {chunked_post() + size + "\r\n" + data + "\r\n0\r\n\r\n" + std::string(next_request)};
  }
  SECTION("chunked, in many small chunks") {
    std::string body;
    for (std::size_t i = 0; i < data.size(); i += 10) {
      std::string piece = data.substr(i, 10);
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      body += size + piece + "\r\n";
    }
    pieces = {chunked_post() + body + "0\r\n\r\n" + std::string(next_request)};
  }
  SECTION("Content-Length") {
    pieces = {"POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(data.size()) + "\r\n\r\n" + data +
              std::string(next_request)};
  }
  require_kept(talk(srv.port, pieces));
}

TEST_CASE("standalone: a body over --max-body-bytes gets 413 and the connection closes", "[standalone][ADP-9]") {
  csgi::standalone::ServerOptions opt;
  opt.max_body_bytes = 1000;
  Running srv(opt);
  std::string data;
  while (data.size() < 5000) data += next_request;
  char size[16];
  std::snprintf(size, sizeof size, "%zX", data.size());
  Reply r = talk(srv.port, {chunked_post() + size + "\r\n" + data + "\r\n0\r\n\r\n" + std::string(next_request)});
  INFO(r.bytes);
  CHECK(r.bytes.rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(r.bytes.find("Connection: close\r\n") != std::string::npos);
  CHECK(responses(r.bytes) == 1);
  CHECK(r.bytes.find("next") == std::string::npos);
  CHECK(r.closed);
}

TEST_CASE("standalone: an unread Content-Length body past --body-buffer-bytes keeps the connection",
          "[standalone][ADP-9]") {
  csgi::standalone::ServerOptions opt;
  opt.body_buffer_bytes = 100;
  Running srv(opt);
  std::string data(20000, 'c');
  Reply r = talk(srv.port, {"POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n" + data.substr(0, 7000),
                            data.substr(7000) + std::string(next_request)},
                 30ms);
  require_kept(r);
}
