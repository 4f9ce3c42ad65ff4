// HTTP/1 response framing as bytes, without a socket (RFC 9112): the head the connection writes for a
// response, a chunk, the last chunk with its trailers.
#include "csgi/adapters/standalone/detail/http1/framing.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace csgi;
using namespace csgi::standalone::detail;

namespace {

struct Errors final : ErrorStream {
  std::string text;
  void write(std::string_view m) override { text.append(m).append("\n"); }
};

// The head without its Date line (the one line that changes with the clock).
std::string without_date(std::string head) {
  auto at = head.find("Date: ");
  if (at != std::string::npos) head.erase(at, head.find("\r\n", at) + 2 - at);
  return head;
}

constexpr std::string_view ok = "HTTP/1.1 200 OK\r\n";

}  // namespace

TEST_CASE("http1 framing: a head with a length, the app's framing fields replaced by the server's (ADP-1)") {
  Errors errors;
  std::string out;
  Headers h{{"Content-Type", "text/plain"}, {"Content-Length", "99"}, {"Transfer-Encoding", "gzip"},
            {"Connection", "upgrade"}, {"Keep-Alive", "timeout=5"}};
  append_head(out, ok, h, 5, false, Persistence::keep, errors);
  CHECK(without_date(out) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n");
  CHECK(out.find("\r\nDate: ") != std::string::npos);
  CHECK(errors.text.empty());
}

TEST_CASE("http1 framing: chunked, close, HTTP/1.0 keep-alive, and a Date the app gave") {
  Errors errors;
  std::string a, b, c;
  append_head(a, ok, Headers{}, std::nullopt, true, Persistence::close, errors);
  CHECK(without_date(a) == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  append_head(b, ok, Headers{{"Date", "Thu, 01 Jan 1970 00:00:00 GMT"}}, 0, false, Persistence::keep_http10, errors);
  CHECK(b == "HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nContent-Length: 0\r\n"
             "Connection: keep-alive\r\n\r\n");
  // A 101 keeps the app's Connection and Upgrade fields and adds no framing.
  append_head(c, "HTTP/1.1 101 Switching Protocols\r\n", Headers{{"Connection", "Upgrade"}, {"Upgrade", "x"}},
              std::nullopt, false, Persistence::upgrade, errors);
  CHECK(without_date(c) == "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n");
}

TEST_CASE("http1 framing: a field with a bad name or a control character is dropped and reported") {
  Errors errors;
  std::string out;
  append_head(out, ok, Headers{{"Bad Name", "x"}, {"X-Split", "a\r\nInjected: yes"}, {"X-Good", "fine"}}, 0, false,
              Persistence::keep, errors);
  CHECK(without_date(out) == "HTTP/1.1 200 OK\r\nX-Good: fine\r\nContent-Length: 0\r\n\r\n");
  CHECK(errors.text.find("response header \"Bad Name\" has a bad name or control characters; dropped") !=
        std::string::npos);
  CHECK(errors.text.find("\"X-Split\"") != std::string::npos);
}

TEST_CASE("http1 framing: a sealed header list goes out as its checked bytes") {
  Errors errors;
  Headers h{{"Content-Type", "text/html"}, {"Content-Length", "3"}};
  h.seal();
  std::string out;
  append_head(out, ok, h, 3, false, Persistence::keep, errors);
  CHECK(without_date(out) == "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 3\r\n\r\n");
}

TEST_CASE("http1 framing: a chunk, and the last chunk with the sendable trailers (ADP-17)") {
  std::string out;
  append_body(out, "hello, world", true);
  CHECK(out == "c\r\nhello, world\r\n");
  out.clear();
  append_body(out, "raw", false);
  CHECK(out == "raw");
  out.clear();
  append_last_chunk(out, Headers{{"Grpc-Status", "0"}, {"Content-Length", "5"}, {"Bad Name", "x"}});
  CHECK(out == "0\r\nGrpc-Status: 0\r\n\r\n");
}
