// File bodies (sendfile) on a real socket: every byte of files of several sizes arrives, whole, as
// ranges and for HEAD, on one keep-alive connection with the requests pipelined; a body larger than the
// socket buffers (sent over several writable events) is followed by the next response, as is a pull
// stream that large.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "csgi/core/response.hpp"
#include "csgi/middleware/static.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;
using csgi::standalone_test::connect_tcp;
using csgi::standalone_test::Running;
using csgi::standalone_test::send_all;

namespace {

// Bigger than what a loopback connection buffers (a few MB): sent over several writable events.
constexpr std::size_t big_file = 24u << 20;

struct Site {
  std::filesystem::path dir;
  std::map<std::size_t, std::string> files;  // size -> content
  explicit Site(std::initializer_list<std::size_t> sizes) {
    dir = std::filesystem::temp_directory_path() / ("csgi-file-body-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::mt19937 rng(42);
    for (std::size_t n : sizes) {
      std::string s(n, '\0');
      for (char& c : s) c = static_cast<char>(rng());
      std::ofstream(dir / std::to_string(n), std::ios::binary).write(s.data(), static_cast<std::streamsize>(n));
      files[n] = std::move(s);
    }
  }
  ~Site() { std::filesystem::remove_all(dir); }
};

struct Reply {
  std::string head;
  std::string body;
};

/// Reads `count` responses from `fd` (bodies framed by Content-Length; none for the HEAD ones, by
/// index in `heads`); stops early on EOF or after 20 s. `wait_first` delays the first read, so that
/// the server finds the socket full.
std::vector<Reply> read_replies(int fd, std::size_t count, const std::vector<bool>& heads,
                                std::chrono::milliseconds wait_first = 0ms) {
  std::this_thread::sleep_for(wait_first);
  std::vector<Reply> out;
  std::string buf;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (out.size() < count) {
    auto end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buf.substr(0, end + 4);
      std::size_t length = 0;
      auto cl = head.find("Content-Length: ");
      if (cl != std::string::npos) std::from_chars(head.data() + cl + 16, head.data() + head.size(), length);
      if (heads[out.size()]) length = 0;
      if (buf.size() >= end + 4 + length) {
        out.push_back({head, buf.substr(end + 4, length)});
        buf.erase(0, end + 4 + length);
        continue;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char chunk[1 << 16];
    ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(r));
  }
  return out;
}

struct Ask {
  std::string request;
  bool head = false;
  int status = 200;
  std::string body;
};

std::string get(std::size_t n, std::string_view extra = "") {
  return "GET /" + std::to_string(n) + " HTTP/1.1\r\nHost: t\r\n" + std::string(extra) + "\r\n";
}

}  // namespace

TEST_CASE("standalone: file bodies of every size arrive exactly, whole, ranged and HEAD, pipelined on one connection") {
  Site site({0, 1, 1000, 16384, 65535, 65536, 65537, 100000, 1300000, 4u << 20, big_file});
  csgi::mw::StaticOptions o;
  o.root = site.dir.string();
  o.cache = false;  // every body a file (sendfile), small ones too
  Running run{csgi::App(csgi::mw::Static(o))};

  std::vector<Ask> asks;
  for (auto& [n, content] : site.files) {
    asks.push_back({get(n), false, 200, content});
    asks.push_back({"HEAD /" + std::to_string(n) + " HTTP/1.1\r\nHost: t\r\n\r\n", true, 200, ""});
    if (n >= 100) {
      asks.push_back({get(n, "Range: bytes=10-99\r\n"), false, 206, content.substr(10, 90)});
      asks.push_back({get(n, "Range: bytes=-77\r\n"), false, 206, content.substr(n - 77)});
      asks.push_back({get(n, "Range: bytes=50-\r\n"), false, 206, content.substr(50)});
    }
  }
  // The biggest again, then a small one: each behind a body that took several writable events.
  asks.push_back({get(big_file), false, 200, site.files[big_file]});
  asks.push_back({get(1), false, 200, site.files[1]});

  int fd = connect_tcp(run.port);
  std::string all;
  std::vector<bool> heads;
  for (const Ask& a : asks) all += a.request, heads.push_back(a.head);
  std::thread sender([&] { send_all(fd, all); });
  auto replies = read_replies(fd, asks.size(), heads, 200ms);
  sender.join();
  REQUIRE(replies.size() == asks.size());
  for (std::size_t i = 0; i < asks.size(); ++i) {
    INFO("request " << i << ": " << asks[i].request.substr(0, asks[i].request.find('\r')));
    CHECK(replies[i].head.rfind("HTTP/1.1 " + std::to_string(asks[i].status), 0) == 0);
    CHECK(replies[i].body.size() == asks[i].body.size());
    CHECK(replies[i].body == asks[i].body);
  }
  // Still open: one more request, answered.
  send_all(fd, get(1000));
  auto last = read_replies(fd, 1, {false});
  REQUIRE(last.size() == 1);
  CHECK(last[0].body == site.files[1000]);
  ::close(fd);
}

TEST_CASE("standalone: a file body sent over several writable events keeps the connection for the next request") {
  Site site({big_file});
  Running run([&](Env&) {
    Response r = Response::text(200, "");
    r.body = csgi::FileBody::open((site.dir / std::to_string(big_file)).string());
    return r;
  });
  int fd = connect_tcp(run.port);
  send_all(fd, get(big_file));
  auto first = read_replies(fd, 1, {false}, 200ms);  // the server fills the socket and waits to write
  REQUIRE(first.size() == 1);
  CHECK(first[0].body == site.files[big_file]);
  send_all(fd, get(big_file));  // the next request, on the same connection, after the response
  auto second = read_replies(fd, 1, {false});
  REQUIRE(second.size() == 1);
  CHECK(second[0].body == site.files[big_file]);
  ::close(fd);
}

TEST_CASE("standalone: a pull stream sent over several writable events is followed by the pipelined response") {
  const std::string block(1 << 16, 's');
  Running run([&](Env& env) -> Response {
    if (env.get("PATH_INFO") == "/second") return Response::text(200, "second");
    auto left = std::make_shared<int>(384);  // 24 MB
    Response r = Response::text(200, "");
    r.headers.set("Content-Length", std::to_string(384u << 16));
    r.body = csgi::make_stream([left, &block]() -> std::optional<std::string> {
      if ((*left)-- == 0) return std::nullopt;
      return block;
    });
    return r;
  });
  int fd = connect_tcp(run.port);
  send_all(fd, "GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n");
  auto replies = read_replies(fd, 2, {false, false}, 200ms);
  REQUIRE(replies.size() == 2);
  CHECK(replies[0].body.size() == (384u << 16));
  CHECK(replies[0].body.find_first_not_of('s') == std::string::npos);
  CHECK(replies[1].body == "second");
  ::close(fd);
}
