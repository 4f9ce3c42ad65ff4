// The standalone server frames a body by the Content-Length the app declared and never past it (ADP-13):
// a stream or writer that runs past its length is cut there, one that falls short ends the connection,
// and a pipelined request behind either never has its response mixed into the first one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/response.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;

namespace {

struct Running : csgi::standalone_test::LoggedRunning {
  explicit Running(csgi::App app) : LoggedRunning(std::move(app), "framing") {}
};

using csgi::standalone_test::connect_tcp;

using csgi::standalone_test::exchange;

constexpr std::string_view kPipelined =
    "GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n";
// What an attacker who controls the bytes past the declared length would like the next response to be.
constexpr std::string_view kForged = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged";

std::string body_of(const std::string& raw) {
  auto at = raw.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : raw.substr(at + 4);
}

int count(const std::string& s, std::string_view what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// The app answers /second with "second"; /first with `first`.
template <class F>
csgi::App app_with(F first) {
  return [first](Env& env) -> Response {
    if (env.get("PATH_INFO") == "/second") return Response::text(200, "second");
    return first();
  };
}

Response stream_of(std::string declared, std::vector<std::string> chunks) {
  Response r = Response::text(200, "");
  r.headers.add("Content-Length", std::move(declared));
  auto i = std::make_shared<std::size_t>(0);
  r.body = csgi::make_stream([i, chunks]() -> std::optional<std::string> {
    if (*i == chunks.size()) return std::nullopt;
    return chunks[(*i)++];
  });
  return r;
}

}  // namespace

TEST_CASE("standalone: a stream past its declared length is cut there; the connection closes (ADP-13)") {
  Running run(app_with([] { return stream_of("5", {"hello", std::string(kForged)}); }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  CHECK(got.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(body_of(got) == "hello");  // nothing past the five bytes, no forged response, no second response
  CHECK(got.find("forged") == std::string::npos);
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
  CHECK(run.errors().find("ran past its Content-Length: declared 5, produced at least 49") != std::string::npos);
  CHECK(run.errors().find("GET /first") != std::string::npos);
}

TEST_CASE("standalone: a first chunk already past the declared length is cut too (ADP-13)") {
  // The generator case: a WSGI app declaring len("héllo wörld!") (12) for its UTF-8 (14 bytes).
  Running run(app_with([] { return stream_of("12", {"h\xc3\xa9llo w\xc3\xb6rld!"}); }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  CHECK(got.find("Content-Length: 12\r\n") != std::string::npos);
  CHECK(body_of(got) == "h\xc3\xa9llo w\xc3\xb6rl");  // 12 of its 14 bytes
  CHECK(closed);
}

TEST_CASE("standalone: a stream short of its declared length ends the connection (ADP-13)") {
  Running run(app_with([] { return stream_of("100", {"hel", "lo"}); }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  CHECK(got.find("Content-Length: 100\r\n") != std::string::npos);
  CHECK(body_of(got) == "hello");  // the second response is not sent into the first one's body
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
  CHECK(run.errors().find("fell short of its Content-Length: declared 100, produced 5") != std::string::npos);
}

TEST_CASE("standalone: a writer past its declared length is cut, write() returns false (ADP-13)") {
  std::promise<std::pair<bool, bool>> results;
  auto fut = results.get_future();
  Running run(app_with([&] {
    return Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "5"}});
      std::thread([w, &results] {
        std::this_thread::sleep_for(20ms);  // after the head went out
        bool a = w->write("hel");
        bool b = w->write(std::string("lo") + std::string(kForged));
        w->close();
        results.set_value({a, b});
      }).detach();
    });
  }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  REQUIRE(fut.wait_for(5s) == std::future_status::ready);
  auto [first, second] = fut.get();
  CHECK(first);
  CHECK_FALSE(second);
  CHECK(body_of(got) == "hello");
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
  CHECK(run.errors().find("declared 5, produced at least 49") != std::string::npos);
}

TEST_CASE("standalone: writes before the head is framed are held to the declared length too (ADP-13)") {
  // The delayed callable runs on the io thread: these writes come before the posted start is framed.
  Running run(app_with([] {
    return Response::delayed([](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "5"}});
      w->write("hello");
      w->write(kForged);
      w->close();
    });
  }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  CHECK(body_of(got) == "hello");
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
}

TEST_CASE("standalone: a writer closed short of its declared length ends the connection (ADP-13)") {
  Running run(app_with([] {
    return Response::delayed([](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "100"}});
      std::thread([w] {
        std::this_thread::sleep_for(20ms);
        w->write("hello");
        w->close();
      }).detach();
    });
  }));
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed);
  CHECK(body_of(got) == "hello");
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
  CHECK(run.errors().find("declared 100, produced 5") != std::string::npos);
}

