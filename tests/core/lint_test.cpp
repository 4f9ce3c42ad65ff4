#include "csgi/core/lint.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "csgi/core/broadcast.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/request.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;

namespace {

App linted(App app) { return wrap<Lint>(std::move(app)); }

Response ok(Env&) { return Response::text(200, "ok"); }

/// Runs `f`; returns the rule ID of the LintError it threw ("" when none), checking the message format.
std::string breach(const std::function<void()>& f) {
  try {
    f();
  } catch (const LintError& e) {
    std::string what = e.what();
    CHECK(what.rfind("[" + e.rule() + "] ", 0) == 0);
    CHECK(what.size() > e.rule().size() + 4);
    return e.rule();
  }
  return "";
}

/// The rule broken by an env that `setup` spoils, with an app that answers 200.
std::string env_breach(std::function<void(Env&)> setup, std::string request = "GET /x?y=1") {
  testing::Options o;
  o.setup = std::move(setup);
  return breach([&] { testing::call(linted(ok), request, {}, "", o); });
}

/// The rule broken by the response of `app`.
std::string app_breach(App app, std::string request = "GET /x", std::string body = {},
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
  return breach([&] { testing::call(linted(std::move(app)), request, std::move(headers), std::move(body)); });
}

App respond_with(std::function<void(Response&)> edit) {
  return [edit](Env&) {
    Response r = Response::text(200, "ok");
    edit(r);
    return r;
  };
}

std::string temp_file(std::string_view content) {
  static int n = 0;
  std::string path = "/tmp/csgi_lint_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

FileBody file_at(std::string path, std::uint64_t offset = 0) {
  FileBody f;
  f.path = std::move(path);
  f.offset = offset;
  return f;
}

class NonSeekable final : public Input {
public:
  std::size_t read(char*, std::size_t) override { return 0; }
};

class RecordingInfo final : public Informational {
public:
  bool send(int status, const Headers&) override {
    sent.push_back(status);
    return true;
  }
  std::vector<int> sent;
};

class NoHijack final : public Hijack {
public:
  int take(std::string&) override { return -1; }
};

}  // namespace

// ---- accepted ------------------------------------------------------------------------------------------

TEST_CASE("Lint: accepts a good env and every body kind", "[lint]") {
  CHECK(testing::call(linted(ok), "GET /x?y=1", {{"X-Foo", "a"}, {"X-Foo", "b"}}).body == "ok");
  testing::Options mounted;
  mounted.script_name = "/app";
  CHECK(testing::call(linted(ok), "GET /app/x", {}, "", mounted).status == 200);
  CHECK(testing::call(linted(ok), "GET /app", {}, "", mounted).status == 200);
  CHECK(testing::call(linted(ok), "POST /form HTTP/1.0", {{"Content-Type", "text/plain"}}, "abc").status == 200);

  auto shared = std::make_shared<const std::string>("shared");
  CHECK(testing::call(linted(respond_with([&](Response& r) { r.body = shared; })), "GET /").body == "shared");

  std::string path = temp_file("0123456789");
  auto file = testing::call(linted(respond_with([&](Response& r) { r.body = FileBody::open(path, 2, 5); })), "GET /");
  CHECK(file.file);
  CHECK(testing::call(linted(respond_with([&](Response& r) { r.body = file_at(path, 8); })), "GET /").body ==
        "89");

  int n = 0;
  auto stream = testing::call(linted(respond_with([&](Response& r) {
                                r.headers.add("Content-Length", "6");
                                r.body = make_stream([&]() -> std::optional<std::string> {
                                  if (n == 3) return std::nullopt;
                                  ++n;
                                  return std::string("ab");
                                });
                              })),
                              "GET /");
  CHECK(stream.body == "ababab");
  CHECK(stream.closed);
  std::remove(path.c_str());
}

TEST_CASE("Lint: accepts delayed responses, complete and streaming", "[lint]") {
  auto complete = testing::call(linted([](Env&) {
                                  return Response::delayed([](Responder r) { r.respond(Response::text(201, "later")); });
                                }),
                                "GET /");
  CHECK(complete.status == 201);
  CHECK(complete.body == "later");
  auto streamed = testing::call(linted([](Env&) {
                                  return Response::delayed([](Responder r) {
                                    auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "4"}});
                                    CHECK(w->write("ab"));
                                    CHECK(w->write("cd"));
                                    w->close();
                                  });
                                }),
                                "GET /");
  CHECK(streamed.body == "abcd");
  CHECK(streamed.closed);
}

