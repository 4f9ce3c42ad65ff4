#include "csgi/middleware/ranges.hpp"

#include <catch2/catch.hpp>

#include "csgi/middleware/conditional_get.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::Kind;

namespace {

const std::string lm = "Wed, 21 Oct 2015 07:28:00 GMT";
const std::string body = "0123456789abcdefghijklmnopqrstuvwxyz";  // 36 bytes

Headers validators() { return {{"Content-Type", "text/plain"}, {"ETag", "\"v1\""}, {"Last-Modified", lm}}; }

App stack(Kind kind, const mwtest::TempDir& dir, Headers h = validators(), int status = 200) {
  auto file = dir.write("body.txt", body);
  return mwtest::linted(mwtest::body_app(kind, status, std::move(h), body, file.string()),
                        [](App a) { return wrap<Ranges>(a); });
}

testing::TestResponse get(const App& app, std::vector<std::pair<std::string, std::string>> h = {},
                          const std::string& method = "GET") {
  return testing::call(app, method + " /x", std::move(h));
}

bool rangeable(Kind k) { return k == Kind::string || k == Kind::shared || k == Kind::file || k == Kind::delayed_complete; }

}  // namespace

TEST_CASE("if_range_matches: a strong ETag octet for octet, or the same Last-Modified instant", "[ranges]") {
  CHECK(if_range_matches("\"v1\"", "\"v1\"", ""));
  CHECK(if_range_matches(" \"v1\" ", "\"v1\"", ""));
  CHECK_FALSE(if_range_matches("\"v2\"", "\"v1\"", lm));
  CHECK_FALSE(if_range_matches("W/\"v1\"", "W/\"v1\"", lm));  // weak never matches
  CHECK_FALSE(if_range_matches("\"v1\"", "W/\"v1\"", lm));
  CHECK_FALSE(if_range_matches("\"v1\"", "", lm));  // a tag is not compared with the date
  CHECK(if_range_matches(lm, "\"v1\"", lm));
  CHECK(if_range_matches("Wednesday, 21-Oct-15 07:28:00 GMT", "", lm));  // same instant, obsolete form
  CHECK_FALSE(if_range_matches("Wed, 21 Oct 2015 07:28:01 GMT", "", lm));
  CHECK_FALSE(if_range_matches(lm, "\"v1\"", ""));
  CHECK_FALSE(if_range_matches("yesterday", "", lm));
  CHECK_FALSE(if_range_matches("", "\"v1\"", lm));
}

TEST_CASE("ranges: one range narrows every rangeable body kind to a 206; a file stays a file", "[ranges]") {
  mwtest::TempDir dir;
  for (Kind k : mwtest::all_kinds()) {
    INFO(mwtest::kind_name(k));
    auto r = get(stack(k, dir), {{"Range", "bytes=10-19"}});
    if (!rangeable(k)) {  // streams and writers have no known length: untouched
      CHECK(r.status == 200);
      CHECK(r.body == body);
      CHECK_FALSE(r.headers.has("Accept-Ranges"));
      continue;
    }
    CHECK(r.status == 206);
    CHECK(r.body == body.substr(10, 10));
    CHECK(r.header("Content-Range") == "bytes 10-19/36");
    CHECK(r.header("Content-Length") == "10");
    CHECK(r.header("Accept-Ranges") == "bytes");
    CHECK(r.file == (k == Kind::file));
    auto whole = get(stack(k, dir));
    CHECK(whole.status == 200);
    CHECK(whole.body == body);
    CHECK(whole.header("Accept-Ranges") == "bytes");
  }
}

TEST_CASE("ranges: several ranges are multipart/byteranges, for files and complete bodies alike", "[ranges]") {
  mwtest::TempDir dir;
  for (Kind k : {Kind::string, Kind::file}) {
    INFO(mwtest::kind_name(k));
    auto r = get(stack(k, dir), {{"Range", "bytes=0-1, 30-, -2"}});
    REQUIRE(r.status == 206);
    std::string ct = r.header("Content-Type");
    REQUIRE(ct.rfind("multipart/byteranges; boundary=", 0) == 0);
    std::string b = ct.substr(ct.find('=') + 1);
    std::string want = "--" + b + "\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/36\r\n\r\n01\r\n" + "--" + b +
                       "\r\nContent-Type: text/plain\r\nContent-Range: bytes 30-35/36\r\n\r\nuvwxyz\r\n--" + b + "--\r\n";
    CHECK(r.body == want);
    CHECK(r.header("Content-Length") == std::to_string(want.size()));
    CHECK_FALSE(r.headers.has("Content-Range"));
  }
}

TEST_CASE("ranges: none satisfiable is 416 with bytes */size; validators kept", "[ranges]") {
  mwtest::TempDir dir;
  for (Kind k : {Kind::string, Kind::file, Kind::delayed_complete}) {
    INFO(mwtest::kind_name(k));
    Headers h = validators();
    h.add("Content-Encoding", "identity");
    auto r = get(stack(k, dir, h), {{"Range", "bytes=36-"}});
    CHECK(r.status == 416);
    CHECK(r.header("Content-Range") == "bytes */36");
    CHECK(r.header("ETag") == "\"v1\"");
    CHECK(r.header("Last-Modified") == lm);
    CHECK_FALSE(r.headers.has("Content-Encoding"));
    CHECK(r.body.find("416") == 0);
  }
}

