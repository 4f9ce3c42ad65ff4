// The request head as the standalone server reads it, on a real socket: Content-Length must be one field
// of one number, and an absolute-form target's authority replaces Host (RFC 9112 §3.2.2, §6.3).
#include "csgi/adapters/standalone/detail/http1/request_parser.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "csgi/core/response.hpp"
#include "running.hpp"

using csgi::Env;
using csgi::Response;
using csgi::standalone_test::exchange;
using csgi::standalone_test::Running;

namespace {

/// Answers with the body's length and the env's Host, server name and Content-Length.
Response echo_head(Env& env) {
  std::string body = std::string(env.get("HTTP_HOST")) + "|" + std::string(env.get("SERVER_NAME")) + "|" +
                     std::string(env.get("CONTENT_LENGTH")) + "|" + std::string(env.get("PATH_INFO"));
  return Response::text(200, body);
}

}  // namespace

TEST_CASE("standalone: Content-Length as a list or a repeated field is 400 and the connection closed") {
  Running run(echo_head);
  for (std::string_view fields : {"Content-Length: 5, 5\r\n", "Content-Length: 5,5\r\n",
                                  "Content-Length: 5\r\nContent-Length: 5\r\n",
                                  "Content-Length: 5\r\nContent-Length: 6\r\n"}) {
    INFO(fields);
    bool closed = false;
    std::string got = exchange(run.port,
                               "POST /p HTTP/1.1\r\nHost: t\r\n" + std::string(fields) +
                                   "\r\nhelloGET /canary HTTP/1.1\r\nHost: t\r\n\r\n",
                               closed);
    CHECK(got.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(got.find("Content-Length") != std::string::npos);  // the reason names the field
    CHECK(got.find("/canary") == std::string::npos);
    CHECK(closed);
  }
  bool closed = false;
  std::string got = exchange(run.port, "POST /p HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                             closed);
  CHECK(got.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(got.find("t|t|5|/p") != std::string::npos);
}

TEST_CASE("standalone: an absolute-form target's authority replaces Host (RFC 9112 3.2.2)") {
  Running run(echo_head);
  bool closed = false;
  std::string got = exchange(run.port, "GET http://a.example:8080/x HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n",
                             closed);
  CHECK(got.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(got.find("a.example:8080|a.example||/x") != std::string::npos);
  CHECK(got.find("b.example") == std::string::npos);
  got = exchange(run.port, "GET https://a.example?q HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n", closed);
  CHECK(got.find("a.example|a.example||/") != std::string::npos);
  // An origin-form target keeps Host; a userinfo in the authority is refused.
  got = exchange(run.port, "GET /x HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n", closed);
  CHECK(got.find("b.example|b.example||/x") != std::string::npos);
  got = exchange(run.port, "GET http://u@a.example/x HTTP/1.1\r\nHost: b.example\r\n\r\n", closed);
  CHECK(got.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(closed);
}
