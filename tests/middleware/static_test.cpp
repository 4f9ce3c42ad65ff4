#include "csgi/middleware/static.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/http_date.hpp"
#include "csgi/middleware/static_prefix.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::TempDir;
namespace fs = std::filesystem;

namespace {

std::string digits(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('0' + i % 10));
  return s;
}

struct Site {
  TempDir dir;
  std::string body = digits(1000);
  Site() {
    dir.write("file.txt", body);
    dir.write("page.html", "<p>hi</p>");
    dir.write("data.bin", std::string("\x00\x01\x02", 3));
    dir.write("noext", "x");
    dir.write("docs/index.html", "docs index");
    dir.write("empty/.keep", "");
    dir.write("app.js", "console.log(1)");
    dir.write("app.js.gz", "GZ-BYTES");
    dir.write("app.js.br", "BR-BYTES");
    dir.write("only.css", "body{}");
    dir.write("only.css.gz", "GZ-CSS");
    dir.write("caf\xc3\xa9 & co.txt", "unicode name");
  }
  StaticOptions options() const {
    StaticOptions o;
    o.root = dir.str();
    return o;
  }
};

testing::TestResponse get(const App& app, const std::string& target, std::vector<std::pair<std::string, std::string>> h = {},
                          const std::string& method = "GET") {
  return testing::call(app, method + " " + target, std::move(h));
}

}  // namespace

TEST_CASE("static serves files as file bodies with type, length and validators", "[static]") {
  Site s;
  auto o = s.options();
  o.cache = false;  // with the cache a small file goes out from memory (file_cache_test.cpp)
  auto app = mwtest::lint(Static(o));
  auto r = get(app, "/file.txt");
  CHECK(r.status == 200);
  CHECK(r.file);
  CHECK(r.body == s.body);
  CHECK(r.header("Content-Type") == "text/plain; charset=utf-8");
  CHECK(r.header("Content-Length") == "1000");
  CHECK(r.header("Accept-Ranges") == "bytes");
  CHECK(r.header("ETag").front() == '"');
  CHECK(parse_http_date(r.header("Last-Modified")).has_value());
  CHECK_FALSE(r.headers.has("Cache-Control"));
  CHECK(get(app, "/page.html").header("Content-Type") == "text/html; charset=utf-8");
  CHECK(get(app, "/data.bin").header("Content-Type") == "application/octet-stream");
  CHECK(get(app, "/noext").header("Content-Type") == "application/octet-stream");
  CHECK(get(app, "/caf%C3%A9%20%26%20co.txt").body == "unicode name");
  CHECK(get(app, "/missing.txt").status == 404);
  CHECK(get(app, "/file.txt/").status == 404);
}

TEST_CASE("static: HEAD keeps the headers without a body; other methods get 405", "[static]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto r = get(app, "/file.txt", {}, "HEAD");
  CHECK(r.status == 200);
  CHECK(r.body.empty());
  CHECK(r.header("Content-Length") == "1000");
  auto p = get(app, "/file.txt", {}, "POST");
  CHECK(p.status == 405);
  CHECK(p.header("Allow") == "GET, HEAD");
}

TEST_CASE("static: index files and directory redirects", "[static]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto r = get(app, "/docs");
  CHECK(r.status == 301);
  CHECK(r.header("Location") == "/docs/");
  CHECK(get(app, "/docs?x=1").header("Location") == "/docs/?x=1");
  CHECK(get(app, "/docs/").body == "docs index");
  CHECK(get(app, "/empty/").status == 403);  // no index, no listing
  testing::Options mounted;
  mounted.script_name = "/files";
  CHECK(testing::call(app, "GET /files/docs", {}, {}, mounted).header("Location") == "/files/docs/");
}