TEST_CASE("Lint: accepts no-body statuses, HEAD lengths, extensions and nested Lint", "[lint]") {
  CHECK(testing::call(linted([](Env&) { return Response::error(204); }), "DELETE /x").status == 204);
  CHECK(testing::call(linted([](Env&) {
                        Response r;
                        r.status = 304;
                        r.headers.add("ETag", "\"x\"");
                        return r;
                      }),
                      "GET /")
            .status == 304);
  // A HEAD response may carry the GET length with no body.
  CHECK(testing::call(linted(respond_with([](Response& r) {
                        r.headers.add("Content-Length", "100");
                        r.body = std::string();
                      })),
                      "HEAD /")
            .status == 200);
  // Lint inside Lint, and the input read through both.
  auto echo = [](Env& env) { return Response::text(200, env.input().read_all()); };
  CHECK(testing::call(wrap<Lint>(linted(echo)), "POST /", {}, "payload").body == "payload");

  RecordingInfo info;
  NoHijack io;
  CleanupHandlers cleanup;
  testing::Options o;
  o.setup = [&](Env& env) {
    env.set_object<Informational>(keys::x::informational, &info);
    env.set_object<Hijack>(keys::x::io, &io);
    env.set_bool(keys::x::cleanup, true);
    env.set_object<CleanupHandlers>(keys::x::cleanup_handlers, &cleanup);
    env.set_bool(keys::x::harakiri, true);
    env.set_int(keys::x::request_body_limit, 1 << 20);
    env.set("myapp.user", "alice");
  };
  auto hinted = testing::call(linted([](Env& env) {
                                Headers link{{"Link", "</app.css>; rel=preload"}};
                                CHECK(env.object<Informational>(keys::x::informational)->send(103, link));
                                env.set_bool(keys::x::harakiri_commit, true);
                                return Response::text(200, "ok");
                              }),
                              "GET /", {}, "", o);
  CHECK(hinted.status == 200);
  CHECK(info.sent == std::vector<int>{103});
}

TEST_CASE("Lint: its wrappers keep an input owned by the env alive", "[lint]") {
  struct Tracked final : Input {
    explicit Tracked(bool& gone) : gone_(gone) {}
    ~Tracked() override { gone_ = true; }
    std::size_t read(char* buf, std::size_t n) override {
      if (done_ || n == 0) return 0;
      done_ = true;
      buf[0] = 'z';
      return 1;
    }
    bool seekable() const override { return true; }
    void rewind() override { done_ = false; }
    bool& gone_;
    bool done_ = false;
  };
  bool gone = false;
  testing::Options o;
  o.setup = [&](Env& env) {
    env.set_object<Input>(keys::input, std::shared_ptr<Input>(std::make_shared<Tracked>(gone)));
    env.set(keys::CONTENT_LENGTH, "1");
  };
  App app = [&](Env& env) {
    CHECK_FALSE(gone);
    return Response::text(200, env.input().read_all());
  };
  CHECK(testing::call(wrap<Lint>(wrap<Lint>(app)), "POST /", {}, "", o).body == "z");
}

// ---- env on the way in ---------------------------------------------------------------------------------

TEST_CASE("Lint rejects: REQUEST_METHOD", "[lint][ENV-1]") {
  CHECK(env_breach([](Env& e) { e.set(keys::REQUEST_METHOD, "GE T"); }) == "ENV-1");
  CHECK(env_breach([](Env& e) { e.erase(keys::REQUEST_METHOD); }) == "ENV-1");
}

TEST_CASE("Lint rejects: SCRIPT_NAME/PATH_INFO missing or both empty", "[lint][ENV-2]") {
  CHECK(env_breach([](Env& e) { e.erase(keys::PATH_INFO); }) == "ENV-2");
  CHECK(env_breach([](Env& e) { e.erase(keys::SCRIPT_NAME); }) == "ENV-2");
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, ""); }) == "ENV-2");
}

