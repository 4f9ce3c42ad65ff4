// The exchange's response rules, without a socket: drive_response() resolves what the app returned and
// hands it to a protocol's sink, here one that records the call. The HTTP/1 and HTTP/2 codecs only frame
// what it hands them (their bytes are checked by the socket suites and h2_session_test.cpp).
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

using namespace csgi;
using namespace csgi::standalone::detail;

namespace {

struct Recorded {
  std::string call;  // head_only, text, bytes, file, stream, trailers_only
  int status = 0;
  std::optional<std::uint64_t> length;
  std::string body;  // text/bytes, or a stream's first chunk
  Headers trailers;
  StreamPtr stream;
};

struct RecordingSink final : ResponseSink {
  Recorded r;
  int calls = 0;
  void head_only(int status, Headers&, std::optional<std::uint64_t> length) override {
    set("head_only", status);
    r.length = length;
  }
  void text(int status, Headers&, std::string& body) override {
    set("text", status);
    r.length = body.size();
    r.body = body;
  }
  void bytes(int status, Headers&, const SharedBytes& body) override {
    set("bytes", status);
    r.length = body->size();
    r.body = *body;
  }
  void file(int status, Headers&, FileSpan span) override {
    set("file", status);
    r.length = span.length;
  }
  void stream(int status, Headers&, StreamPtr stream, std::string first,
              std::optional<std::uint64_t> declared) override {
    set("stream", status);
    r.length = declared;
    r.body = first;
    r.stream = stream;
  }
  void trailers_only(int status, Headers&, Headers trailers) override {
    set("trailers_only", status);
    r.trailers = std::move(trailers);
  }
  void set(const char* call, int status) {
    ++calls;
    r.call = call;
    r.status = status;
  }
};

struct Log final : ExchangeLog {
  std::string text;
  void error(std::string_view what) noexcept override { text.append(what).append("\n"); }
};

struct Run {
  RecordingSink sink;
  Log log;
  Recorded operator()(Response res, bool head = false, bool can_trail = true) {
    drive_response(res, head, can_trail, sink, log);
    REQUIRE(sink.calls == 1);
    return sink.r;
  }
};

}  // namespace

TEST_CASE("exchange: a complete body goes out whole, framed by its real length (ADP-13)") {
  Run run;
  Recorded r = run(Response{200, {{"Content-Length", "100"}}, std::string("hello")});
  CHECK(r.call == "text");
  CHECK(r.length == 5u);
  CHECK(r.body == "hello");
  CHECK(run.log.text.find("Content-Length (100) differs from its body's length (5)") != std::string::npos);
}

TEST_CASE("exchange: HEAD states the length a GET would have, and sends no body (ADP-2)") {
  Run a;
  Recorded r = a(Response{200, {{"Content-Length", "1234"}}, std::string()}, true);
  CHECK(r.call == "head_only");
  CHECK(r.length == 1234u);
  Run b;
  r = b(Response::text(200, "twelve bytes"), true);
  CHECK(r.call == "head_only");
  CHECK(r.length == 12u);
  CHECK(b.log.text.empty());
}

TEST_CASE("exchange: a status without a body states no length and sends none") {
  Run run;
  Recorded r = run(Response{204, {}, std::string("ignored")});
  CHECK(r.call == "head_only");
  CHECK_FALSE(r.length.has_value());
  Run s;
  r = s(Response{304, {{"Content-Length", "9"}}, make_stream([]() -> std::optional<std::string> { return "x"; })});
  CHECK(r.call == "head_only");
  CHECK_FALSE(r.length.has_value());
}

TEST_CASE("exchange: a status that is not a final one is answered 500, logged") {
  Run run;
  Recorded r = run(Response::text(103, "early"));
  CHECK(r.status == 500);
  CHECK(run.log.text.find("final response status 103 is not one; 500 sent") != std::string::npos);
}

TEST_CASE("exchange: a file is opened here: its span, or 404 when it is missing") {
  std::string path = "/tmp/csgi-response-body-" + std::to_string(::getpid());
  std::ofstream(path) << "0123456789";
  Run a;
  Recorded r = a(Response{200, {}, FileBody::open(path, 2, 5)});
  CHECK(r.call == "file");
  CHECK(r.length == 5u);
  ::unlink(path.c_str());
  FileBody by_path;  // opened by the exchange, by its path
  by_path.path = path;
  Run b;
  r = b(Response{200, {}, by_path});
  CHECK(r.status == 404);
  CHECK(r.call == "text");
}

TEST_CASE("exchange: a pull stream's head waits for its first non-empty chunk (ADP-5)") {
  auto chunks = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"", "", "first", "second"});
  auto next = [chunks]() -> std::optional<std::string> {
    if (chunks->empty()) return std::nullopt;
    std::string c = chunks->front();
    chunks->erase(chunks->begin());
    return c;
  };
  Run run;
  Recorded r = run(Response{200, {{"Content-Length", "11"}}, make_stream(next)});
  CHECK(r.call == "stream");
  CHECK(r.body == "first");
  CHECK(r.length == 11u);  // the declared length, which the codec holds the rest of the body to
  REQUIRE(r.stream);
  std::string chunk;
  CHECK(r.stream->next(chunk));
  CHECK(chunk == "second");
}

TEST_CASE("exchange: a stream that throws before its first chunk is a 500, and is closed") {
  bool closed = false;
  Run run;
  Recorded r = run(Response{200, {}, make_stream([]() -> std::optional<std::string> { throw std::runtime_error("boom"); },
                                                 [&] { closed = true; })});
  CHECK(r.status == 500);
  CHECK(closed);
  CHECK(run.log.text.find("500: the response stream's first next() threw: boom") != std::string::npos);
}

TEST_CASE("exchange: an empty stream with trailers is sent as trailers only where the protocol can (ADP-17)") {
  auto stream = [] {
    return make_stream([]() -> std::optional<std::string> { return std::nullopt; }, {},
                       [] { return Headers{{"Grpc-Status", "0"}}; });
  };
  Run a;
  Recorded r = a(Response{200, {}, stream()});
  CHECK(r.call == "trailers_only");
  REQUIRE(r.trailers.size() == 1);
  CHECK(r.trailers.get("grpc-status") == "0");
  Run b;  // HTTP/1.0: no trailers; an empty body of length 0
  r = b(Response{200, {}, stream()}, false, false);
  CHECK(r.call == "head_only");
  CHECK(r.length == 0u);
  Run c;  // a declared length frames the empty body: no trailers either
  r = c(Response{200, {{"Content-Length", "0"}}, stream()});
  CHECK(r.call == "head_only");
  CHECK(r.length == 0u);
}

TEST_CASE("exchange: a delayed body where a response was expected is refused with 500") {
  Run run;
  Recorded r = run(Response{200, {}, Delayed([](Responder) {})});
  CHECK(r.status == 500);
}