TEST_CASE("static: a directory redirect never names another host and escapes what it echoes", "[static]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto with = [&](std::string script, std::string path, std::string query) {
    testing::Options o;
    o.setup = [=](Env& env) {
      env.set(keys::SCRIPT_NAME, script);
      env.set(keys::PATH_INFO, path);
      env.set(keys::QUERY_STRING, query);
    };
    return testing::call(Static(s.options()), "GET /", {}, {}, o);
  };
  // "//docs/" is a network-path reference: a browser would go to the host "docs".
  CHECK(get(app, "//docs").header("Location") == "/docs/");
  CHECK(with("", "//docs", "").header("Location") == "/docs/");
  CHECK(with("", "///docs//", "").status == 200);
  CHECK(with("//files", "//docs", "").header("Location") == "/files/docs/");
  CHECK(with("", "/./docs", "").header("Location") == "/docs/");
  // The query is kept, percent-encoded where a URI may not hold it; the body is HTML-escaped.
  auto r = with("", "/docs", "a=%41&q=\"><script>alert(1)</script> x#y");
  CHECK(r.status == 301);
  CHECK(r.header("Location") == "/docs/?a=%41&q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E%20x%23y");
  CHECK(r.body.find("<script>") == std::string::npos);
  CHECK(r.body.find('"', r.body.find('"') + 1) == r.body.rfind('"'));  // one quoted attribute, unbroken
  auto amp = with("", "/docs", "a=1&b=2");
  CHECK(amp.header("Location") == "/docs/?a=1&b=2");
  CHECK(amp.body.find("href=\"/docs/?a=1&amp;b=2\"") != std::string::npos);
  CHECK(with("", "/docs", "%zz%4").header("Location") == "/docs/?%25zz%254");
}

TEST_CASE("static: If-None-Match and If-Modified-Since give 304 without entity headers", "[static]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto first = get(app, "/file.txt");
  std::string etag = first.header("ETag"), lm = first.header("Last-Modified");
  auto r = get(app, "/file.txt", {{"If-None-Match", etag}});
  CHECK(r.status == 304);
  CHECK(r.body.empty());
  CHECK_FALSE(r.headers.has("Content-Type"));
  CHECK_FALSE(r.headers.has("Content-Length"));
  CHECK(r.header("ETag") == etag);
  CHECK(get(app, "/file.txt", {{"If-None-Match", "\"other\", W/" + etag}}).status == 304);
  CHECK(get(app, "/file.txt", {{"If-None-Match", "*"}}).status == 304);
  CHECK(get(app, "/file.txt", {{"If-None-Match", "\"other\""}}).status == 200);
  CHECK(get(app, "/file.txt", {{"If-Modified-Since", lm}}).status == 304);
  CHECK(get(app, "/file.txt", {{"If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT"}}).status == 200);
  CHECK(get(app, "/file.txt", {{"If-Modified-Since", "garbage"}}).status == 200);
  // If-None-Match wins over If-Modified-Since.
  CHECK(get(app, "/file.txt", {{"If-None-Match", "\"other\""}, {"If-Modified-Since", lm}}).status == 200);
}

TEST_CASE("static: Cache-Control and switches for validators", "[static]") {
  Site s;
  auto o = s.options();
  o.cache_control = "public, max-age=3600";
  o.etag = false;
  o.last_modified = false;
  auto r = get(mwtest::lint(Static(o)), "/file.txt");
  CHECK(r.header("Cache-Control") == "public, max-age=3600");
  CHECK_FALSE(r.headers.has("ETag"));
  CHECK_FALSE(r.headers.has("Last-Modified"));
}