TEST_CASE("Lint rejects: SCRIPT_NAME form", "[lint][ENV-3]") {
  try {
    testing::Options o;
    o.setup = [](Env& e) { e.set(keys::SCRIPT_NAME, "foo"); };
    testing::call(linted(ok), "GET /", {}, "", o);
    FAIL("no LintError");
  } catch (const LintError& e) {
    CHECK(std::string(e.what()) == "[ENV-3] SCRIPT_NAME must be empty or start with '/', got \"foo\"");
    CHECK(e.rule() == "ENV-3");
  }
  CHECK(env_breach([](Env& e) { e.set(keys::SCRIPT_NAME, "/"); }) == "ENV-3");
  CHECK(env_breach([](Env& e) { e.set(keys::SCRIPT_NAME, "/app/"); }) == "ENV-3");
}

TEST_CASE("Lint rejects: PATH_INFO form", "[lint][ENV-4]") {
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, "x"); }) == "ENV-4");
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, std::string_view("/a\0b", 4)); }) == "ENV-4");
}

TEST_CASE("Lint rejects: dot segments in SCRIPT_NAME or PATH_INFO", "[lint][ENV-5]") {
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, "/admin/.."); }) == "ENV-5");
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, "/a/./b"); }) == "ENV-5");
  CHECK(env_breach([](Env& e) { e.set(keys::SCRIPT_NAME, "/app/.."); }) == "ENV-5");
  CHECK(env_breach([](Env& e) { e.set(keys::PATH_INFO, "/a/..b/.c/d."); }).empty());
}

TEST_CASE("Lint rejects: REQUEST_URI", "[lint][ENV-6]") {
  CHECK(env_breach([](Env& e) { e.erase(keys::REQUEST_URI); }) == "ENV-6");
  CHECK(env_breach([](Env& e) { e.set(keys::REQUEST_URI, "/a b"); }) == "ENV-6");
  CHECK(env_breach([](Env& e) { e.set(keys::REQUEST_URI, "x"); }) == "ENV-6");
}

TEST_CASE("Lint rejects: QUERY_STRING", "[lint][ENV-7]") {
  CHECK(env_breach([](Env& e) { e.erase(keys::QUERY_STRING); }) == "ENV-7");
  CHECK(env_breach([](Env& e) { e.set(keys::QUERY_STRING, "a=1#frag"); }) == "ENV-7");
}

TEST_CASE("Lint rejects: SERVER_NAME/SERVER_PORT", "[lint][ENV-8]") {
  CHECK(env_breach([](Env& e) { e.set(keys::SERVER_PORT, "http"); }) == "ENV-8");
  CHECK(env_breach([](Env& e) { e.set(keys::SERVER_NAME, ""); }) == "ENV-8");
}

TEST_CASE("Lint rejects: HTTP_* names and values", "[lint][ENV-9]") {
  CHECK(env_breach([](Env& e) { e.set("HTTP_x-foo", "1"); }) == "ENV-9");
  CHECK(env_breach([](Env& e) { e.set("HTTP_X_FOO", "a\r\nInjected: 1"); }) == "ENV-9");
}

TEST_CASE("Lint rejects: HTTP_PROXY", "[lint][ENV-10]") {
  CHECK(env_breach([](Env& e) { e.set("HTTP_PROXY", "http://evil"); }) == "ENV-10");
}

TEST_CASE("Lint rejects: HTTP_CONTENT_* and a bad CONTENT_LENGTH", "[lint][ENV-11]") {
  CHECK(env_breach([](Env& e) { e.set("HTTP_CONTENT_TYPE", "text/plain"); }) == "ENV-11");
  CHECK(env_breach([](Env& e) { e.set("HTTP_CONTENT_LENGTH", "3"); }) == "ENV-11");
  CHECK(env_breach([](Env& e) { e.set(keys::CONTENT_LENGTH, "12a"); }) == "ENV-11");
}

TEST_CASE("Lint rejects: SERVER_PROTOCOL", "[lint][ENV-12]") {
  CHECK(env_breach([](Env& e) { e.set(keys::SERVER_PROTOCOL, "SPDY/3"); }) == "ENV-12");
  CHECK(env_breach([](Env& e) { e.erase(keys::SERVER_PROTOCOL); }) == "ENV-12");
}

