#include "csgi/core/request.hpp"

#include <catch2/catch.hpp>
#include <cstring>

#include "csgi/core/http_error.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
using V = std::vector<std::string_view>;

namespace {

// An input that counts reads and cannot rewind (like a socket).
class CountingInput final : public Input {
public:
  explicit CountingInput(std::string data) : data_(std::move(data)) {}
  std::size_t read(char* buf, std::size_t n) override {
    ++reads;
    std::size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  int reads = 0;

private:
  std::string data_;
  std::size_t pos_ = 0;
};

void make_env(Env& env, std::string_view method, std::string_view target,
              std::initializer_list<std::pair<std::string_view, std::string_view>> headers, Input* in,
              ConnectionInfo conn = {}) {
  populate_env(env, {method, target}, conn);
  for (auto [n, v] : headers) add_header(env, n, v);
  if (in) env.set_object<Input>(keys::input, in);
}

std::string multipart_body() {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nbody-a\r\n"
         "--XyZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"f.txt\"\r\n"
         "Content-Type: text/plain\r\n\r\nhello file\r\n--XyZ--\r\n";
}

}  // namespace

TEST_CASE("Request: accessors over the env", "[request]") {
  Env env;
  ConnectionInfo conn;
  conn.server_name = "srv";
  conn.server_port = "8080";
  conn.remote_addr = "10.0.0.7";
  conn.remote_port = "5555";
  conn.script_name = "/app";
  make_env(env, "POST", "/app/a%20b/c?x=1&y=%2F",
           {{"Host", "example.com:8080"}, {"User-Agent", "ua/1"}, {"Referer", "http://r/"},
            {"Content-Type", "Application/JSON ; charset=utf-8"}, {"Content-Length", "17"}, {"X-Many", "1"},
            {"X-Many", "2"}},
           nullptr, conn);
  Request req(env);
  CHECK(req.method() == "POST");
  CHECK(req.protocol() == "HTTP/1.1");
  CHECK(req.script_name() == "/app");
  CHECK(req.path_info() == "/a b/c");
  CHECK(req.path() == "/a b/c");
  CHECK(req.request_uri() == "/app/a%20b/c?x=1&y=%2F");
  CHECK(req.query_string() == "x=1&y=%2F");
  CHECK(req.scheme() == "http");
  CHECK_FALSE(req.secure());
  CHECK(req.host() == "example.com:8080");
  CHECK(req.port() == "8080");
  CHECK(req.remote_addr() == "10.0.0.7");
  CHECK(req.remote_port() == "5555");
  CHECK(req.user_agent() == "ua/1");
  CHECK(req.referer() == "http://r/");
  CHECK(req.content_type() == "Application/JSON ; charset=utf-8");
  CHECK(req.media_type() == "Application/JSON");
  CHECK(req.content_length() == 17u);
  CHECK(req.header("user-agent") == "ua/1");
  CHECK(req.header("X-MANY") == "1, 2");
  CHECK(req.header("content-type") == "Application/JSON ; charset=utf-8");
  CHECK_FALSE(req.header("X-Absent"));
  Headers h = req.headers();
  CHECK(h.get("Host") == "example.com:8080");
  CHECK(h.get("X-Many") == "1, 2");
  CHECK(h.get("Content-Length") == "17");
  CHECK(h.get("User-Agent") == "ua/1");
  CHECK(req.base() == "http://example.com:8080/app");
  CHECK(req.uri() == "http://example.com:8080/app/a%20b/c?x=1&y=%2F");
}

TEST_CASE("Request: host, base and uri without a Host header", "[request]") {
  Env env;
  ConnectionInfo conn;
  conn.server_name = "srv";
  conn.server_port = "443";
  conn.url_scheme = "https";
  make_env(env, "GET", "/", {}, nullptr, conn);
  Request req(env);
  CHECK(req.secure());
  CHECK(req.host() == "srv");
  CHECK(req.base() == "https://srv/");
  CHECK(req.uri() == "https://srv/");
  Env e2;
  conn.server_port = "8443";
  make_env(e2, "GET", "/p?q", {}, nullptr, conn);  // a '#' never reaches an app: populate_env answers 400
  CHECK(Request(e2).host() == "srv:8443");
  CHECK(Request(e2).uri() == "https://srv:8443/p?q");
  Env e3;
  make_env(e3, "GET", "/x/%3F%23", {}, nullptr);  // '?' and '#' in the decoded path are re-escaped
  CHECK(Request(e3).uri() == "http://localhost/x/%3F%23");
  CHECK(Request(e3).path() == "/x/?#");
  Env e4;
  ConnectionInfo c4;
  c4.script_name = "/app";
  make_env(e4, "GET", "/app", {}, nullptr, c4);
  CHECK(Request(e4).path() == "/");
  CHECK(Request(e4).uri() == "http://localhost/app");
}

TEST_CASE("Request: query parameters, parsed once and cached in the env", "[request]") {
  Env env;
  make_env(env, "GET", "/?a=1&b=x+y&a=%32&empty=", {}, nullptr);
  CHECK_FALSE(env.contains(request_keys::query));  // lazy
  const Params& q = Request(env).query_parameters();
  CHECK(env.contains(request_keys::query));
  CHECK(q.get_all("a") == V{"1", "2"});
  CHECK(q.get("b") == "x y");
  CHECK(q.get("empty") == "");
  // Another Request on the same env gets the same object.
  CHECK(&Request(env).query_parameters() == &q);
  // A middleware rewriting QUERY_STRING invalidates the cache.
  env.set(keys::QUERY_STRING, "c=3");
  const Params& q2 = Request(env).query_parameters();
  CHECK(q2.get("c") == "3");
  CHECK_FALSE(q2.contains("a"));
}

TEST_CASE("Request: bad query escapes are BadRequest, also through an adapter-like call", "[request]") {
  Env env;
  make_env(env, "GET", "/?a=%zz", {}, nullptr);
  CHECK_THROWS_AS(Request(env).query_parameters(), BadRequest);
  CHECK_THROWS_AS(Request(env).param("a"), BadRequest);
}

TEST_CASE("Request: urlencoded body, parse-once across Request objects", "[request]") {
  Env env;
  CountingInput in("b=2&a=from+body&c=%41");
  make_env(env, "POST", "/?a=from-query", {{"Content-Type", "application/x-www-form-urlencoded; charset=UTF-8"},
                                            {"Content-Length", "21"}},
           &in);
  CHECK(in.reads == 0);
  {
    Request first(env);
    CHECK(first.body_parameters().get("c") == "A");
    CHECK(first.body_parameters().get("a") == "from body");
  }
  int reads = in.reads;
  CHECK(reads > 0);
  Request second(env);
  CHECK(&second.body_parameters() == &Request(env).body_parameters());
  CHECK(second.body_parameters().size() == 3);
  CHECK(in.reads == reads);  // no more reading
  CHECK(second.parameters().get_all("a") == V{"from-query", "from body"});
  CHECK(second.param("b") == "2");
  CHECK(&second.parameters() == &Request(env).parameters());
  // The raw body stays available.
  CHECK(second.content() == "b=2&a=from+body&c=%41");
  CHECK(in.reads == reads);
  CHECK(env.object<FormData>(request_keys::body) != nullptr);
}

TEST_CASE("Request: multipart body with uploads, parsed once", "[request]") {
  Env env;
  CountingInput in(multipart_body());
  make_env(env, "POST", "/?q=1", {{"Content-Type", "multipart/form-data; boundary=XyZ"}}, &in);
  Request req(env);
  CHECK(req.body_parameters().get("a") == "body-a");
  const Upload* up = req.upload("up");
  REQUIRE(up);
  CHECK(up->filename() == "f.txt");
  CHECK(up->content() == "hello file");
  CHECK(req.parameters().get("q") == "1");
  CHECK(req.parameters().get("a") == "body-a");
  int reads = in.reads;
  CHECK(&Request(env).uploads() == &req.uploads());
  CHECK(in.reads == reads);
  // The body was streamed from an input that cannot rewind: content() says so instead of lying.
  CHECK_THROWS_AS(req.content(), std::logic_error);
}

TEST_CASE("Request: multipart after content() parses the cached bytes", "[request]") {
  auto res = testing::call(
      [](Env& env) {
        Request req(env);
        std::string_view raw = req.content();
        std::string out = std::to_string(raw.size()) + ":" + std::string(req.body_parameters().value_or("a", "?")) +
                          ":" + req.upload("up")->content();
        return Response::text(200, out);
      },
      "POST /", {{"Content-Type", "multipart/form-data; boundary=XyZ"}}, multipart_body());
  CHECK(res.status == 200);
  CHECK(res.body == std::to_string(multipart_body().size()) + ":body-a:hello file");
}

TEST_CASE("Request: malformed and oversized bodies", "[request]") {
  SECTION("missing boundary") {
    Env env;
    StringInput in(multipart_body());
    make_env(env, "POST", "/", {{"Content-Type", "multipart/form-data"}}, &in);
    CHECK_THROWS_AS(Request(env).body_parameters(), BadRequest);
  }
  SECTION("truncated multipart") {
    Env env;
    StringInput in(multipart_body().substr(0, 60));
    make_env(env, "POST", "/", {{"Content-Type", "multipart/form-data; boundary=XyZ"}}, &in);
    CHECK_THROWS_AS(Request(env).uploads(), BadRequest);
  }
  SECTION("bad escape in a form body") {
    Env env;
    StringInput in("a=%G0");
    make_env(env, "POST", "/", {{"Content-Type", "application/x-www-form-urlencoded"}}, &in);
    CHECK_THROWS_AS(Request(env).body_parameters(), BadRequest);
  }
  SECTION("form over the limit, by Content-Length and by bytes read") {
    RequestLimits lim;
    lim.max_form_size = 8;
    Env env;
    StringInput in("a=123456789");
    make_env(env, "POST", "/", {{"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Length", "11"}},
             &in);
    CHECK_THROWS_AS(Request(env, lim).body_parameters(), PayloadTooLarge);
    Env e2;
    StringInput in2("a=123456789");
    make_env(e2, "POST", "/", {{"Content-Type", "application/x-www-form-urlencoded"}}, &in2);
    CHECK_THROWS_AS(Request(e2, lim).body_parameters(), PayloadTooLarge);
  }
  SECTION("csgix.body_limit caps multipart bodies") {
    Env env;
    StringInput in(multipart_body());
    make_env(env, "POST", "/", {{"Content-Type", "multipart/form-data; boundary=XyZ"}}, &in);
    env.set_int(keys::x::request_body_limit, 40);
    CHECK_THROWS_AS(Request(env).body_parameters(), PayloadTooLarge);
  }
}

TEST_CASE("Request: other bodies give no parameters and are not read", "[request]") {
  Env env;
  CountingInput in("{\"a\":1}");
  make_env(env, "POST", "/", {{"Content-Type", "application/json"}}, &in);
  Request req(env);
  CHECK(req.body_parameters().empty());
  CHECK(req.uploads().empty());
  CHECK(in.reads == 0);
  CHECK(req.content() == "{\"a\":1}");
  CHECK(req.content() == "{\"a\":1}");
  Env none;
  make_env(none, "GET", "/", {}, nullptr);
  CHECK(Request(none).content().empty());
  CHECK(Request(none).parameters().empty());
}

TEST_CASE("Request: cookies, cached and refreshed when the header changes", "[request]") {
  Env env;
  make_env(env, "GET", "/", {{"Cookie", "a=1; b=\"two words\""}, {"Cookie", "bad; c=3"}}, nullptr);
  Request req(env);
  CHECK(req.cookie("a") == "1");
  CHECK(req.cookie("b") == "two words");
  CHECK(req.cookie("c") == "3");  // repeated Cookie headers are joined with ", " — still parsed
  CHECK(&req.cookies() == &Request(env).cookies());
  env.set(keys::HTTP_COOKIE, "z=9");
  CHECK(req.cookie("z") == "9");
  CHECK_FALSE(req.cookie("a"));
}
