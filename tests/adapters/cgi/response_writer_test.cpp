// The CGI/FastCGI response writer frames a body by one length (ADP-13): the real length of a complete
// body, the declared one of a stream or writer, never past it, and a body short of it fails the response.
#include "csgi/adapters/cgi/response_writer.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "csgi/core/io.hpp"

using csgi::Env;
using csgi::Response;

namespace {

struct MemOutput final : csgi::cgi::Output {
  std::string data;
  bool write(std::string_view b) override {
    data.append(b);
    return true;
  }
  bool flush() override { return true; }
};

constexpr std::string_view kForged = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged";

Response stream_of(std::string declared, std::vector<std::string> chunks, bool* closed = nullptr) {
  Response r = Response::text(200, "");
  r.headers.add("Content-Length", std::move(declared));
  auto i = std::make_shared<std::size_t>(0);
  r.body = csgi::make_stream(
      [i, chunks]() -> std::optional<std::string> {
        if (*i == chunks.size()) return std::nullopt;
        return chunks[(*i)++];
      },
      [closed] {
        if (closed) *closed = true;
      });
  return r;
}

struct Request {
  Env env;
  csgi::StringErrorStream errors;
  MemOutput out;
  explicit Request(std::string_view method = "GET") {
    env.set("REQUEST_METHOD", method);
    env.set("REQUEST_URI", "/framed");
    env.set_object<csgi::ErrorStream>("csgi.errors", &errors);
  }
  std::string body() const { return out.data.substr(out.data.find("\r\n\r\n") + 4); }
  bool send(Response r) { return csgi::cgi::send_response(std::move(r), env, out); }
};

int count(const std::string& s, std::string_view what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cgi response writer: a stream past its declared length is cut there, logged (ADP-13)") {
  Request q;
  bool closed = false;
  CHECK(q.send(stream_of("5", {"hel", "lo" + std::string(kForged)}, &closed)));
  CHECK(q.body() == "hello");
  CHECK(count(q.out.data, "Content-Length") == 1);
  CHECK(q.out.data.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(closed);
  CHECK(q.errors.text().find("ran past its Content-Length: declared 5, produced at least 49") != std::string::npos);
  CHECK(q.errors.text().find("GET /framed") != std::string::npos);
}

TEST_CASE("cgi response writer: a stream short of its declared length fails the response (ADP-13)") {
  Request q;
  CHECK_FALSE(q.send(stream_of("100", {"hel", "lo"})));
  CHECK(q.body() == "hello");
  CHECK(q.errors.text().find("fell short of its Content-Length: declared 100, produced 5") != std::string::npos);
  Request exact;
  CHECK(exact.send(stream_of("5", {"hel", "lo"})));
  CHECK(exact.errors.text().empty());
}

TEST_CASE("cgi response writer: a writer is held to its declared length (ADP-13)") {
  SECTION("past it: the write that runs past is cut and returns false, the response is whole") {
    Request q;
    bool second = true, third = true;
    CHECK(q.send(Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "5"}});
      w->write("hel");
      second = w->write("lo" + std::string(kForged));
      third = w->write("more");
      w->close();
    })));
    CHECK_FALSE(second);
    CHECK_FALSE(third);
    CHECK(q.body() == "hello");
    CHECK(q.errors.text().find("declared 5, produced at least 49") != std::string::npos);
  }
  SECTION("short of it: the response fails") {
    Request q;
    CHECK_FALSE(q.send(Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "100"}});
      w->write("hello");
      w->close();
    })));
    CHECK(q.body() == "hello");
    CHECK(q.errors.text().find("declared 100, produced 5") != std::string::npos);
  }
  SECTION("HEAD: the declared length goes out, no body, no error") {
    Request q("HEAD");
    CHECK(q.send(Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "100"}});
      w->write("hello");
      w->close();
    })));
    CHECK(q.out.data.find("Content-Length: 100\r\n") != std::string::npos);
    CHECK(q.body().empty());
    CHECK(q.errors.text().empty());
  }
}

TEST_CASE("cgi response writer: a writer dropped without close() fails the response (ADP-4)") {
  SECTION("chunked (no declared length): the end of the request must not pass for the end of the body") {
    Request q;
    CHECK_FALSE(q.send(Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      w->write("part");
    })));
    CHECK(q.body() == "part");
    CHECK(q.errors.text().find("dropped without close()") != std::string::npos);
  }
  SECTION("closed: the response is whole") {
    Request q;
    CHECK(q.send(Response::delayed([&](csgi::Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      w->write("part");
      w->close();
    })));
    CHECK(q.errors.text().empty());
  }
}

