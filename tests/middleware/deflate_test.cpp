#include "csgi/middleware/deflate.hpp"

#include <zlib.h>

#include <catch2/catch.hpp>

#include "csgi/middleware/content_length.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;

namespace {

/// Inflates gzip or zlib data; with `partial`, what can be decoded so far (no end of stream needed).
std::string inflate_all(std::string_view in, bool partial = false) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 32) == Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  int rc;
  do {
    char buf[4096];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_SYNC_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
  inflateEnd(&z);
  if (!partial) CHECK(rc == Z_STREAM_END);
  return out;
}

std::string text_body() {
  std::string s;
  for (int i = 0; s.size() < 4096; ++i) s += "line " + std::to_string(i) + " of some compressible text\n";
  return s;
}

App deflated(App inner, DeflateOptions o = {}) {
  return mwtest::linted(std::move(inner), [o](App a) { return wrap<Deflate>(a, o); });
}

App text_app(std::string body = text_body(), Headers extra = {}, int status = 200) {
  return [=](Env&) {
    Response r = Response::text(status, body, "text/html; charset=utf-8");
    for (const Header& h : extra) r.headers.add(h.name, h.value);
    return r;
  };
}

}  // namespace

TEST_CASE("deflate compresses every body kind with gzip", "[deflate]") {
  mwtest::TempDir dir;
  std::string body = text_body();
  auto file = dir.write("page.html", body);
  for (Kind k : mwtest::all_kinds()) {
    INFO("body kind " << mwtest::kind_name(k));
    auto app = deflated(mwtest::body_app(k, 200, {{"Content-Type", "text/html"}, {"ETag", "\"e1\""}}, body, file.string()));
    auto r = testing::call(app, "GET /", {{"Accept-Encoding", "gzip, deflate"}});
    CHECK(r.status == 200);
    CHECK(r.header("Content-Encoding") == "gzip");
    CHECK(r.header("Vary") == "Accept-Encoding");
    CHECK(r.header("ETag") == "W/\"e1\"");
    CHECK_FALSE(r.headers.has("Content-Length"));
    REQUIRE(r.body.size() > 2);
    CHECK(static_cast<unsigned char>(r.body[0]) == 0x1f);  // gzip magic
    CHECK(r.body.size() < body.size());
    CHECK(inflate_all(r.body) == body);
    auto z = testing::call(app, "GET /", {{"Accept-Encoding", "deflate"}});
    CHECK(z.header("Content-Encoding") == "deflate");
    CHECK(static_cast<unsigned char>(z.body[0]) == 0x78);  // zlib header
    CHECK(inflate_all(z.body) == body);
  }
}

TEST_CASE("deflate: content_length outside measures the compressed complete body", "[deflate]") {
  auto app = mwtest::lint(wrap<ContentLength>(mwtest::lint(wrap<Deflate>(mwtest::lint(text_app())))));
  auto r = testing::call(app, "GET /", {{"Accept-Encoding", "gzip"}});
  CHECK(r.header("Content-Length") == std::to_string(r.body.size()));
}

TEST_CASE("deflate honours Accept-Encoding q-values", "[deflate]") {
  auto app = deflated(text_app());
  auto coding = [&](std::string ae) {
    auto r = testing::call(app, "GET /", {{"Accept-Encoding", ae}});
    std::string ce = r.header("Content-Encoding");
    if (!ce.empty()) CHECK(inflate_all(r.body) == text_body());
    else CHECK(r.body == text_body());
    return ce;
  };
  CHECK(coding("gzip") == "gzip");
  CHECK(coding("x-gzip") == "gzip");
  CHECK(coding("GZIP") == "gzip");
  CHECK(coding("deflate") == "deflate");
  CHECK(coding("gzip;q=0, deflate") == "deflate");
  CHECK(coding("gzip;q=0.5, deflate;q=0.8") == "deflate");
  CHECK(coding("gzip;q=0.8, deflate;q=0.8") == "gzip");
  CHECK(coding("gzip;q=0.000") == "");
  CHECK(coding("gzip;q=0, deflate;q=0") == "");
  CHECK(coding("*") == "gzip");
  CHECK(coding("*;q=0") == "");
  CHECK(coding("*;q=0, deflate;q=0.1") == "deflate");
  CHECK(coding("identity") == "");
  CHECK(coding("br") == "");
  CHECK(coding("gzip;q=garbage") == "");
  CHECK(coding(" , ,gzip ; q=1 ,") == "gzip");
  CHECK(testing::call(app, "GET /").header("Content-Encoding").empty());
}