TEST_CASE("standalone: a stream or writer that keeps to its declared length keeps the connection (ADP-13)") {
  Running run([](Env& env) -> Response {
    if (env.get("PATH_INFO") == "/second") {
      return Response::delayed([](csgi::Responder r) {
        auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "6"}});
        w->write("sec");
        w->write("ond");
        w->close();
      });
    }
    return stream_of("5", {"hel", "lo"});
  });
  bool closed = false;
  std::string got = exchange(run.port, kPipelined, closed, 1s);
  CHECK(count(got, "HTTP/1.1 200") == 2);
  CHECK(got.find("\r\n\r\nhelloHTTP/1.1 200") != std::string::npos);
  CHECK(got.ends_with("\r\n\r\nsecond"));
  CHECK_FALSE(closed);  // kept alive: read until the 1 s timeout
  CHECK(run.errors().empty());
}

TEST_CASE("standalone: a complete body is framed by its real length; a differing declared one is logged (ADP-13)") {
  Running run(app_with([] {
    Response r = Response::text(200, "hello");
    r.headers.add("Content-Length", "100");
    return r;
  }));
  bool closed = false;
  std::string got =
      exchange(run.port, std::string(kPipelined) + "GET /second HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", closed);
  CHECK(got.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(got.find("Content-Length: 100") == std::string::npos);
  CHECK(got.find("\r\n\r\nhelloHTTP/1.1 200") != std::string::npos);
  CHECK(count(got, "HTTP/1.1 200") == 3);
  CHECK(run.errors().find("Content-Length (100) differs from its body's length (5)") != std::string::npos);
}

TEST_CASE("standalone: HEAD keeps the declared length and sends no body; 204 sends neither (ADP-13, ADP-2, ADP-8)") {
  Running run([](Env& env) -> Response {
    if (env.get("PATH_INFO") == "/second") {
      Response r;
      r.status = 204;
      r.headers.add("Content-Length", "7");
      r.body = csgi::make_stream([]() -> std::optional<std::string> { return std::nullopt; });
      return r;
    }
    return stream_of("100", {"hello"});
  });
  bool closed = false;
  std::string got = exchange(run.port,
                             "HEAD /first HTTP/1.1\r\nHost: t\r\n\r\n"
                             "GET /second HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                             closed);
  CHECK(got.find("Content-Length: 100\r\n") != std::string::npos);
  CHECK(got.find("hello") == std::string::npos);
  auto second = got.find("HTTP/1.1 204");
  REQUIRE(second != std::string::npos);
  CHECK(got.find("Content-Length", second) == std::string::npos);
  CHECK(got.ends_with("\r\n\r\n"));
  CHECK(run.errors().empty());
}

TEST_CASE("standalone: a file that shrinks while it is sent ends the connection, logged (ADP-13)") {
  std::string path = "/tmp/csgi-framing-file-" + std::to_string(::getpid()) + ".bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::string block(1 << 20, 'f');
    for (int i = 0; i < 48; ++i) out << block;
  }
  Running run([&](Env&) {
    Response r = Response::text(200, "");
    r.body = csgi::FileBody::open(path);
    return r;
  });
  int fd = connect_tcp(run.port);
  std::string_view req = "GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[65536];
  while (got.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    REQUIRE(r > 0);
    got.append(buf, static_cast<std::size_t>(r));
  }
  std::this_thread::sleep_for(100ms);  // the server fills the socket buffers (a few MB) and waits
  REQUIRE(::truncate(path.c_str(), 24 << 20) == 0);
  bool closed = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) break;
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) {
      closed = true;
      break;
    }
    got.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  ::unlink(path.c_str());
  CHECK(got.find("Content-Length: 50331648\r\n") != std::string::npos);
  CHECK(body_of(got).size() == (24u << 20));
  CHECK(count(got, "HTTP/1.1 ") == 1);
  CHECK(closed);
  CHECK(run.errors().find("fell short of its Content-Length: declared 50331648, produced 25165824") !=
        std::string::npos);
}