TEST_CASE("Lint rejects: an HTTP/2 env without Host or with connection-specific fields", "[lint][ENV-16]") {
  auto h2 = [](std::function<void(Env&)> more) {
    return [more](Env& e) {
      e.set(keys::SERVER_PROTOCOL, "HTTP/2");
      e.set(keys::HTTP_HOST, "example.org");
      if (more) more(e);
    };
  };
  CHECK(env_breach(h2({})) == "");
  CHECK(env_breach(h2([](Env& e) { e.set("HTTP_TE", "trailers"); })) == "");
  CHECK(env_breach(h2([](Env& e) { e.erase(keys::HTTP_HOST); })) == "ENV-16");
  CHECK(env_breach(h2([](Env& e) { e.set("HTTP_CONNECTION", "keep-alive"); })) == "ENV-16");
  CHECK(env_breach(h2([](Env& e) { e.set("HTTP_TRANSFER_ENCODING", "chunked"); })) == "ENV-16");
  CHECK(env_breach(h2([](Env& e) { e.set("HTTP_UPGRADE", "websocket"); })) == "ENV-16");
  CHECK(env_breach(h2([](Env& e) { e.set("HTTP_TE", "gzip"); })) == "ENV-16");
  // The same fields in an HTTP/1.1 request are its own business.
  CHECK(env_breach([](Env& e) { e.set("HTTP_CONNECTION", "keep-alive"); }) == "");
}

TEST_CASE("Lint rejects: an HTTP/3 env without Host, with connection-specific fields or without TLS",
          "[lint][ENV-19]") {
  auto h3 = [](std::function<void(Env&)> more) {
    return [more](Env& e) {
      e.set(keys::SERVER_PROTOCOL, "HTTP/3");
      e.set(keys::HTTP_HOST, "example.org");
      e.set(keys::url_scheme, "https");
      e.set(keys::HTTPS, "on");
      if (more) more(e);
    };
  };
  CHECK(env_breach(h3({})) == "");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_TE", "trailers"); })) == "");
  CHECK(env_breach(h3([](Env& e) { e.erase(keys::HTTP_HOST); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_CONNECTION", "keep-alive"); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_KEEP_ALIVE", "5"); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_TRANSFER_ENCODING", "chunked"); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_UPGRADE", "websocket"); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) { e.set("HTTP_TE", "gzip"); })) == "ENV-19");
  CHECK(env_breach(h3([](Env& e) {
          e.set(keys::url_scheme, "http");
          e.erase(keys::HTTPS);
        })) == "ENV-19");
}

TEST_CASE("Lint rejects: REMOTE_ADDR/REMOTE_PORT", "[lint][ENV-13]") {
  CHECK(env_breach([](Env& e) { e.set(keys::REMOTE_PORT, "x"); }) == "ENV-13");
  CHECK(env_breach([](Env& e) { e.set(keys::REMOTE_ADDR, ""); }) == "ENV-13");
}

TEST_CASE("Lint rejects: CGI keys that are not text", "[lint][ENV-14]") {
  CHECK(env_breach([](Env& e) { e.set_int("GATEWAY_INTERFACE", 1); }) == "ENV-14");
}

TEST_CASE("Lint rejects: HTTPS on without the https scheme", "[lint][ENV-17]") {
  CHECK(env_breach([](Env& e) { e.set(keys::HTTPS, "on"); }) == "ENV-17");
  CHECK(env_breach([](Env& e) {
          e.set(keys::HTTPS, "on");
          e.set(keys::url_scheme, "https");
        }).empty());
  CHECK(env_breach([](Env& e) { e.set(keys::HTTPS, "off"); }).empty());  // as a front server may pass it
}

TEST_CASE("Lint rejects: malformed TLS keys", "[lint][ENV-18]") {
  auto tls = [](Env& e) {
    e.set(keys::HTTPS, "on");
    e.set(keys::url_scheme, "https");
  };
  CHECK(env_breach([&](Env& e) {
          tls(e);
          e.set(keys::SSL_PROTOCOL, "TLSv1.3");
          e.set(keys::SSL_CLIENT_VERIFY, "FAILED:certificate has expired");
          e.set(keys::SSL_CLIENT_CERT, "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n");
        }).empty());
  CHECK(env_breach([&](Env& e) {
          tls(e);
          e.set(keys::SSL_PROTOCOL, "1.3");
        }) == "ENV-18");
  CHECK(env_breach([&](Env& e) {
          tls(e);
          e.set(keys::SSL_CLIENT_VERIFY, "yes");
        }) == "ENV-18");
  CHECK(env_breach([&](Env& e) {
          tls(e);
          e.set(keys::SSL_CLIENT_CERT, "MIIB...");
        }) == "ENV-18");
  CHECK(env_breach([](Env& e) { e.set(keys::SSL_PROTOCOL, "TLSv1.3"); }) == "ENV-18");  // TLS keys on http
}

