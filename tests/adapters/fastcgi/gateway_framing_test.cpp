// The gateway adapters hold a streamed body to the Content-Length the app declared (ADP-13): straight over
// the FastCGI socket (cut at the length; the request ends without FCGI_END_REQUEST when the body fell short),
// and behind every front server (nginx, Apache mod_fcgid, lighttpd, Apache mod_cgid running the CGI
// adapter), where a pipelined request behind the broken response must never have its response mixed
// into it, nor see the forged response the app put past its length.
#include <catch2/catch.hpp>

#include <chrono>

#include "fronts.hpp"
#include "harness.hpp"

using namespace csgi::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::pair<std::string, std::string>> params(const std::string& path, const std::string& query) {
  return {{"REQUEST_METHOD", "GET"},  {"REQUEST_URI", path + "?" + query}, {"QUERY_STRING", query},
          {"SCRIPT_NAME", ""},        {"PATH_INFO", path},                 {"SERVER_NAME", "localhost"},
          {"SERVER_PORT", "80"},      {"SERVER_PROTOCOL", "HTTP/1.1"}};
}

/// The first HTTP response in `raw`: its body as framed (Content-Length, chunked or close), whether that
/// framing was complete, and the bytes after it.
struct First {
  int status = 0;
  std::string body, rest;
  bool complete = false;
};

First first_response(const std::string& raw) {
  First f;
  auto end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return f;
  f.status = std::atoi(raw.c_str() + 9);
  std::string head = raw.substr(0, end + 2);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view body = std::string_view(raw).substr(end + 4);
  if (auto cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
    std::size_t n = std::stoul(head.substr(cl + 17));
    f.complete = body.size() >= n;
    f.body = body.substr(0, n);
    f.rest = body.substr(std::min(n, body.size()));
  } else if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    for (;;) {
      auto eol = body.find("\r\n");
      if (eol == std::string_view::npos) break;
      std::size_t n = std::stoul(std::string(body.substr(0, eol)), nullptr, 16);
      if (body.size() < eol + 2 + n + 2) break;
      f.body += body.substr(eol + 2, n);
      body.remove_prefix(eol + 2 + n + 2);
      if (n == 0) {
        f.complete = true;
        break;
      }
    }
    f.rest = body;
  } else {
    f.body = body;  // close-delimited: nothing can follow
  }
  return f;
}

constexpr const char* kForged = "forged";

}  // namespace

TEST_CASE("csgi-fcgi: a stream or writer is cut at its declared length; one short of it ends unfinished (ADP-13)") {
  TempDir dir;
  std::string sock = dir / "app.sock";
  Process app({CSGI_FCGI_BIN, "--app", CSGI_GATEWAY_APP, "--app-arg", dir / "file.bin", "--listen", "unix:" + sock},
              log_path(dir, "app"));
  REQUIRE(wait_for_unix(sock));
  for (std::string kind : {"", "&writer=1"}) {
    INFO("kind " << kind);
    // Past the length: cut there, and the request ends as usual (its length frames it).
    auto over = fastcgi_request(sock, params("/framed", "declared=5&forge=1" + kind));
    auto res = parse_cgi_response(over.stdout_data);
    CHECK(res.header("Content-Length") == "5");
    CHECK(res.body == "hello");
    CHECK(over.ended);
    // Short of it: the request never ends (no FCGI_END_REQUEST).
    auto short_ = fastcgi_request(sock, params("/framed", "declared=100" + kind));
    res = parse_cgi_response(short_.stdout_data);
    CHECK(res.header("Content-Length") == "100");
    CHECK(res.body == "hello");
    CHECK_FALSE(short_.ended);
    auto exact = fastcgi_request(sock, params("/framed", "declared=5" + kind));
    CHECK(parse_cgi_response(exact.stdout_data).body == "hello");
    CHECK(exact.ended);
  }
  std::string log = read_file(log_path(dir, "app"));
  CHECK(log.find("ran past its Content-Length: declared 5, produced at least 49") != std::string::npos);
  CHECK(log.find("fell short of its Content-Length: declared 100, produced 5") != std::string::npos);
  CHECK(log.find("GET /framed?declared=100") != std::string::npos);
}

TEST_CASE("behind every front server, a broken declared length never mixes two responses (ADP-13)") {
  FrontServers servers(CSGI_GATEWAY_APP);
  for (const auto& e : servers.errors) FAIL_CHECK(e);
  for (const Front& f : servers.fronts) {
    for (std::string kind : {"", "&writer=1"}) {
      auto pipelined = [&](const std::string& query) {
        std::string host = "Host: 127.0.0.1:" + std::to_string(f.port) + "\r\n";
        Connection c(f.port);
        c.send("GET " + f.prefix + "/framed?" + query + kind + " HTTP/1.1\r\n" + host + "\r\nGET " + f.prefix +
               "/pid HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n");
        return c.read_until("\x01", 5s);  // until the front server closes (or 5 s)
      };
      std::string got = pipelined("declared=5&forge=1");
      First first = first_response(got);
      INFO(f.name << " " << kind << ", past the length:\n" << got);
      CHECK(first.status == 200);
      CHECK(first.body == "hello");
      CHECK(got.find(kForged) == std::string::npos);
      // What follows, if anything, is the real second response.
      CHECK((first.rest.empty() || first.rest.rfind("HTTP/1.1 200 OK\r\n", 0) == 0));

      got = pipelined("declared=100");
      first = first_response(got);
      INFO(f.name << " " << kind << ", short of the length:\n" << got);
      if (f.name.rfind("apache-fcgid", 0) == 0) {
        // mod_fcgid appends its own 500 page to a response whose FastCGI side failed, then closes.
        CHECK(first.body.rfind("hello", 0) == 0);
        CHECK(got.find("HTTP/1.1 ", 1) == std::string::npos);
      } else if (f.name.rfind("apache-cgi", 0) == 0) {
        // mod_cgid frames a CGI body by its own chunking and ends it when the script exits: nothing
        // the script does can mark it truncated, but the next response is framed apart.
        CHECK(first.body == "hello");
        CHECK((first.rest.empty() || first.rest.rfind("HTTP/1.1 200 OK\r\n", 0) == 0));
      } else {
        // The client sees a truncated response (what reached the front before the error), then the
        // connection closed; the pipelined request is not answered on it.
        CHECK_FALSE(first.complete);
        CHECK(std::string("hello").rfind(first.body, 0) == 0);
        CHECK(first.rest.empty());
      }
    }
  }
}