TEST_CASE("ranges: If-Range picks the range or the whole body by one rule", "[ranges]") {
  mwtest::TempDir dir;
  App app = stack(Kind::file, dir);
  CHECK(get(app, {{"Range", "bytes=0-0"}, {"If-Range", "\"v1\""}}).status == 206);
  CHECK(get(app, {{"Range", "bytes=0-0"}, {"If-Range", lm}}).status == 206);
  auto stale = get(app, {{"Range", "bytes=0-0"}, {"If-Range", "\"v0\""}});
  CHECK(stale.status == 200);
  CHECK(stale.body == body);
  CHECK(get(app, {{"Range", "bytes=0-0"}, {"If-Range", "Sun, 06 Nov 1994 08:49:37 GMT"}}).status == 200);
  CHECK(get(app, {{"Range", "bytes=99-"}, {"If-Range", "\"v0\""}}).status == 200);  // no 416 either
  Headers weak{{"Content-Type", "text/plain"}, {"ETag", "W/\"v1\""}};
  CHECK(get(stack(Kind::file, dir, weak), {{"Range", "bytes=0-0"}, {"If-Range", "W/\"v1\""}}).status == 200);
}

TEST_CASE("ranges: only GET is ranged; other statuses, opted-out and ranged responses pass", "[ranges]") {
  mwtest::TempDir dir;
  auto head = get(stack(Kind::file, dir), {{"Range", "bytes=0-0"}}, "HEAD");
  CHECK(head.status == 200);
  CHECK(head.header("Accept-Ranges") == "bytes");
  CHECK(get(stack(Kind::file, dir), {{"Range", "bytes=0-0"}}, "POST").status == 200);
  CHECK(get(stack(Kind::string, dir, validators(), 404), {{"Range", "bytes=0-0"}}).status == 404);
  Headers none = validators();
  none.add("Accept-Ranges", "none");
  auto opted = get(stack(Kind::file, dir, none), {{"Range", "bytes=0-0"}});
  CHECK(opted.status == 200);
  CHECK(opted.header("Accept-Ranges") == "none");
  CHECK(get(stack(Kind::string, dir), {{"Range", "bytes=abc"}}).status == 200);
  CHECK(get(stack(Kind::string, dir), {{"Range", "lines=0-1"}}).status == 200);
}

TEST_CASE("ranges: a file body's slice is the representation; a path-only file is ranged too", "[ranges]") {
  mwtest::TempDir dir;
  auto path = dir.write("body.txt", body).string();
  App slice = wrap<Ranges>([path](Env&) {
    return Response{200, {{"Content-Type", "text/plain"}}, FileBody::open(path, 10, 10)};
  });
  auto r = get(slice, {{"Range", "bytes=2-3"}});
  CHECK(r.status == 206);
  CHECK(r.body == "cd");
  CHECK(r.header("Content-Range") == "bytes 2-3/10");
  App by_path = wrap<Ranges>([path](Env&) {
    FileBody f;
    f.path = path;
    return Response{200, {{"Content-Type", "text/plain"}}, f};
  });
  auto m = get(by_path, {{"Range", "bytes=0-0,35-35"}});
  CHECK(m.status == 206);
  CHECK(m.body.find("\r\n\r\n0\r\n") != std::string::npos);
  CHECK(m.body.find("\r\n\r\nz\r\n") != std::string::npos);
}

TEST_CASE("ranges: the next app is required; max_ranges bounds the list", "[ranges]") {
  CHECK_THROWS_AS(Ranges(App{}), std::invalid_argument);
  CHECK_THROWS_AS(Ranges([](Env&) { return Response::text(200, "x"); }, RangesOptions{0}), std::invalid_argument);
  App two = wrap<Ranges>([](Env&) { return Response::text(200, body); }, RangesOptions{2});
  CHECK(get(two, {{"Range", "bytes=0-0,2-2,4-4"}}).status == 200);
  CHECK(get(two, {{"Range", "bytes=0-0,2-2"}}).status == 206);
}

TEST_CASE("ranges: outside conditional_get, a matching If-None-Match is 304 before any Range", "[ranges]") {
  mwtest::TempDir dir;
  auto file = dir.write("body.txt", body);
  App app = mwtest::linted(mwtest::body_app(Kind::file, 200, validators(), body, file.string()),
                           [](App a) { return wrap<Ranges>(wrap<ConditionalGet>(a)); });
  CHECK(get(app, {{"Range", "bytes=0-0"}, {"If-None-Match", "\"v1\""}}).status == 304);
  CHECK(get(app, {{"Range", "bytes=0-0"}, {"If-None-Match", "\"v0\""}}).status == 206);
}