TEST_CASE("Lint rejects: unknown keys under csgi. and csgix.", "[lint][ENV-15]") {
  CHECK(env_breach([](Env& e) { e.set("csgi.foo", "1"); }) == "ENV-15");
  CHECK(env_breach([](Env& e) { e.set_bool("csgix.webtransport", true); }) == "ENV-15");
}

TEST_CASE("Lint accepts the csgi.request.* caches csgi::Request writes", "[lint][ENV-15]") {
  App app = wrap<Lint>([](Env& env) {
    Request req(env);
    std::string out(req.param("y").value_or(""));
    out += "|" + std::string(req.content()) + "|" + std::string(req.cookie("c").value_or(""));
    return Response::text(200, out);
  });
  auto res = testing::call(app, "POST /x?y=1", {{"Cookie", "c=2"}, {"Content-Type", "text/plain"}}, "body");
  CHECK(res.status == 200);
  CHECK(res.body == "1|body|2");
  CHECK(env_breach([](Env& e) { e.set("csgi.requests", "1"); }) == "ENV-15");
}

TEST_CASE("Lint rejects: csgi.version", "[lint][CORE-1]") {
  CHECK(env_breach([](Env& e) { e.set(keys::version, "2.0"); }) == "CORE-1");
}

TEST_CASE("Lint rejects: csgi.url_scheme", "[lint][CORE-2]") {
  CHECK(env_breach([](Env& e) { e.set(keys::url_scheme, "ftp"); }) == "CORE-2");
}

TEST_CASE("Lint rejects: csgi.input missing or stored as its derived type", "[lint][CORE-3]") {
  StringInput derived("x");
  CHECK(env_breach([&](Env& e) { e.set_object(keys::input, &derived); }) == "CORE-3");
  CHECK(env_breach([](Env& e) { e.erase(keys::input); }) == "CORE-3");
}

TEST_CASE("Lint rejects: csgi.errors", "[lint][CORE-4]") {
  CHECK(env_breach([](Env& e) { e.erase(keys::errors); }) == "CORE-4");
}

TEST_CASE("Lint rejects: capability flags that are not booleans", "[lint][CORE-5]") {
  CHECK(env_breach([](Env& e) { e.set(keys::multithread, "1"); }) == "CORE-5");
  CHECK(env_breach([](Env& e) { e.erase(keys::run_once); }) == "CORE-5");
}

TEST_CASE("Lint rejects: a delayed response without csgi.streaming", "[lint][CORE-6]") {
  testing::Options o;
  o.setup = [](Env& e) { e.set_bool(keys::streaming, false); };
  App delayed = [](Env&) { return Response::delayed([](Responder r) { r.respond(Response::text(200, "x")); }); };
  CHECK(breach([&] { testing::call(linted(delayed), "GET /", {}, "", o); }) == "CORE-6");
  CHECK(env_breach([](Env& e) { e.set_int(keys::streaming, 1); }) == "CORE-6");
}

TEST_CASE("Lint rejects: input reads out of contract", "[lint][INPUT-1]") {
  App zero = [](Env& env) {
    char c;
    env.input().read(&c, 0);
    return Response::text(200, "x");
  };
  CHECK(app_breach(zero, "POST /", "abc") == "INPUT-1");
  App all = [](Env& env) { return Response::text(200, env.input().read_all()); };
  // The body is cut short of CONTENT_LENGTH: the input must throw, not end.
  CHECK(app_breach(all, "POST /", "abc", {{"Content-Length", "10"}}) == "INPUT-1");
  // The input gives more than CONTENT_LENGTH.
  CHECK(app_breach(all, "POST /", "abcdef", {{"Content-Length", "2"}}) == "INPUT-1");
}

TEST_CASE("Lint rejects: csgix.input.buffered over a non-seekable input", "[lint][INPUT-2]") {
  NonSeekable in;
  CHECK(env_breach([&](Env& e) { e.set_object<Input>(keys::input, &in); }) == "INPUT-2");
}

TEST_CASE("Lint rejects: extension values of the wrong kind", "[lint][EXT-1]") {
  NoHijack io;
  CHECK(env_breach([](Env& e) { e.set_bool(keys::x::io, true); }) == "EXT-1");
  CHECK(env_breach([&](Env& e) { e.set_object(keys::x::io, &io); }) == "EXT-1");  // stored as NoHijack
  CHECK(env_breach([](Env& e) { e.set(keys::x::harakiri, "yes"); }) == "EXT-1");
  CHECK(env_breach([](Env& e) { e.set_int(keys::x::request_body_limit, -1); }) == "EXT-1");
  CHECK(env_breach([](Env& e) { e.set(keys::x::logger, "stderr"); }) == "EXT-1");
}

