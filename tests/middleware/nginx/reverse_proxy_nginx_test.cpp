// reverse_proxy and access behind a real nginx (proxy_pass to a standalone server), with the headers a
// stock nginx reverse-proxy configuration sets. The client connects from 127.0.0.2, nginx from
// 127.0.0.1 (the trusted proxy); an allow-list admits 127.0.0.1 only.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/middleware/access.hpp"
#include "csgi/middleware/reverse_proxy.hpp"
#include "harness.hpp"

using namespace csgi;
using namespace std::chrono_literals;

namespace {

struct Running {
  standalone::Server server;
  std::thread thread;
  int port = 0;
  explicit Running(App app)
      : server(std::move(app), [] {
          standalone::ServerOptions o;
          o.handle_signals = false;
          o.listen = {"127.0.0.1:0"};
          o.on_listening = [](const std::string&) {};
          return o;
        }()) {
    thread = std::thread([this] { server.run(); });
    REQUIRE(server.wait_listening());
    auto a = server.addresses().front();
    port = std::stoi(a.substr(a.rfind(':') + 1));
  }
  ~Running() {
    server.stop();
    thread.join();
  }
};

/// One HTTP/1.1 request to 127.0.0.1:port from the source address `from`; returns "status body".
std::string request_from(const char* from, int port, const std::string& target, const std::string& headers) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &src.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0);
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: app.example\r\n" + headers + "Connection: close\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto sp = got.find(' ');
  auto body = got.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return "no response: " + got;
  return got.substr(sp + 1, 3) + " " + got.substr(body + 4);
}

}  // namespace

TEST_CASE("reverse_proxy behind nginx: a client cannot pass an allow-list with its own proxy headers",
          "[reverse_proxy][nginx]") {
  mw::ReverseProxyOptions rp;
  rp.trusted = {"127.0.0.1"};
  mw::AccessOptions ac;
  ac.rules = {mw::AccessRule::allow_from({"127.0.0.1"}, {}, "/admin"), mw::AccessRule::deny_from({}, {}, "/admin")};
  App app = wrap<mw::ReverseProxy>(wrap<mw::Access>(
                                       [](Env& env) {
                                         return Response::text(200, std::string(env.get(keys::REMOTE_ADDR)) + " " +
                                                                        std::string(env.get(keys::url_scheme)));
                                       },
                                       ac),
                                   rp);
  Running backend(app);

  test::TempDir dir;
  int port = test::free_port();
  std::string conf = "server {\n  listen 127.0.0.1:" + std::to_string(port) +
                     ";\n"
                     "  location / {\n"
                     "    proxy_pass http://127.0.0.1:" + std::to_string(backend.port) +
                     ";\n"
                     "    proxy_set_header Host $host;\n"
                     "    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
                     "    proxy_set_header X-Forwarded-Proto $scheme;\n"
                     "  }\n}\n";
  std::string why;
  auto nginx = test::start_nginx(dir, conf, port, why);
  if (!nginx) {
    WARN("skipped: " + why);
    return;
  }
  CHECK(request_from("127.0.0.2", port, "/who", "") == "200 127.0.0.2 http");
  CHECK(request_from("127.0.0.1", port, "/admin", "") == "200 127.0.0.1 http");  // the allow-list works
  // nginx passes the client's Forwarded through untouched and appends to its X-Forwarded-For.
  CHECK(request_from("127.0.0.2", port, "/admin", "Forwarded: for=127.0.0.1\r\n").substr(0, 3) == "403");
  CHECK(request_from("127.0.0.2", port, "/admin", "Forwarded: ;\r\n").substr(0, 3) == "403");
  CHECK(request_from("127.0.0.2", port, "/admin", "X-Forwarded-For: 127.0.0.1\r\n").substr(0, 3) == "403");
  CHECK(request_from("127.0.0.2", port, "/admin", "X-Forwarded-For: garbage\r\n").substr(0, 3) == "403");
  CHECK(request_from("127.0.0.2", port, "/who", "Forwarded: for=127.0.0.1;proto=https\r\nX-Forwarded-Proto: https\r\n") ==
        "200 127.0.0.2 http");
}
