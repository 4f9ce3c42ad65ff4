#include "csgi/middleware/error_document.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;
namespace fs = std::filesystem;

namespace {
struct PageFile {
  fs::path path;
  explicit PageFile(std::string content) {
    std::string tmpl = (fs::temp_directory_path() / "csgi-errdoc-XXXXXX").string();
    path = fs::path(::mkdtemp(tmpl.data())) / "404.html";
    std::ofstream(path) << content;
  }
  ~PageFile() { fs::remove_all(path.parent_path()); }
};

/// 404 for /missing, a page at /errors/404, 500 with a header for /fail; every body kind.
App site(Kind k) {
  return [k](Env& env) -> Response {
    std::string_view p = env.get("PATH_INFO");
    if (p == "/errors/404") return answer(Kind::complete, 200, "<p>custom " + std::string(env.get("error_document.status")) +
                                                                   " for " + std::string(env.get("error_document.PATH_INFO")) + "</p>",
                                          {{"Content-Type", "text/html"}})(env);
    if (p == "/errors/broken") return Response::error(500);
    if (p == "/missing") return answer(k, 404, "plain not found", {{"X-Keep", "1"}, {"ETag", "\"e\""}})(env);
    if (p == "/unauth") return answer(k, 401, "who?", {{"WWW-Authenticate", "Basic realm=\"x\""}})(env);
    return answer(k, 200, "fine")(env);
  };
}
}  // namespace

TEST_CASE("error_document: static page file for every body kind; status and unrelated headers kept") {
  PageFile page("<h1>Not here</h1>");
  for (Kind k : all_kinds) {
    INFO(name(k));
    mw::ErrorDocumentOptions o;
    o.files[404] = page.path.string();
    App app = lint(wrap<mw::ErrorDocument>(site(k), o));
    auto res = testing::call(app, "GET /missing");
    CHECK(res.status == 404);
    CHECK(res.body == "<h1>Not here</h1>");
    CHECK(res.header("Content-Type") == "text/html; charset=utf-8");
    CHECK(res.header("X-Keep") == "1");
    CHECK_FALSE(res.headers.has("ETag"));
    auto ok = testing::call(app, "GET /other");
    CHECK(ok.status == 200);
    CHECK(ok.body == "fine");
  }
}

TEST_CASE("error_document: sub-request through the same app; env restored; WWW-Authenticate kept") {
  for (Kind k : all_kinds) {
    INFO(name(k));
    mw::ErrorDocumentOptions o;
    o.subrequests[404] = "/errors/404";
    o.subrequests[401] = "/errors/404";
    App app = lint(wrap<mw::ErrorDocument>(site(k), o));
    auto res = testing::call(app, "POST /missing?x=1", {}, "body");
    CHECK(res.status == 404);
    CHECK(res.body == "<p>custom 404 for /missing</p>");
    CHECK(res.header("Content-Type") == "text/html");
    auto un = testing::call(app, "GET /unauth");
    CHECK(un.status == 401);
    CHECK(un.header("WWW-Authenticate") == "Basic realm=\"x\"");
  }
}

TEST_CASE("error_document: a failing sub-request leaves the original; configuration errors") {
  mw::ErrorDocumentOptions o;
  o.subrequests[404] = "/errors/broken";
  App app = lint(wrap<mw::ErrorDocument>(site(Kind::complete), o));
  auto res = testing::call(app, "GET /missing");
  CHECK(res.status == 404);
  CHECK(res.body == "plain not found");
  CHECK(res.errors.find("answered 500") != std::string::npos);
  App a = site(Kind::complete);
  CHECK_THROWS_AS(mw::ErrorDocument(a, {{{200, "/x"}}, {}}), std::invalid_argument);
  CHECK_THROWS_AS(mw::ErrorDocument(a, {{{404, "/nonexistent/file.html"}}, {}}), std::invalid_argument);
  CHECK_THROWS_AS(mw::ErrorDocument(a, {{}, {{404, "relative"}}}), std::invalid_argument);
}