TEST_CASE("Lint rejects: csgix.server_stats of the wrong kind", "[lint][EXT-7]") {
  ServerStats stats;
  int not_stats = 0;
  CHECK(env_breach([](Env& e) { e.set(keys::x::server_stats, "stats"); }) == "EXT-7");
  CHECK(env_breach([](Env& e) { e.set_int(keys::x::server_stats, 1); }) == "EXT-7");
  CHECK(env_breach([&](Env& e) { e.set_object(keys::x::server_stats, &not_stats); }) == "EXT-7");
  CHECK(env_breach([](Env& e) { e.set_object<ServerStats>(keys::x::server_stats, nullptr); }) == "EXT-7");
  CHECK(env_breach([&](Env& e) { e.set_object<ServerStats>(keys::x::server_stats, &stats); }).empty());
}

TEST_CASE("Lint rejects: csgix.broadcast that is not a csgi::Broadcast", "[lint][EXT-12]") {
  struct NoHub final : Broadcast {
    std::uint64_t publish(std::string_view, std::string_view) override { return 0; }
    Subscription subscribe(std::string_view, Subscriber, std::optional<std::uint64_t>) override { return {}; }
  } hub;
  CHECK(env_breach([](Env& e) { e.set(keys::x::broadcast, "hub"); }) == "EXT-12");
  CHECK(env_breach([&](Env& e) { e.set_object(keys::x::broadcast, &hub); }) == "EXT-12");  // stored as NoHub
  CHECK(env_breach([&](Env& e) { e.set_object<Broadcast>(keys::x::broadcast, &hub); }).empty());
}

TEST_CASE("Lint rejects: harakiri.commit without csgix.harakiri", "[lint][EXT-3]") {
  CHECK(app_breach([](Env& env) {
          env.set_bool(keys::x::harakiri_commit, true);
          return Response::text(200, "x");
        }) == "EXT-3");
}

TEST_CASE("Lint rejects: csgix.cleanup without handlers", "[lint][EXT-4]") {
  CHECK(env_breach([](Env& e) { e.set_bool(keys::x::cleanup, true); }) == "EXT-4");
}

TEST_CASE("Lint rejects: informational misuse", "[lint][EXT-5]") {
  RecordingInfo info;
  testing::Options o;
  o.setup = [&](Env& e) { e.set_object<Informational>(keys::x::informational, &info); };
  App final_status = [](Env& env) {
    env.object<Informational>(keys::x::informational)->send(200, {});
    return Response::text(200, "x");
  };
  CHECK(breach([&] { testing::call(linted(final_status), "GET /", {}, "", o); }) == "EXT-5");
  App too_late = [](Env& env) {
    Informational* hint = env.object<Informational>(keys::x::informational);
    return Response::delayed([hint](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      hint->send(103, {{"Link", "</a.css>; rel=preload"}});
      w->close();
    });
  };
  CHECK(breach([&] { testing::call(linted(too_late), "GET /", {}, "", o); }) == "EXT-5");
  CHECK(info.sent.empty());
}

// ---- responses on the way out --------------------------------------------------------------------------

TEST_CASE("Lint rejects: status out of range or interim as final", "[lint][RES-1]") {
  CHECK(app_breach(respond_with([](Response& r) { r.status = 42; })) == "RES-1");
  CHECK(app_breach(respond_with([](Response& r) { r.status = 600; })) == "RES-1");
  CHECK(app_breach([](Env&) {
          Response r;
          r.status = 103;
          return r;
        }) == "RES-1");
}

TEST_CASE("Lint rejects: header names", "[lint][RES-2]") {
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("X Foo", "1"); })) == "RES-2");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("X-Foo-", "1"); })) == "RES-2");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("1X", "1"); })) == "RES-2");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Status", "200"); })) == "RES-2");
}

TEST_CASE("Lint rejects: control characters in header values", "[lint][RES-4]") {
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("X-Foo", "a\r\nSet-Cookie: x=1"); })) == "RES-4");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("X-Foo", std::string("a\0b", 3)); })) == "RES-4");
}