TEST_CASE("static: single ranges", "[static][range]") {
  Site s;
  auto o = s.options();
  o.cache = false;  // ranges of a file body stay file bodies (sendfile)
  auto app = mwtest::lint(Static(o));
  auto r = get(app, "/file.txt", {{"Range", "bytes=10-19"}});
  CHECK(r.status == 206);
  CHECK(r.file);
  CHECK(r.body == s.body.substr(10, 10));
  CHECK(r.header("Content-Range") == "bytes 10-19/1000");
  CHECK(r.header("Content-Length") == "10");
  CHECK(get(app, "/file.txt", {{"Range", "bytes=-5"}}).body == s.body.substr(995));
  CHECK(get(app, "/file.txt", {{"Range", "bytes=990-"}}).body == s.body.substr(990));
  CHECK(get(app, "/file.txt", {{"Range", "bytes=990-5000"}}).header("Content-Range") == "bytes 990-999/1000");
  auto bad = get(app, "/file.txt", {{"Range", "bytes=5000-6000"}});
  CHECK(bad.status == 416);
  CHECK(bad.header("Content-Range") == "bytes */1000");
  CHECK(get(app, "/file.txt", {{"Range", "lines=1-2"}}).status == 200);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=abc"}}).status == 200);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=10-19"}}, "HEAD").status == 200);  // ranges are for GET
}

TEST_CASE("static: If-Range decides between the range and the whole file", "[static][range]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto first = get(app, "/file.txt");
  CHECK(get(app, "/file.txt", {{"Range", "bytes=0-0"}, {"If-Range", first.header("ETag")}}).status == 206);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=0-0"}, {"If-Range", "\"stale\""}}).status == 200);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=0-0"}, {"If-Range", first.header("Last-Modified")}}).status == 206);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=0-0"}, {"If-Range", "Sun, 06 Nov 1994 08:49:37 GMT"}}).status == 200);
}

TEST_CASE("static: multiple ranges as multipart/byteranges", "[static][range]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  auto r = get(app, "/file.txt", {{"Range", "bytes=0-4, 100-104, -3"}});
  REQUIRE(r.status == 206);
  std::string ct = r.header("Content-Type");
  REQUIRE(ct.rfind("multipart/byteranges; boundary=", 0) == 0);
  std::string b = ct.substr(ct.find('=') + 1);
  std::string expected;
  auto part = [&](std::size_t a, std::size_t z) {
    expected += "--" + b + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes " + std::to_string(a) +
                "-" + std::to_string(z) + "/1000\r\n\r\n" + s.body.substr(a, z - a + 1) + "\r\n";
  };
  part(0, 4);
  part(100, 104);
  part(997, 999);
  expected += "--" + b + "--\r\n";
  CHECK(r.body == expected);
  CHECK(r.header("Content-Length") == std::to_string(expected.size()));  // Lint checked it too
  // Overlapping and adjacent ranges are merged; a single merged range is a plain 206.
  auto merged = get(app, "/file.txt", {{"Range", "bytes=0-10, 5-20, 21-30"}});
  CHECK(merged.status == 206);
  CHECK(merged.header("Content-Range") == "bytes 0-30/1000");
}

TEST_CASE("static: absurd range requests get the whole file, never a loop", "[static][range]") {
  Site s;
  auto app = mwtest::lint(Static(s.options()));
  std::string many = "bytes=";
  for (int i = 0; i < 200; ++i) many += std::to_string(i * 2) + "-" + std::to_string(i * 2) + ",";
  auto r = get(app, "/file.txt", {{"Range", many}});
  CHECK(r.status == 200);  // over max_ranges
  CHECK(r.body == s.body);
  std::string overlapping = "bytes=";
  for (int i = 0; i < 10; ++i) overlapping += "0-999,";
  CHECK(get(app, "/file.txt", {{"Range", overlapping}}).status == 200);  // adds up to more than the file
  CHECK(get(app, "/file.txt", {{"Range", "bytes=0-99999999999999999999999"}}).status == 200);
  CHECK(get(app, "/file.txt", {{"Range", "bytes=" + std::string(10000, ',')}}).status == 200);
  auto o = s.options();
  o.max_ranges = 2;
  CHECK(get(mwtest::lint(Static(o)), "/file.txt", {{"Range", "bytes=0-1,5-6,9-10"}}).status == 200);
}

