#include "csgi/core/on_response.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "csgi/core/app.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

namespace {
/// Upper-cases the body and marks the headers; the filter sees every kind of body the same way.
Response shout(Response r) {
  return on_response(std::move(r), [](Response& res) -> BodyFilter {
    res.headers.set("X-Shout", "1");
    return [](std::string_view chunk, bool eof) {
      std::string out(chunk);
      for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (eof) out += "!";
      return out;
    };
  });
}
}  // namespace

TEST_CASE("on_response: complete bodies", "[on_response]") {
  auto res = testing::drain(shout(Response::text(200, "hello")));
  CHECK(res.body == "HELLO!");
  CHECK(res.header("X-Shout") == "1");
  Response shared;
  shared.body = std::make_shared<const std::string>("abc");
  CHECK(testing::drain(shout(std::move(shared))).body == "ABC!");
}

TEST_CASE("on_response: streams are filtered chunk by chunk and closed", "[on_response]") {
  int n = 0;
  bool closed = false;
  Response r;
  r.body = make_stream([&]() -> std::optional<std::string> {
    if (n == 3) return std::nullopt;
    return std::string("ab").append(std::to_string(n++));
  }, [&] { closed = true; });
  auto res = testing::drain(shout(std::move(r)));
  CHECK(res.body == "AB0AB1AB2!");
  CHECK(closed);
}

TEST_CASE("on_response: file bodies are read when filtered, left alone otherwise", "[on_response]") {
  std::string path = "/tmp/csgi_on_response_test.txt";
  std::ofstream(path) << "file body";
  Response r;
  r.body = FileBody::open(path, 5, 4);
  CHECK(testing::drain(shout(std::move(r))).body == "BODY!");
  Response untouched;
  untouched.body = FileBody::open(path);
  Response out = on_response(std::move(untouched), [](Response& res) -> BodyFilter {
    res.status = 201;
    return nullptr;
  });
  CHECK(out.status == 201);
  CHECK(std::holds_alternative<FileBody>(out.body));
  std::remove(path.c_str());
}

TEST_CASE("on_response: delayed responses, complete and through a writer", "[on_response]") {
  auto complete = testing::drain(shout(Response::delayed([](Responder r) { r.respond(Response::text(202, "later")); })));
  CHECK(complete.status == 202);
  CHECK(complete.body == "LATER!");
  CHECK(complete.header("X-Shout") == "1");

  bool saw_stream_marker = false;
  Response streaming = Response::delayed([](Responder r) {
    auto w = r.start(200, {{"Content-Type", "text/plain"}});
    w->write("one ");
    w->write("two");
    w->close();
  });
  Response wrapped = on_response(std::move(streaming), [&](Response& res) -> BodyFilter {
    saw_stream_marker = std::holds_alternative<StreamPtr>(res.body);
    res.headers.add("X-Seen", "yes");
    return [](std::string_view c, bool eof) { return eof ? std::string("[end]") : "<" + std::string(c) + ">"; };
  });
  auto res = testing::drain(std::move(wrapped));
  CHECK(saw_stream_marker);
  CHECK(res.streamed);
  CHECK(res.closed);
  CHECK(res.header("X-Seen") == "yes");
  CHECK(res.body == "<one ><two>[end]");
}

TEST_CASE("on_response: a filtered stream's and writer's trailers pass through", "[on_response][RES-15]") {
  Response r;
  r.body = make_stream([n = 0]() mutable -> std::optional<std::string> {
    if (n++ == 1) return std::nullopt;
    return std::string("ab");
  }, {}, [] { return Headers{{"grpc-status", "0"}}; });
  auto res = testing::drain(shout(std::move(r)));
  CHECK(res.body == "AB!");
  CHECK(res.trailers == Headers{{"grpc-status", "0"}});

  auto w = testing::drain(shout(Response::delayed([](Responder rs) {
    auto wr = rs.start(200, {{"Content-Type", "text/plain"}});
    wr->write("x");
    wr->set_trailers({{"Server-Timing", "app;dur=1"}});
    wr->close();
  })));
  CHECK(w.body == "X!");
  CHECK(w.trailers == Headers{{"Server-Timing", "app;dur=1"}});
}

TEST_CASE("on_headers: a header added to a delayed response survives its answer", "[on_response][on_headers]") {
  auto add_header = [](Response r) {
    return on_headers(std::move(r), [](Response& res) { res.headers.add("X-Powered-By", "csgi"); });
  };
  // Adding to the delayed response's own headers is lost: they are ignored (§5.3), hence on_headers.
  Response naive = Response::delayed([](Responder r) { r.respond(Response::text(200, "x")); });
  naive.headers.add("X-Powered-By", "csgi");
  CHECK(testing::drain(std::move(naive)).header("X-Powered-By").empty());

  auto later = testing::drain(add_header(Response::delayed([](Responder r) {
    std::thread([r] { r.respond(Response::text(202, "later")); }).detach();
  })));
  CHECK(later.status == 202);
  CHECK(later.body == "later");
  CHECK(later.header("X-Powered-By") == "csgi");

  auto streamed = testing::drain(add_header(Response::delayed([](Responder r) {
    auto w = r.start(200, {{"Content-Type", "text/plain"}});
    w->write("a");
    w->write("b");
    w->close();
  })));
  CHECK(streamed.streamed);
  CHECK(streamed.body == "ab");
  CHECK(streamed.header("X-Powered-By") == "csgi");

  auto now = testing::drain(add_header(Response::text(200, "now")));
  CHECK(now.body == "now");
  CHECK(now.header("X-Powered-By") == "csgi");
}

TEST_CASE("on_headers: the body passes untouched, a file stays a file", "[on_response][on_headers]") {
  std::string path = "/tmp/csgi_on_headers_test.txt";
  std::ofstream(path) << "file";
  Response res;
  res.body = FileBody::open(path);
  Response out = on_headers(std::move(res), [](Response& r) { r.status = 203; });
  CHECK(out.status == 203);
  CHECK(std::holds_alternative<FileBody>(out.body));
  std::remove(path.c_str());
  CHECK_THROWS_AS(on_headers(Response::text(200, ""), nullptr), std::invalid_argument);
}

namespace {
/// A response callback that counts its copies.
struct CountingCallback {
  int* copies;
  explicit CountingCallback(int* n) : copies(n) {}
  CountingCallback(const CountingCallback& o) : copies(o.copies) { ++*copies; }
  BodyFilter operator()(Response& r) const {
    r.headers.set("X-Seen", "1");
    return nullptr;
  }
};
}  // namespace

TEST_CASE("on_response: a callable runs in place for a response that is not delayed", "[on_response]") {
  int copies = 0;
  CountingCallback cb(&copies);
  Response now = on_response(Response::text(200, "now"), cb);
  CHECK(now.headers.get("X-Seen") == "1");
  CHECK(copies == 0);  // not wrapped in a std::function

  auto later = testing::drain(on_response(Response::delayed([](Responder r) { r.respond(Response::text(202, "x")); }), cb));
  CHECK(later.status == 202);
  CHECK(later.header("X-Seen") == "1");
  CHECK(copies >= 1);  // kept for the answer

  ResponseCallback erased = [](Response& r) -> BodyFilter {
    r.status = 201;
    return nullptr;
  };
  CHECK(on_response(Response::text(200, "x"), erased).status == 201);
  CHECK_THROWS_AS(on_response(Response::text(200, "x"), ResponseCallback()), std::bad_function_call);
}