TEST_CASE("Lint rejects: a missing Content-Type", "[lint][RES-5]") {
  CHECK(app_breach([](Env&) {
          Response r;
          r.body = std::string("no type");
          return r;
        }) == "RES-5");
}

TEST_CASE("Lint rejects: a body on 1xx/204/304", "[lint][RES-6]") {
  CHECK(app_breach([](Env&) {
          Response r;
          r.status = 204;
          r.body = std::string("x");
          return r;
        }) == "RES-6");
  CHECK(app_breach([](Env&) {
          Response r;
          r.status = 304;
          r.body = make_stream([n = 0]() mutable -> std::optional<std::string> {
            if (n++) return std::nullopt;
            return std::string("x");
          });
          return r;
        }) == "RES-6");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(204, {});
            w->write("x");
            w->close();
          });
        }) == "RES-6");
}

TEST_CASE("Lint rejects: Content-Type/Content-Length on 1xx/204/304", "[lint][RES-7]") {
  CHECK(app_breach([](Env&) {
          Response r;
          r.status = 304;
          r.headers.add("Content-Type", "text/html");
          return r;
        }) == "RES-7");
  CHECK(app_breach([](Env&) {
          Response r;
          r.status = 204;
          r.headers.add("Content-Length", "0");
          return r;
        }) == "RES-7");
}

TEST_CASE("Lint rejects: a Responder used twice or given a delayed body", "[lint][RES-8]") {
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            r.respond(Response::text(200, "one"));
            r.respond(Response::text(200, "two"));
          });
        }) == "RES-8");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}});
            w->close();
            r.respond(Response::text(200, "two"));
          });
        }) == "RES-8");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            r.respond(Response::delayed([](Responder inner) { inner.respond(Response::text(200, "x")); }));
          });
        }) == "RES-8");
}

TEST_CASE("Lint rejects: a null stream", "[lint][RES-9]") {
  CHECK(app_breach(respond_with([](Response& r) { r.body = StreamPtr{}; })) == "RES-9");
}

TEST_CASE("Lint rejects: writer misuse", "[lint][RES-10]") {
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}});
            w->close();
            w->write("late");
          });
        }) == "RES-10");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}});
            w->close();
            w->close();
          });
        }) == "RES-10");
}

TEST_CASE("Lint rejects: bad file bodies", "[lint][RES-11]") {
  std::string path = temp_file("0123456789");
  CHECK(app_breach(respond_with([&](Response& r) { r.body = FileBody::open(path, 11); })) == "RES-11");
  CHECK(app_breach(respond_with([&](Response& r) { r.body = FileBody::open(path, 5, 6); })) == "RES-11");
  CHECK(app_breach(respond_with([](Response& r) { r.body = file_at("/nonexistent/csgi/file"); })) == "RES-11");
  CHECK(app_breach(respond_with([](Response& r) { r.body = file_at("/tmp"); })) == "RES-11");
  CHECK(app_breach(respond_with([](Response& r) { r.body = FileBody{}; })) == "RES-11");
  std::remove(path.c_str());
}

TEST_CASE("Lint rejects: a null SharedBytes", "[lint][RES-12]") {
  CHECK(app_breach(respond_with([](Response& r) { r.body = SharedBytes{}; })) == "RES-12");
}

TEST_CASE("Lint rejects: Content-Length that does not match the body", "[lint][RES-13]") {
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Content-Length", "3"); })) == "RES-13");
  CHECK(app_breach(respond_with([](Response& r) {
          r.headers.add("Content-Length", "2");
          r.headers.add("Content-Length", "2");
        })) == "RES-13");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Content-Length", "two"); })) == "RES-13");
  CHECK(app_breach(respond_with([](Response& r) {
          r.headers.add("Content-Length", "10");
          r.body = make_stream([n = 0]() mutable -> std::optional<std::string> {
            if (n++ == 2) return std::nullopt;
            return std::string("abc");
          });
        })) == "RES-13");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "5"}});
            w->write("abc");
            w->close();
          });
        }) == "RES-13");
  CHECK(app_breach([](Env&) {
          return Response::delayed([](Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Content-Length", "2"}});
            w->write("abc");
          });
        }) == "RES-13");
}

TEST_CASE("Lint rejects: hop-by-hop headers", "[lint][RES-14]") {
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Transfer-Encoding", "chunked"); })) == "RES-14");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Connection", "close"); })) == "RES-14");
  CHECK(app_breach(respond_with([](Response& r) { r.headers.add("Upgrade", "websocket"); })) == "RES-14");
}