TEST_CASE("static: precompressed siblings when Accept-Encoding allows", "[static][precompressed]") {
  Site s;
  auto o = s.options();
  o.precompressed = true;
  auto app = mwtest::lint(Static(o));
  auto br = get(app, "/app.js", {{"Accept-Encoding", "gzip, br"}});
  CHECK(br.body == "BR-BYTES");
  CHECK(br.header("Content-Encoding") == "br");
  CHECK(br.header("Vary") == "Accept-Encoding");
  CHECK(br.header("Content-Type").find("javascript") != std::string::npos);
  auto gz = get(app, "/app.js", {{"Accept-Encoding", "gzip, br;q=0"}});
  CHECK(gz.body == "GZ-BYTES");
  CHECK(gz.header("Content-Encoding") == "gzip");
  CHECK(gz.header("ETag") != br.header("ETag"));
  // The client's preference (q) decides between the two; brotli on a tie.
  CHECK(get(app, "/app.js", {{"Accept-Encoding", "br;q=0.5, gzip"}}).header("Content-Encoding") == "gzip");
  CHECK(get(app, "/app.js", {{"Accept-Encoding", "gzip;q=0.5, br;q=0.9"}}).header("Content-Encoding") == "br");
  auto plain = get(app, "/app.js");
  CHECK(plain.body == "console.log(1)");
  CHECK_FALSE(plain.headers.has("Content-Encoding"));
  CHECK(plain.header("Vary") == "Accept-Encoding");
  CHECK(get(app, "/app.js", {{"Accept-Encoding", "identity"}}).body == "console.log(1)");
  CHECK(get(app, "/only.css", {{"Accept-Encoding", "br, gzip"}}).body == "GZ-CSS");
  // A range asks for bytes of the plain file.
  CHECK(get(app, "/app.js", {{"Accept-Encoding", "gzip"}, {"Range", "bytes=0-6"}}).body == "console");
  // 304 for the variant's own ETag.
  CHECK(get(app, "/app.js", {{"Accept-Encoding", "gzip"}, {"If-None-Match", gz.header("ETag")}}).status == 304);
  // Off by default.
  CHECK(get(mwtest::lint(Static(s.options())), "/app.js", {{"Accept-Encoding", "gzip"}}).body == "console.log(1)");
}

TEST_CASE("static_prefix serves its prefixes and falls through otherwise", "[static][static_prefix]") {
  Site s;
  App next = [](Env& env) { return Response::text(200, "app:" + std::string(env.get(keys::PATH_INFO))); };
  StaticPrefixOptions po;
  po.prefixes = {"/docs/", "/file.txt"};
  po.files = s.options();
  auto app = mwtest::linted(next, [&](App a) { return wrap<StaticPrefix>(a, po); });
  CHECK(get(app, "/file.txt").body == s.body);
  CHECK(get(app, "/docs/").body == "docs index");
  CHECK(get(app, "/other").body == "app:/other");
  CHECK(get(app, "/docs/missing").status == 404);
  po.pass_through = true;
  auto through = mwtest::linted(next, [&](App a) { return wrap<StaticPrefix>(a, po); });
  CHECK(get(through, "/docs/missing").body == "app:/docs/missing");
  CHECK(get(through, "/docs/x", {}, "POST").body == "app:/docs/x");
  po.pass_through = false;
  po.prefixes = {"/static/"};
  po.strip_prefix = true;
  auto strip = mwtest::linted(next, [&](App a) { return wrap<StaticPrefix>(a, po); });
  CHECK(get(strip, "/static/file.txt").body == s.body);
  CHECK(get(strip, "/static/docs").header("Location") == "/static/docs/");
  CHECK_THROWS_AS(StaticPrefix(next, StaticPrefixOptions{}), std::invalid_argument);
}

TEST_CASE("static: configuration errors throw from the constructor", "[static]") {
  StaticOptions o;
  CHECK_THROWS_AS(Static(o), std::invalid_argument);
  o.root = "/nonexistent/csgi/root";
  CHECK_THROWS_AS(Static(o), std::system_error);
}
