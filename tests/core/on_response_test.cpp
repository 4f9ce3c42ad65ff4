#include "csgi/core/on_response.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

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