namespace {
/// A text stream "a", "b" ending with `trailers`.
App stream_with_trailers(Headers trailers) {
  return respond_with([trailers](Response& r) {
    r.headers.add("Trailer", "grpc-status");
    r.body = make_stream([n = 0]() mutable -> std::optional<std::string> {
      if (n == 2) return std::nullopt;
      return std::string(1, static_cast<char>('a' + n++));
    }, {}, [trailers] { return trailers; });
  });
}

/// A streaming writer that sets `trailers` (before or after close()).
App writer_with_trailers(Headers trailers, bool after_close = false) {
  return [trailers, after_close](Env&) {
    return Response::delayed([trailers, after_close](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status"}});
      w->write("ab");
      if (!after_close) w->set_trailers(trailers);
      w->close();
      if (after_close) w->set_trailers(trailers);
    });
  };
}
}  // namespace

TEST_CASE("Lint: trailers on a stream and a writer pass through, announced by Trailer", "[lint][RES-15]") {
  auto s = testing::call(linted(stream_with_trailers({{"grpc-status", "0"}, {"Server-Timing", "db;dur=5"}})), "GET /");
  CHECK(s.body == "ab");
  CHECK(s.header("Trailer") == "grpc-status");
  CHECK(s.trailers == Headers{{"grpc-status", "0"}, {"Server-Timing", "db;dur=5"}});
  auto w = testing::call(linted(writer_with_trailers({{"grpc-status", "0"}})), "GET /");
  CHECK(w.body == "ab");
  CHECK(w.trailers == Headers{{"grpc-status", "0"}});
}

TEST_CASE("Lint rejects: trailer fields that frame, route or control the response", "[lint][RES-15]") {
  for (const char* name : {"Content-Length", "Transfer-Encoding", "Trailer", "Content-Type", "Host", "Set-Cookie",
                           "Cache-Control", "content-encoding", "Authorization"}) {
    INFO(name);
    CHECK(app_breach(stream_with_trailers({{name, "1"}})) == "RES-15");
    CHECK(app_breach(writer_with_trailers({{name, "1"}})) == "RES-15");
  }
  CHECK(app_breach(writer_with_trailers({{"grpc-status", "0"}}, true)) == "RES-15");
  CHECK(app_breach(stream_with_trailers({{"bad name", "0"}})) == "RES-2");
  CHECK(app_breach(writer_with_trailers({{"grpc-message", "a\r\nb"}})) == "RES-4");
}

TEST_CASE("trailer_field_forbidden names framing, routing and control fields only", "[RES-15]") {
  CHECK(trailer_field_forbidden("content-length"));
  CHECK(trailer_field_forbidden("TRAILER"));
  CHECK(trailer_field_forbidden(":status"));
  CHECK_FALSE(trailer_field_forbidden("grpc-status"));
  CHECK_FALSE(trailer_field_forbidden("Server-Timing"));
  CHECK_FALSE(trailer_field_forbidden("Digest"));
  CHECK_FALSE(trailer_field_forbidden("Content-Digest"));
}

TEST_CASE("Lint rejects: SCRIPT_NAME/PATH_INFO not restored", "[lint][MW-3]") {
  App leaky = [](Env& env) {
    env.set(keys::PATH_INFO, "/changed");
    return Response::text(200, "x");
  };
  CHECK(app_breach(leaky) == "MW-3");
}

TEST_CASE("Lint rejects: keys added under the reserved namespaces", "[lint][MW-5]") {
  CHECK(app_breach([](Env& env) {
          env.set("csgi.cache", "1");
          return Response::text(200, "x");
        }) == "MW-5");
}

TEST_CASE("Lint: rules() lists each ID once, in the AREA-n form", "[lint]") {
  auto rules = Lint::rules();
  REQUIRE(rules.size() > 30);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    auto dash = rules[i].find('-');
    REQUIRE(dash != std::string_view::npos);
    for (std::size_t j = i + 1; j < rules.size(); ++j) CHECK(rules[i] != rules[j]);
  }
}

TEST_CASE("Lint: check_env and check_head are usable alone", "[lint]") {
  Env env;
  CHECK(breach([&] { Lint::check_env(env); }) == "ENV-1");
  CHECK(breach([] { Lint::check_head(200, {{"Content-Type", "text/plain"}}); }).empty());
  CHECK(breach([] { Lint::check_head(200, {}); }) == "RES-5");
}