TEST_CASE("cgi response writer: a complete body is sent with its real length; a differing one is logged (ADP-13)") {
  Request q;
  Response r = Response::text(200, "hello");
  r.headers.add("Content-Length", "100");
  CHECK(q.send(std::move(r)));
  CHECK(count(q.out.data, "Content-Length") == 1);
  CHECK(q.out.data.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(q.body() == "hello");
  CHECK(q.errors.text().find("Content-Length (100) differs from its body's length (5)") != std::string::npos);
}

TEST_CASE("cgi response writer: HEAD keeps the declared length; 204 and bad values lose it (ADP-13, ADP-2, ADP-8)") {
  Request head("HEAD");
  Response r = Response::text(200, "");
  r.headers.add("Content-Length", "100");
  CHECK(head.send(std::move(r)));
  CHECK(head.out.data.find("Content-Length: 100\r\n") != std::string::npos);
  CHECK(head.errors.text().empty());

  Request none;
  Response nc;
  nc.status = 204;
  nc.headers.add("Content-Length", "7");
  CHECK(none.send(std::move(nc)));
  CHECK(none.out.data.find("Content-Length") == std::string::npos);

  Request bad;
  CHECK(bad.send(stream_of("5x", {"hello, longer"})));
  CHECK(bad.out.data.find("Content-Length") == std::string::npos);  // unknown length: the front frames it
  CHECK(bad.body() == "hello, longer");
}

TEST_CASE("cgi response writer: a file shorter than its length fails the response (ADP-13)") {
  std::string path = "/tmp/csgi-rw-framing-" + std::to_string(::getpid());
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("hello", f);
    std::fclose(f);
  }
  Request q;
  Response r = Response::text(200, "");
  r.body = csgi::FileBody::open(path, 0, 100);
  CHECK_FALSE(q.send(std::move(r)));
  CHECK(q.out.data.find("Content-Length: 100\r\n") != std::string::npos);
  CHECK(q.body() == "hello");
  CHECK(q.errors.text().find("fell short of its Content-Length: declared 100, produced 5") != std::string::npos);
  std::remove(path.c_str());
}

namespace {
struct GoneOutput final : csgi::cgi::Output {
  std::string data;
  bool write(std::string_view b) override {
    data.append(b);
    return true;
  }
  bool flush() override { return true; }
  bool client_gone() override { return true; }
};
}  // namespace

TEST_CASE("cgi response writer: the env outlives a client gone before a delayed answer (APP-4)") {
  // The client leaves while the app's thread still works; the adapter may reuse or free the env and the
  // input only once the app has answered, so the answer still reads them.
  auto env = std::make_unique<Env>();
  csgi::StringErrorStream errors;
  csgi::StringInput input("payload");
  env->set("REQUEST_METHOD", "POST");
  env->set("REQUEST_URI", "/late");
  env->set_object<csgi::ErrorStream>("csgi.errors", &errors);
  env->set_object<csgi::Input>("csgi.input", &input);
  GoneOutput out;
  std::atomic<bool> answered{false};
  std::string seen;
  bool wrote = true;
  std::thread worker;
  Response r = Response::delayed([&](csgi::Responder res) {
    worker = std::thread([&, res] {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past a few client_gone() polls
      seen = std::string(env->get("REQUEST_URI")) + " " + env->input().read_all();
      auto w = res.start(200, {{"Content-Type", "text/plain"}});
      wrote = w->write("late");  // false: the client has gone
      answered = true;  // before close(): close() is the answer send_response waits for
      w->close();
    });
  });
  csgi::cgi::SendOptions o;
  o.gone_poll = std::chrono::milliseconds(5);
  CHECK_FALSE(csgi::cgi::send_response(std::move(r), *env, out, o));
  CHECK(answered);  // send_response returned only once the app had answered
  env.reset();      // what an adapter does next: the env is gone (ASan: a later read is a use after free)
  worker.join();
  CHECK(seen == "/late payload");
  CHECK_FALSE(wrote);
  CHECK(out.data.empty());
}

TEST_CASE("cgi response writer: trailer fields are dropped without an error (ADP-17)", "[ADP-17]") {
  const csgi::Headers trailers{{"grpc-status", "0"}, {"Server-Timing", "app;dur=1"}};
  Request stream;
  Response r = Response::text(200, "");
  r.headers.add("Trailer", "grpc-status, Server-Timing");
  r.body = csgi::make_stream([n = 0]() mutable -> std::optional<std::string> {
    if (n == 2) return std::nullopt;
    return n++ == 0 ? "hel" : "lo";
  }, {}, [trailers] { return trailers; });
  CHECK(stream.send(std::move(r)));
  CHECK(stream.body() == "hello");
  CHECK(stream.out.data.find("grpc-status: 0") == std::string::npos);
  CHECK(stream.errors.text().empty());
  Request writer;
  CHECK(writer.send(Response::delayed([&](csgi::Responder rs) {
    auto w = rs.start(200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status, Server-Timing"}});
    w->write("hello");
    w->set_trailers(trailers);
    w->close();
  })));
  CHECK(writer.body() == "hello");
  CHECK(writer.out.data.find("grpc-status: 0") == std::string::npos);
  CHECK(writer.errors.text().empty());
}
