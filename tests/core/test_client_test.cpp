#include "csgi/core/test_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <stdexcept>
#include <thread>

#include "csgi/core/http_error.hpp"

using namespace csgi;
using namespace std::chrono_literals;

namespace {
/// A delayed response answered from a thread of its own after `after`, as a connection pool or a job
/// queue would answer it (RES-8: from any thread, now or later).
App answered_later(std::chrono::milliseconds after, bool stream) {
  return [after, stream](Env&) {
    return Response::delayed([after, stream](Responder r) {
      std::thread([r, after, stream] {
        std::this_thread::sleep_for(after);
        if (!stream) {
          r.respond(Response::text(201, "later"));
          return;
        }
        auto w = r.start(200, {{"Content-Type", "text/plain"}});
        for (int i = 0; i < 3; ++i) {
          w->write("part" + std::to_string(i) + "\n");
          std::this_thread::sleep_for(after / 4);
        }
        w->close();
      }).detach();
    });
  };
}
}  // namespace

TEST_CASE("test client: a delayed response answered later from another thread is waited for", "[test_client][RES-8]") {
  auto res = testing::call(answered_later(150ms, false), "GET /");
  CHECK(res.status == 201);
  CHECK(res.body == "later");
}

TEST_CASE("test client: a writer started later from another thread is read to its close", "[test_client]") {
  auto res = testing::call(answered_later(100ms, true), "GET /");
  CHECK(res.status == 200);
  CHECK(res.streamed);
  CHECK(res.closed);
  CHECK(res.body == "part0\npart1\npart2\n");
  CHECK(res.header("Content-Type") == "text/plain");
}

TEST_CASE("test client: a responder dropped unanswered fails at once", "[test_client]") {
  App dropped = [](Env&) { return Response::delayed([](Responder) {}); };
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(testing::call(dropped, "GET /"), Catch::Contains("never answered"));
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("test client: a responder held but never answered fails after the timeout, saying so", "[test_client]") {
  auto held = std::make_shared<Responder>();
  App app = [held](Env&) { return Response::delayed([held](Responder r) { *held = r; }); };
  testing::Options o;
  o.delayed_timeout = 200ms;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(testing::call(app, "GET /", {}, {}, o), Catch::Contains("not answered within 0.2 s"));
  CHECK(std::chrono::steady_clock::now() - t0 >= 200ms);
  *held = Responder();
}

TEST_CASE("test client: a writer dropped without close() ends the body", "[test_client]") {
  App app = [](Env&) {
    return Response::delayed([](Responder r) {
      std::thread([r] {
        std::this_thread::sleep_for(50ms);
        r.start(200, {})->write("cut");
      }).detach();
    });
  };
  auto res = testing::call(app, "GET /");
  CHECK(res.body == "cut");
  CHECK_FALSE(res.closed);
}

TEST_CASE("test client: rethrow = false answers as an adapter does", "[test_client][ADP-5][ADP-6]") {
  testing::Options answer;
  answer.rethrow = false;
  App bad = [](Env&) -> Response { throw BadRequest("no such field"); };
  CHECK_THROWS_AS(testing::call(bad, "GET /"), BadRequest);  // the default: rethrown
  auto res = testing::call(bad, "GET /x", {}, "", answer);
  CHECK(res.status == 400);
  CHECK(res.header("Content-Type") == "text/plain; charset=utf-8");
  CHECK(res.body == "400 Bad Request: no such field\n");
  CHECK(res.errors.empty());
  // 5xx: the status only; the message goes to the error log with the request line.
  res = testing::call([](Env&) -> Response { throw HttpError(503, "db down at 10.0.0.5"); }, "GET /x", {}, "", answer);
  CHECK(res.status == 503);
  CHECK(res.body == "503 Service Unavailable\n");
  CHECK(res.errors == "csgi: 503 for \"GET /x HTTP/1.1\": the app raised: db down at 10.0.0.5\n");
  res = testing::call([](Env&) -> Response { throw std::runtime_error("boom"); }, "POST /y", {}, "", answer);
  CHECK(res.status == 500);
  CHECK(res.body == "500 Internal Server Error\n");
  CHECK(res.errors == "csgi: 500 for \"POST /y HTTP/1.1\": the app raised: boom\n");
  res = testing::call([](Env&) -> Response { throw 7; }, "GET /", {}, "", answer);
  CHECK(res.status == 500);
  CHECK(res.errors.find("non-standard exception") != std::string::npos);
  // A body read past its limit: the 413 the server would send.
  App reader = [](Env& env) {
    env.input().read_all(4);
    return Response::text(200, "read");
  };
  CHECK(testing::call(reader, "POST /", {}, "too long", answer).status == 413);
}

TEST_CASE("test client: rethrow = false answers a delayed callable's exception before it answers", "[test_client]") {
  testing::Options answer;
  answer.rethrow = false;
  App before = [](Env&) { return Response::delayed([](Responder) { throw HttpError(403, "nope"); }); };
  auto res = testing::call(before, "GET /", {}, "", answer);
  CHECK(res.status == 403);
  CHECK(res.body == "403 Forbidden: nope\n");
  // Once the writer has started, an adapter cuts the connection: the exception still comes up.
  App after = [](Env&) {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      w->write("partial");
      throw HttpError(500, "late");
    });
  };
  CHECK_THROWS_AS(testing::call(after, "GET /", {}, "", answer), HttpError);
}