TEST_CASE("deflate skips what must not or need not be compressed", "[deflate]") {
  std::vector<std::pair<std::string, std::string>> ae = {{"Accept-Encoding", "gzip"}};
  auto unchanged = [&](const App& app, const std::string& method = "GET") {
    auto r = testing::call(app, method + " /", ae);
    CHECK(r.header("Content-Encoding") != "gzip");
    return r;
  };
  unchanged(deflated(text_app()), "HEAD");
  unchanged(deflated(text_app("tiny")));
  unchanged(deflated(text_app(text_body(), {{"Cache-Control", "public, no-transform"}})));
  App png = [](Env&) { return Response::text(200, text_body(), "image/png"); };
  CHECK_FALSE(unchanged(deflated(png)).headers.has("Vary"));
  App encoded = [](Env&) {
    Response r = Response::text(200, text_body(), "text/plain");
    r.headers.add("Content-Encoding", "br");
    return r;
  };
  CHECK(unchanged(deflated(encoded)).header("Content-Encoding") == "br");
  App partial = [](Env&) {
    Response r = Response::text(206, text_body(), "text/plain");
    r.headers.add("Content-Range", "bytes 0-4095/10000");
    return r;
  };
  CHECK(unchanged(deflated(partial)).status == 206);
  App not_modified = [](Env&) {
    Response r;
    r.status = 304;
    return r;
  };
  CHECK(unchanged(deflated(not_modified)).status == 304);
  testing::Options skip;
  skip.setup = [](Env& env) { env.set_bool("deflate.skip", true); };
  CHECK_FALSE(testing::call(deflated(text_app()), "GET /", ae, {}, skip).headers.has("Content-Encoding"));
  DeflateOptions only_json;
  only_json.compressible = [](std::string_view t) { return t == "application/json"; };
  unchanged(deflated(text_app(), only_json));
  DeflateOptions level0;
  level0.level = 0;
  CHECK_THROWS_AS(Deflate(text_app(), level0), std::invalid_argument);
}

TEST_CASE("deflate: Vary on every compressible response, merged with an existing Vary", "[deflate]") {
  CHECK(testing::call(deflated(text_app()), "GET /").header("Vary") == "Accept-Encoding");
  CHECK(testing::call(deflated(text_app(text_body(), {{"Vary", "Cookie"}})), "GET /").header("Vary") ==
        "Cookie, Accept-Encoding");
  CHECK(testing::call(deflated(text_app(text_body(), {{"Vary", "accept-encoding"}})), "GET /").header("Vary") ==
        "accept-encoding");
  CHECK(testing::call(deflated(text_app(text_body(), {{"Vary", "*"}})), "GET /").header("Vary") == "*");
}

namespace {

/// A Responder that records every write separately.
struct Chunks final : ResponderImpl {
  struct W final : Writer {
    std::vector<std::string>* out;
    bool write(std::string_view c) override {
      out->emplace_back(c);
      return true;
    }
    void close() override {}
  };
  Headers headers;
  std::vector<std::string> writes;
  void respond(Response) override { FAIL("expected a streaming answer"); }
  WriterPtr start(int, Headers h) override {
    headers = std::move(h);
    auto w = std::make_shared<W>();
    w->out = &writes;
    return w;
  }
};

}  // namespace

TEST_CASE("deflate flushes each streamed chunk so it can be decoded at once", "[deflate][streaming]") {
  const std::vector<std::string> parts = {"<p>first chunk</p>\n", "<p>second chunk</p>\n", "<p>third</p>\n"};
  SECTION("streaming Writer") {
    // The test drives the writer step by step and checks the output after each write.
    std::shared_ptr<WriterPtr> w = std::make_shared<WriterPtr>();
    App app = [w](Env&) {
      return Response::delayed([w](Responder r) { *w = r.start(200, {{"Content-Type", "text/html"}}); });
    };
    Deflate d(app);
    Env env;
    env.set(keys::REQUEST_METHOD, "GET");
    env.set(keys::HTTP_ACCEPT_ENCODING, "gzip");
    Response res = d(env);
    auto rec = std::make_shared<Chunks>();
    std::get<Delayed>(res.body)(Responder(rec));
    CHECK(rec->headers.get("Content-Encoding") == "gzip");
    std::string sent, expect;
    for (const std::string& p : parts) {
      (*w)->write(p);
      expect += p;
      for (const std::string& c : rec->writes) sent += c;
      rec->writes.clear();
      CHECK(inflate_all(sent, true) == expect);
    }
    (*w)->close();
    for (const std::string& c : rec->writes) sent += c;
    CHECK(inflate_all(sent) == expect);
  }
  SECTION("pull stream") {
    App app = [&](Env&) {
      auto i = std::make_shared<std::size_t>(0);
      Response r;
      r.headers.add("Content-Type", "text/html");
      r.body = make_stream([i, &parts]() -> std::optional<std::string> {
        if (*i == parts.size()) return std::nullopt;
        return parts[(*i)++];
      });
      return r;
    };
    Deflate d(app);
    Env env;
    env.set(keys::REQUEST_METHOD, "GET");
    env.set(keys::HTTP_ACCEPT_ENCODING, "gzip");
    Response res = d(env);
    auto& s = std::get<StreamPtr>(res.body);
    std::string sent, expect, chunk;
    for (const std::string& p : parts) {
      REQUIRE(s->next(chunk));
      sent += chunk;
      expect += p;
      CHECK(inflate_all(sent, true) == expect);
    }
    while (s->next(chunk)) sent += chunk;
    s->close();
    CHECK(inflate_all(sent) == expect);
  }
}

TEST_CASE("deflate handles large bodies in many chunks", "[deflate][streaming]") {
  std::string big;
  for (unsigned long i = 0; big.size() < 3'000'000; ++i) big += std::to_string(i * 7919) + ",";
  mwtest::TempDir dir;
  auto file = dir.write("big.txt", big);
  for (Kind k : {Kind::string, Kind::file, Kind::stream, Kind::writer}) {
    INFO(mwtest::kind_name(k));
    auto app = deflated(mwtest::body_app(k, 200, {{"Content-Type", "text/plain"}}, big, file.string(), 50));
    auto r = testing::call(app, "GET /", {{"Accept-Encoding", "gzip"}});
    CHECK(inflate_all(r.body) == big);
  }
}
