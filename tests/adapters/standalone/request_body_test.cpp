// Request bodies are read whole by the io thread before the app runs (request_body.hpp): a slow body
// holds no thread, even under an inline app that reads it; a trickle that keeps re-arming the body
// timeout ends in 408 at the minimum rate; a body past memory reaches the app intact through a temporary
// file, and the process-wide memory cap sends bodies there too.
#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"

#include <dirent.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "chunked.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;
using csgi::standalone_test::chunked;
using csgi::standalone_test::connect_tcp;
using csgi::standalone_test::recv_until;
using csgi::standalone_test::send_all;

namespace {

std::uint64_t fnv(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// True when this process has a file open under `dir` (a request body's temporary file).
bool file_open_under(const std::string& dir) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    char link[4096];
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
    if (n > 0 && std::string_view(link, static_cast<std::size_t>(n)).rfind(dir + "/", 0) == 0) found = true;
  }
  ::closedir(d);
  return found;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/csgi-body-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

/// /sum reads its whole body and answers its size, its hash and whether a body file was open under
/// `dir` meanwhile; anything else answers "hi" without reading.
csgi::App body_app(std::string dir) {
  return [dir](Env& env) {
    if (env.get(csgi::keys::PATH_INFO) != "/sum") return Response::text(200, "hi");
    std::string body = env.object<csgi::Input>(csgi::keys::input)->read_all();
    return Response::text(200, "size=" + std::to_string(body.size()) + " hash=" + std::to_string(fnv(body)) +
                                   " spooled=" + (file_open_under(dir) ? "1" : "0"));
  };
}

std::string expect_sum(std::string_view body, bool spooled) {
  return "size=" + std::to_string(body.size()) + " hash=" + std::to_string(fnv(body)) + " spooled=" +
         (spooled ? "1" : "0");
}


/// One io thread, the app inline on it: the case where a body read on the io thread would stall all.
csgi::standalone::ServerOptions one_inline_thread() {
  csgi::standalone::ServerOptions opt;
  opt.threads = 1;
  opt.app_threads = csgi::standalone_test::app_inline;
  opt.body_timeout = 10s;
  return opt;
}

/// Client A's body is under way (its head and a first part sent); client B's GET on another connection is
/// answered before A sends the rest; then A's answer holds its whole body.
void other_client_answered_meanwhile(int port, const std::string& head, const std::string& first,
                                     const std::string& rest, const std::string& expected) {
  int a = connect_tcp(port);
  send_all(a, head + first);
  std::this_thread::sleep_for(200ms);  // A's head is parsed (and, inline, the app called) before B asks
  int b = connect_tcp(port);
  send_all(b, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string rb = recv_until(b, "\r\n\r\nhi", 5s);
  ::close(b);
  CHECK(rb.find("HTTP/1.1 200 ") == 0);
  CHECK(rb.find("\r\n\r\nhi") != std::string::npos);
  send_all(a, rest);
  std::string ra = recv_until(a, expected, 10s);
  ::close(a);
  INFO(ra);
  CHECK(ra.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("standalone: a slow chunked body read by an inline app does not stop another client", "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone_test::Running srv(body_app(dir), one_inline_thread());
  std::string data(3000, 'q');
  std::string body = chunked(data, 1000);
  other_client_answered_meanwhile(srv.port, "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                                  body.substr(0, 20), body.substr(20), expect_sum(data, false));
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: a slow Content-Length body past --body-buffer-bytes does not stop another client",
          "[standalone][body]") {
  std::string dir = temp_dir();
  auto opt = one_inline_thread();
  opt.body_buffer_bytes = 1024;
  opt.body_temp_dir = dir;
  csgi::standalone_test::Running srv(body_app(dir), opt);
  std::string data(100000, 'z');
  for (std::size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>('a' + i % 26);
  other_client_answered_meanwhile(
      srv.port, "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(data.size()) + "\r\n\r\n",
      data.substr(0, 100), data.substr(100), expect_sum(data, true));
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: 100-continue goes out when the server starts reading the body", "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone_test::Running srv(body_app(dir), one_inline_thread());
  int fd = connect_tcp(srv.port);
  send_all(fd, "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  std::string got = recv_until(fd, "\r\n\r\n", 5s);
  CHECK(got == "HTTP/1.1 100 Continue\r\n\r\n");
  send_all(fd, "hello");
  got = recv_until(fd, expect_sum("hello", false), 5s);
  ::close(fd);
  CHECK(got.find(expect_sum("hello", false)) != std::string::npos);
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: a trickled body that keeps re-arming --body-timeout ends in 408 at --body-min-rate",
          "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone::ServerOptions opt;
  opt.body_timeout = 1000ms;  // each piece comes well within it
  opt.body_min_rate = 1000;   // but 10 bytes each 200 ms is 50 bytes/s
  csgi::standalone_test::Running srv(body_app(dir), opt);
  int fd = connect_tcp(srv.port);
  send_all(fd, "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string got;
  int sent = 0;
  for (; sent < 50 && got.find("\r\n\r\n") == std::string::npos; ++sent) {
    send_all(fd, "a\r\n0123456789\r\n");
    got += recv_until(fd, "\r\n\r\n", 200ms);
  }
  got += recv_until(fd, "slower", 2s);
  ::close(fd);
  INFO(got);
  CHECK(sent < 50);  // answered while the body was still coming
  CHECK(got.rfind("HTTP/1.1 408 ", 0) == 0);
  CHECK(got.find("Connection: close") != std::string::npos);
  CHECK(got.find("slower than 1000 bytes/s") != std::string::npos);
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: a body past --body-buffer-bytes reaches the app intact through a temporary file",
          "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone::ServerOptions opt;
  opt.body_buffer_bytes = 4096;
  opt.body_temp_dir = dir;
  csgi::standalone_test::Running srv(body_app(dir), opt);
  std::string data(300000, 'x');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) % 251);
  std::string small(1000, 's');
  bool closed = false;
  SECTION("Content-Length") {
    std::string req = "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(data.size()) + "\r\n\r\n" +
                      data + "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n" +
                      small;
    std::string got = csgi::standalone_test::exchange(srv.port, req, closed);
    CHECK(got.find(expect_sum(data, true)) != std::string::npos);
    CHECK(got.find(expect_sum(small, false)) != std::string::npos);
  }
  SECTION("chunked") {
    std::string req = "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                      chunked(data, 7000);
    std::string got = csgi::standalone_test::exchange(srv.port, req, closed);
    CHECK(got.find(expect_sum(data, true)) != std::string::npos);
  }
  CHECK(closed);
  CHECK(!file_open_under(dir));  // each body's file is gone with its request
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: 1 MB bodies by length and chunked, with requests pipelined behind them, on one connection",
          "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone_test::Running srv(body_app(dir));
  std::string data(1000000, 'x');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131 + i / 4099) % 251);
  std::string small(10000, 's');
  bool closed = false;
  std::string got = csgi::standalone_test::exchange(
      srv.port,
      "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + data +
          "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(data, 65521) +
          "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n" + small +
          "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      closed);
  auto a = got.find(expect_sum(data, false)), b = got.find(expect_sum(data, false), a + 1),
       c = got.find(expect_sum(small, false)), d = got.find("\r\n\r\nhi");
  INFO(got.substr(0, 2000));
  REQUIRE(a != std::string::npos);
  CHECK(b != std::string::npos);
  CHECK(c > b);
  CHECK(d > c);
  CHECK(closed);
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: a large body that times out gets 408, and what its client still sends is read and dropped",
          "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone::ServerOptions opt;
  opt.body_timeout = 300ms;
  csgi::standalone_test::Running srv(body_app(dir), opt);
  int fd = connect_tcp(srv.port);
  send_all(fd, "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + std::string(10000, 'a'));
  std::string got = recv_until(fd, "\r\n\r\n", 5s);
  CHECK(got.rfind("HTTP/1.1 408 ", 0) == 0);
  send_all(fd, std::string(90000, 'b'));  // into the read the server had under way
  got += recv_until(fd, "\x01", 5s);        // until the server closes
  ::close(fd);
  CHECK(got.find("Connection: close") != std::string::npos);
  // The server still serves.
  bool closed = false;
  got = csgi::standalone_test::exchange(srv.port, "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                                                  "Connection: close\r\n\r\nabc", closed);
  CHECK(got.find(expect_sum("abc", false)) != std::string::npos);
  ::rmdir(dir.c_str());
}

TEST_CASE("standalone: bodies past --body-memory-bytes of the whole process go to their temporary files",
          "[standalone][body]") {
  std::string dir = temp_dir();
  csgi::standalone::ServerOptions opt;
  opt.body_buffer_bytes = 1 << 20;
  opt.body_memory_bytes = 2000;
  opt.body_temp_dir = dir;
  csgi::standalone_test::Running srv(body_app(dir), opt);
  std::string big(5000, 'b'), small(300, 's');
  bool closed = false;
  std::string got = csgi::standalone_test::exchange(
      srv.port,
      "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 300\r\n\r\n" + small +
          "POST /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n" + big,
      closed);
  CHECK(got.find(expect_sum(small, false)) != std::string::npos);
  CHECK(got.find(expect_sum(big, true)) != std::string::npos);
  ::rmdir(dir.c_str());
}

TEST_CASE("request body store: memory up to its limit, then a file; the process cap is given back", "[body]") {
  std::string dir = temp_dir();
  csgi::standalone::detail::BodyMemory memory(10000);
  csgi::standalone::detail::BodyLimits limits;
  limits.memory_bytes = 4000;
  limits.temp_dir = dir;
  limits.memory = &memory;
  std::string why;
  {
    csgi::standalone::detail::RequestBody a, b;
    std::string first(1000, 'f'), more(5000, 'm');
    REQUIRE(a.append(first.data(), first.size(), limits, why));
    CHECK(!a.spooled());
    CHECK(memory.used() >= 1000);
    REQUIRE(a.append(more.data(), more.size(), limits, why));
    CHECK(a.spooled());
    CHECK(memory.used() == 0);
    CHECK(a.read_all() == first + more);
    a.rewind();
    CHECK(a.read(5) == "fffff");
    REQUIRE(b.expect(100000, limits, why));
    CHECK(b.spooled());
  }
  CHECK(memory.used() == 0);
  CHECK(!file_open_under(dir));
  ::rmdir(dir.c_str());
}

TEST_CASE("request body store: an announced length is room taken at once (up to 256 KiB), in the budget", "[body]") {
  csgi::standalone::detail::BodyMemory memory(1 << 20);
  csgi::standalone::detail::BodyLimits limits;
  limits.memory_bytes = 512 * 1024;
  limits.memory = &memory;
  std::string why;
  {
    csgi::standalone::detail::RequestBody body, large, refused;
    REQUIRE(body.expect(100000, limits, why));
    CHECK(memory.used() == 100000);  // not grown piece by piece (16 KiB, 32, 64, 128: copies each time)
    std::string piece(4000, 'p');
    for (int i = 0; i < 25; ++i) REQUIRE(body.append(piece.data(), piece.size(), limits, why));
    CHECK(memory.used() == 100000);
    CHECK(body.read_all().size() == 100000);
    REQUIRE(large.expect(400000, limits, why));  // beyond 256 KiB: taken as the bytes come
    CHECK(memory.used() == 100000 + 256 * 1024);
    csgi::standalone::detail::BodyMemory small(1000);
    limits.memory = &small;
    REQUIRE(refused.expect(100000, limits, why));  // no room in the budget: nothing taken yet
    CHECK(small.used() == 0);
  }
  CHECK(memory.used() == 0);
}
