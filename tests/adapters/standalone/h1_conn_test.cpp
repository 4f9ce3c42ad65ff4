// The HTTP/1 codec (adapters/standalone/detail/http1/h1_conn.hpp) driven in this process: a transport on one
// end of a socketpair, the test's bytes written to the other, the io thread's loop run by the test until
// the answer is there. No listener, no port, no server thread: what goes in and what comes out, byte for byte.
#include "csgi/adapters/standalone/detail/http1/h1_conn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/transport/transport.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request.hpp"
#include "csgi/core/server_stats.hpp"
#include "chunked.hpp"

namespace {

using namespace csgi;
using namespace csgi::standalone;
using namespace csgi::standalone::detail;
using csgi::standalone_test::chunked;

std::uint64_t fnv(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string sum(std::string_view body) {
  return "size=" + std::to_string(body.size()) + " hash=" + std::to_string(fnv(body));
}

// The app: /hello, /echo (the body back), /sum?N (the body's size and hash, read N bytes at a time),
// /stream (two chunks, no length), /env?KEY (an env value).
Response app(Env& env) {
  std::string_view path = env.get(keys::PATH_INFO);
  if (path == "/echo") return Response::text(200, std::string(Request(env).content()));
  if (path == "/sum") {
    std::string piece(std::stoul(std::string(env.get(keys::QUERY_STRING))), '\0'), body;
    auto* in = env.object<Input>(keys::input);
    while (std::size_t n = in->read(piece.data(), piece.size())) body.append(piece, 0, n);
    return Response::text(200, sum(body));
  }
  if (path == "/stream")
    return {200, {{"Content-Type", "text/plain"}}, make_stream([n = 0]() mutable -> std::optional<std::string> {
              if (n == 2) return std::nullopt;
              return std::string(++n == 1 ? "one," : "two");
            })};
  if (path == "/env") return Response::text(200, std::string(env.get(env.get(keys::QUERY_STRING))));
  return Response::text(200, "Hello");
}

// One connection of a server that is only its shared state and an io thread whose loop the test runs.
class Harness {
 public:
  explicit Harness(ServerOptions opt = {}) : t_(sh_, 0) {
    sh_.configure(app, opt, stats_);
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    peer_ = fds[1];
    ::fcntl(peer_, F_SETFL, O_NONBLOCK);
    listener_.tcp = false;
    listener_.display = "unix:test";
    start_connection(t_, Socket(t_.ioc, Protocol(AF_UNIX, 0), fds[0]), listener_);
  }
  ~Harness() {
    ::close(peer_);
    t_.ioc.poll();
  }

  void send(std::string_view bytes) {
    REQUIRE(::write(peer_, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  /// Writes `bytes` as the socket takes them, running the loop meanwhile (at most ~5 s of waits); what
  /// comes out is kept for until().
  void send_all(std::string_view bytes) {
    for (int i = 0; i < 5000 && !bytes.empty() && !eof_; ++i) {
      ssize_t w = ::write(peer_, bytes.data(), bytes.size());
      if (w > 0) bytes.remove_prefix(static_cast<std::size_t>(w));
      else t_.ioc.run_one_for(std::chrono::milliseconds(1));
      drain();
    }
    REQUIRE(bytes.empty());
  }
  /// Runs the loop until `done(what came out)` or the connection closed (at most ~5 s); returns what came.
  std::string until(const std::function<bool(const std::string&)>& done) {
    for (int i = 0; i < 500 && !done(out_) && !eof_; ++i) {
      handlers_ += t_.ioc.run_one_for(std::chrono::milliseconds(10));
      drain();
    }
    return take();
  }
  /// How many handlers until() has run: each read of the connection is one.
  std::size_t handlers() const { return handlers_; }
  /// The bytes of request bodies the server holds in memory.
  std::uint64_t body_memory() const { return sh_.body_limits.memory->used(); }
  std::string responses(std::size_t n) {
    return until([n](const std::string& s) { return complete(s) >= n; });
  }
  bool closed() {
    until([](const std::string&) { return false; });
    return eof_;
  }

  /// How many whole responses `s` holds (Content-Length or chunked framing, 1xx counted).
  static std::size_t complete(std::string_view s) {
    std::size_t n = 0;
    while (true) {
      auto head_end = s.find("\r\n\r\n");
      if (head_end == std::string_view::npos) return n;
      std::string_view head = s.substr(0, head_end);
      s.remove_prefix(head_end + 4);
      if (auto cl = head.find("\r\nContent-Length: "); cl != std::string_view::npos) {
        std::size_t len = std::stoul(std::string(head.substr(cl + 18)));
        if (s.size() < len) return n;
        s.remove_prefix(len);
      } else if (head.find("\r\nTransfer-Encoding: chunked") != std::string_view::npos) {
        auto end = s.find("\r\n0\r\n\r\n");
        if (s.substr(0, 5) == "0\r\n\r\n")
          end = 0;
        else if (end == std::string_view::npos)
          return n;
        else
          end += 2;
        s.remove_prefix(end + 5);
      }
      ++n;
    }
  }

 private:
  void drain() {
    char buf[4096];
    while (true) {
      ssize_t r = ::read(peer_, buf, sizeof buf);
      if (r > 0) out_.append(buf, static_cast<std::size_t>(r));
      if (r == 0) eof_ = true;
      if (r <= 0) return;
    }
  }
  std::string take() {
    std::string s;
    s.swap(out_);
    return s;
  }

  ServerStats stats_;
  Shared sh_;
  IoThread t_;
  ListenSocket listener_;
  int peer_ = -1;
  std::string out_;
  bool eof_ = false;
  std::size_t handlers_ = 0;
};

// The response's head without its Date field (which changes each second).
std::string without_date(std::string s) {
  auto d = s.find("\r\nDate: ");
  if (d != std::string::npos) s.erase(d, s.find("\r\n", d + 2) - d);
  return s;
}

}  // namespace

TEST_CASE("h1 codec: a GET is answered byte for byte, and the connection stays open", "[h1]") {
  Harness h;
  h.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(without_date(h.responses(1)) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\nHello");
  h.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(h.responses(1).size() > 0);
}

TEST_CASE("h1 codec: pipelined requests in one write are answered in order", "[h1]") {
  Harness h;
  h.send(
      "GET /env?REQUEST_URI HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
      "GET /env?REQUEST_METHOD HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string out = h.responses(3);
  auto a = out.find("\r\n\r\n/env?REQUEST_URI"), b = out.find("\r\n\r\nabc"), c = out.find("\r\n\r\nGET");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(c != std::string::npos);
  CHECK((a < b && b < c));
}

TEST_CASE("h1 codec: a request arriving a byte at a time is the same request", "[h1]") {
  Harness h;
  std::string req =
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  std::string out;
  for (char c : req) {
    h.send(std::string_view(&c, 1));
    out += h.until([](const std::string&) { return true; });
  }
  out += h.responses(1);
  CHECK(out.substr(out.size() - 26) == "Content-Length: 5\r\n\r\nabcde");
}

TEST_CASE("h1 codec: a body of unknown length goes chunked on HTTP/1.1, close-delimited on HTTP/1.0", "[h1]") {
  {
    Harness h;
    h.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(without_date(h.responses(1)) ==
          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
          "4\r\none,\r\n3\r\ntwo\r\n0\r\n\r\n");
  }
  {
    Harness h;
    h.send("GET /stream HTTP/1.0\r\n\r\n");
    std::string out = h.until([](const std::string&) { return false; });
    CHECK(without_date(out) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\none,two");
    CHECK(h.closed());
  }
}

TEST_CASE("h1 codec: HEAD gets the length and no body; 100-continue comes before the body is read", "[h1]") {
  Harness h;
  h.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string head = h.until([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
  CHECK(without_date(head) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\n");
  h.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  CHECK(h.until([](const std::string& s) { return !s.empty(); }) == "HTTP/1.1 100 Continue\r\n\r\n");
  h.send("hi");
  CHECK(h.responses(1).find("\r\n\r\nhi") != std::string::npos);
}

TEST_CASE("h1 codec: framing in doubt gets a 400 with its reason, then the connection closes", "[h1]") {
  Harness h;
  h.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  std::string out = h.until([](const std::string&) { return false; });
  CHECK(out.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(h.closed());
}

namespace {

std::string pattern(std::size_t n) {
  std::string s(n, 'x');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}


std::string post(std::string_view target, std::string_view body) {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + std::string(body);
}

}  // namespace

TEST_CASE("h1 codec: a 100 KB body already in the socket is read in a few reads, its buffer given back after",
          "[h1][body]") {
  Harness h;
  std::string body = pattern(100 * 1024);
  h.send(post("/sum?65536", body));
  std::size_t before = h.handlers();
  std::string out = h.responses(1);
  CHECK(out.find("\r\n\r\n" + sum(body)) != std::string::npos);
  CHECK(h.handlers() - before <= 4);
  CHECK(h.body_memory() == 0);
}

TEST_CASE("h1 codec: 1 MB bodies by length and chunked reach the app whole, with requests pipelined behind them",
          "[h1][body]") {
  Harness h;
  std::string mb = pattern(1000 * 1000), small = pattern(10000);
  // By length after 100-continue, read by the app 1000 bytes at a time; a GET behind it.
  h.send("POST /sum?1000 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n");
  CHECK(h.until([](const std::string& s) { return !s.empty(); }) == "HTTP/1.1 100 Continue\r\n\r\n");
  h.send_all(mb + "GET /env?REQUEST_URI HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string out = h.responses(2);
  auto a = out.find("\r\n\r\n" + sum(mb)), b = out.find("\r\n\r\n/env?REQUEST_URI");
  REQUIRE(a != std::string::npos);
  CHECK(b > a);
  // Chunked in odd pieces, read 300000 bytes at a time, and in the same bytes a 10 KB body by length (more
  // than the connection's own buffer holds, read behind the chunked body) and a GET.
  h.send_all("POST /sum?300000 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(mb, 9973) +
             post("/sum?7", small) + "GET /env?REQUEST_METHOD HTTP/1.1\r\nHost: t\r\n\r\n");
  out = h.responses(3);
  auto c = out.find("\r\n\r\n" + sum(mb)), d = out.find("\r\n\r\n" + sum(small)), e = out.find("\r\n\r\nGET");
  REQUIRE(c != std::string::npos);
  CHECK(d > c);
  CHECK(e > d);
  CHECK(h.body_memory() == 0);
  // The connection still serves.
  h.send(post("/sum?1", "abc"));
  CHECK(h.responses(1).find("\r\n\r\n" + sum("abc")) != std::string::npos);
}
