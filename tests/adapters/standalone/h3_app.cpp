// A CSGI_APP library for test_h3.py: each response kind at a path of its own, since the HTTP/3 client
// there (gtlsclient) sends no header fields of the test's.
//   /hello    a complete body
//   /env      SERVER_PROTOCOL|csgi.url_scheme|HTTPS|REQUEST_METHOD|QUERY_STRING|SSL_PROTOCOL|SSL_CIPHER|SSL_TLS_SNI
//   /echo     the request body (csgi.input), as it came
//   /stream   a pull stream "one two three" with trailer fields grpc-status and server-timing
//   /file     the file named by $CSGI_H3_TEST_FILE (a file body)
//   /writer   a delayed response whose Writer writes 64 chunks of 4 KiB from another thread, then trailers
//   /delayed  a delayed response answered from another thread
//   /early    a 103 Early Hints (csgix.informational), then the answer
//   /sleep    answers after 2.5 s (longer than the test's --idle-timeout)
//   /pid      "PID/TID": the serving process and io thread (which worker and thread answered)
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include "csgi/core/app_library.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/keys.hpp"

namespace {

using namespace csgi;

Response app(Env& env) {
  std::string_view path = env.get(keys::PATH_INFO);
  if (path == "/hello") return Response::text(200, "hello over h3");
  if (path == "/env") {
    std::string s;
    for (std::string_view k : {keys::SERVER_PROTOCOL, keys::url_scheme, keys::HTTPS, keys::REQUEST_METHOD,
                               keys::QUERY_STRING, keys::SSL_PROTOCOL, keys::SSL_CIPHER, keys::SSL_TLS_SNI})
      s += std::string(env.get(k)) + "|";
    return Response::text(200, s);
  }
  if (path == "/echo") return Response::text(200, env.input().read_all());
  if (path == "/stream") {
    Response r = Response::text(200, "");
    r.headers.add("Trailer", "grpc-status, Server-Timing");
    auto i = std::make_shared<int>(0);
    r.body = make_stream([i]() -> std::optional<std::string> {
      static const char* parts[] = {"one ", "two ", "three"};
      if (*i == 3) return std::nullopt;
      return std::string(parts[(*i)++]);
    }, {}, [] { return Headers{{"grpc-status", "0"}, {"Server-Timing", "app;dur=1"}}; });
    return r;
  }
  if (path == "/file") {
    const char* f = std::getenv("CSGI_H3_TEST_FILE");
    return Response{200, {{"Content-Type", "application/octet-stream"}}, FileBody::open(f ? f : "/nonexistent")};
  }
  if (path == "/writer") {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status"}});
      std::thread([w] {
        for (int i = 0; i < 64; ++i) w->write(std::string(4096, static_cast<char>('a' + i % 26)));
        w->set_trailers({{"grpc-status", "0"}});
        w->close();
      }).detach();
    });
  }
  if (path == "/delayed") {
    return Response::delayed([](Responder r) {
      std::thread([r] { r.respond(Response::text(200, "from another thread")); }).detach();
    });
  }
  if (path == "/early") {
    auto* info = env.object<Informational>(keys::x::informational);
    bool sent = info && info->send(103, Headers{{"Link", "</style.css>; rel=preload; as=style"}});
    return Response::text(200, sent ? "sent 103" : "no 103");
  }
  if (path == "/pid") return Response::text(200, std::to_string(::getpid()) + "/" + std::to_string(::gettid()));
  if (path == "/sleep") {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    return Response::text(200, "slept");
  }
  return Response::error(404);
}

App make_app(const AppArgs&) { return app; }

}  // namespace

CSGI_APP(make_app)
