#include "csgi/middleware/bundler/bundler.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "csgi/core/builder.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/test_client.hpp"
#include "bundler_fixture.hpp"
#include "csgi/middleware/bundler/detail/module_graph.hpp"

namespace fs = std::filesystem;
using csgi::mw::Bundler;
using csgi::mw::BundlerOptions;
using csgi::testing::call;
using Freshness = csgi::mw::BundlerOptions::Freshness;
namespace bundler = csgi::mw::bundler;

using namespace bundler_test;

TEST_CASE("bundler: a closure with Node resolution rules", "[bundler]") {
  Tree t;
  t.write("main.js", "var a = require('./lib/a'); var d = require('./data'); var p = require('pkg'); var q = require('./dir');");
  t.write("lib/a.js", "module.exports = require('../shared/b.js') + require('deep/sub');");
  t.write("shared/b.js", "module.exports = 1;");
  t.write("data.json", "{\"k\": \"v\"}");
  t.write("dir/index.js", "module.exports = 'dir';");
  t.write("node_modules/pkg/package.json", "{\"name\": \"pkg\", \"main\": \"./lib/entry\"}");
  t.write("node_modules/pkg/lib/entry.js", "module.exports = 'pkg';");
  t.write("node_modules/deep/sub.js", "module.exports = 'sub';");
  t.write("unrelated.js", "module.exports = 0;");
  auto app = app_of(t.root());

  auto res = call(app, "GET /main");
  REQUIRE(res.status == 200);
  CHECK(res.header("Content-Type") == "application/javascript; charset=utf-8");
  CHECK(res.header("X-Bundle-Modules") == "7");
  auto b = parse(res.body);
  CHECK(set_of(b) == std::set<std::string>{"main.js", "lib/a.js", "shared/b.js", "data.json", "dir/index.js",
                                           "node_modules/pkg/lib/entry.js", "node_modules/deep/sub.js"});
  CHECK(b.paths.front() == "main.js");
  CHECK(b.ids.at("main.js") == b.entry);
  // Dependency lists pair each specifier with its id; a source is the file's text alone (the loader
  // names it by its URL), so each path is on the wire once; JSON stays JSON.
  CHECK_THAT(res.body, Catch::Contains("[\"./lib/a\"," + std::to_string(b.ids.at("lib/a.js")) + "]"));
  CHECK_THAT(res.body, Catch::Contains("\"module.exports = 1;\"]"));
  CHECK_THAT(res.body, !Catch::Contains("sourceURL"));
  for (const auto& p : b.paths) CHECK(count_of(res.body, "\"" + p + "\"") == 1);
  CHECK_THAT(res.body, Catch::Contains("\"{\\\"k\\\": \\\"v\\\"}\""));

  // By package name, and a package's own file by path.
  auto pkg = call(app, "GET /~/pkg");
  REQUIRE(pkg.status == 200);
  CHECK(parse(pkg.body).paths == std::vector<std::string>{"node_modules/pkg/lib/entry.js"});
  CHECK(call(app, "GET /~/nope").status == 404);
}

TEST_CASE("bundler: package.json exports are honoured as in Node", "[bundler]") {
  Tree t;
  t.write("node_modules/ex/package.json",
          R"({"main": "./old.js", "exports": {".": {"import": "./esm.mjs", "require": "./cjs.js"}, "./feature/*": "./lib/*.js"}})");
  t.write("node_modules/ex/cjs.js", "module.exports = 'cjs';");
  t.write("node_modules/ex/old.js", "module.exports = 'old';");
  t.write("node_modules/ex/lib/x.js", "module.exports = 'x';");
  t.write("main.js", "require('ex'); require('ex/feature/x');");
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  REQUIRE(res.status == 200);
  CHECK(set_of(parse(res.body)) ==
        std::set<std::string>{"main.js", "node_modules/ex/cjs.js", "node_modules/ex/lib/x.js"});
  t.write("main2.js", "require('ex/old.js');");
  auto bad = call(app, "GET /main2.js");
  CHECK(bad.status == 404);
  CHECK_THAT(bad.body, Catch::Contains("not exported"));
}

TEST_CASE("bundler: cycles are delivered once each", "[bundler]") {
  Tree t;
  t.write("a.js", "exports.a = 1; var b = require('./b'); exports.sum = function () { return b.b + 1; };");
  t.write("b.js", "var a = require('./a'); exports.b = 2; exports.seen = a.a;");
  t.write("c.js", "require('./c');");  // requires itself
  auto app = app_of(t.root());
  auto res = call(app, "GET /a.js");
  REQUIRE(res.status == 200);
  CHECK(parse(res.body).paths == std::vector<std::string>{"a.js", "b.js"});
  auto self = call(app, "GET /c.js");
  REQUIRE(self.status == 200);
  CHECK(parse(self.body).paths == std::vector<std::string>{"c.js"});
}

TEST_CASE("bundler: a missing module is a 404 the loader reports with the requirer chain", "[bundler]") {
  Tree t;
  t.write("main.js", "require('./a');");
  t.write("a.js", "require('./b');");
  t.write("b.js", "\n\nrequire('./missing');");
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  CHECK(res.status == 404);
  CHECK(res.header("Content-Type") == "application/javascript; charset=utf-8");
  CHECK(res.header("Cache-Control") == "no-store");
  CHECK_THAT(res.body, Catch::StartsWith("csgiRequire.fail({\"status\":404,\"module\":\"./missing\""));
  CHECK_THAT(res.body, Catch::Contains("required from b.js:3"));
  CHECK_THAT(res.body, Catch::Contains("\"chain\":[\"main.js\",\"a.js\",\"b.js\"]"));
  // The entry itself missing.
  auto none = call(app, "GET /nothing/here.js");
  CHECK(none.status == 404);
  CHECK_THAT(none.body, Catch::Contains("\"module\":\"nothing/here.js\""));
}

TEST_CASE("bundler: paths leaving the root are 403", "[bundler]") {
  Tree outside;
  outside.write("secret.js", "module.exports = 'secret';");
  Tree t;
  t.write("main.js", "module.exports = 1;");
  t.write("up.js", "require('../../../../../../etc/passwd');");
  t.write("abs.js", "require('/../secret');");
  fs::create_symlink(outside.dir / "secret.js", t.dir / "link.js");
  fs::create_symlink(outside.dir, t.dir / "linkdir");
  t.write("vialink.js", "require('./link.js');");
  fs::create_symlink(t.dir / "main.js", t.dir / "inside.js");
  auto app = app_of(t.root());

  // The adapter refuses a ".." above the root (ENV-5) before the bundler runs; the bundler refuses one
  // that a layer above puts into PATH_INFO itself.
  for (const char* target : {"GET /../etc/passwd", "GET /a/../../etc/passwd", "GET /%2e%2e/etc/passwd"})
    CHECK_THROWS_AS(call(app, target), csgi::BadRequest);
  auto with_path_info = [&](std::string path_info) {
    csgi::testing::Options o;
    o.setup = [path_info](csgi::Env& e) { e.set(csgi::keys::PATH_INFO, path_info); };
    return call(app, "GET /", {}, {}, o).status;
  };
  CHECK(with_path_info("/../etc/passwd") == 403);
  CHECK(with_path_info("/a/../../etc/passwd") == 403);
  CHECK(with_path_info("/~/../secret") == 403);
  CHECK(call(app, "GET /%252e%252e/etc/passwd").status == 403);  // double-encoded
  CHECK(call(app, "GET /x%252fy").status == 403);
  CHECK(call(app, "GET /link.js").status == 403);
  CHECK(call(app, "GET /linkdir/secret.js").status == 403);
  auto up = call(app, "GET /up.js");
  CHECK(up.status == 403);
  CHECK_THAT(up.body, Catch::Contains("\"chain\":[\"up.js\"]"));
  CHECK(call(app, "GET /abs.js").status == 403);
  CHECK(call(app, "GET /vialink.js").status == 403);
  // A symlink inside the root names its target, as in Node.
  auto in = call(app, "GET /inside.js");
  REQUIRE(in.status == 200);
  CHECK(parse(in.body).paths == std::vector<std::string>{"main.js"});
  // Within the root, '..' is fine.
  CHECK(call(app, "GET /x/../main.js").status == 200);
}

TEST_CASE("bundler: only module sources are served: no dotfiles, config or other files", "[bundler]") {
  Tree t;
  const std::string secret = "SECRET-9f3c";
  t.write(".env", "TOKEN=" + secret);
  t.write(".npmrc", "//registry.npmjs.org/:_authToken=" + secret);
  t.write(".git/config", "[remote] url = " + secret);
  t.write(".git/hooks/post.js", "module.exports = '" + secret + "';");
  t.write(".eslintrc.json", "{\"token\": \"" + secret + "\"}");
  t.write("package.json", "{\"name\": \"app\", \"private\": \"" + secret + "\"}");
  t.write("app/server.conf", "password " + secret);
  t.write("app/notes.txt", secret);
  t.write("app/main.js", "require('./esm.mjs'); require('./c.cjs'); require('./data.json'); require('./notes');");
  t.write("app/esm.mjs", "export const e = 1;");
  t.write("app/c.cjs", "module.exports = 'c';");
  t.write("app/data.json", "{\"k\": 1}");
  t.write("app/notes.js", "module.exports = 'notes';");  // require('./notes') takes it, not notes.txt
  t.write("app/dots.js", "require('../.env');");
  t.write("node_modules/.pnpm/p@1.0.0/node_modules/p/index.js", "module.exports = 'p';");
  fs::create_symlink(t.dir / ".env", t.dir / "app/env.js");
  auto app = app_of(t.root());

  for (const char* target : {"GET /.env", "GET /.npmrc", "GET /.git/config", "GET /.git/hooks/post.js",
                             "GET /.eslintrc.json", "GET /package.json", "GET /app/server.conf", "GET /app/notes.txt",
                             "GET /app/env.js", "GET /app/dots.js", "GET /~/.env"}) {
    INFO(target);
    auto res = call(app, target);
    CHECK(res.status == 404);
    CHECK_THAT(res.body, !Catch::Contains(secret));
  }
  auto main = call(app, "GET /app/main.js");
  REQUIRE(main.status == 200);
  CHECK(set_of(parse(main.body)) ==
        std::set<std::string>{"app/main.js", "app/esm.mjs", "app/c.cjs", "app/data.json", "app/notes.js"});
  CHECK(call(app, "GET /app/esm.mjs").status == 200);
  CHECK(call(app, "GET /app/data.json").status == 200);  // JSON asked for by path (import(expr))
  auto pnpm = call(app, "GET /node_modules/.pnpm/p@1.0.0/node_modules/p/index.js");
  CHECK(pnpm.status == 200);
}

TEST_CASE("bundler: unlexable sources and untransformable ES modules are clear 422 errors, never cached", "[bundler]") {
  Tree t;
  t.write("main.js", "require('./bad');");
  t.write("bad.js", "var ok = 1;\nvar s = 'never closed;\n");
  t.write("esm.js", "import x from './y.js';\nawait x;\n");
  t.write("y.js", "");
  csgi::StringErrorStream log;
  csgi::testing::Options opt;
  opt.setup = [&](csgi::Env& env) { env.set_object(csgi::keys::errors, static_cast<csgi::ErrorStream*>(&log)); };
  BundlerOptions o;
  o.freshness = Freshness::stat;  // deterministic: the fix below is seen at once
  auto b = std::make_shared<Bundler>(t.root(), o);
  csgi::App app = [b](csgi::Env& env) { return (*b)(env); };

  auto res = call(app, "GET /main.js", {}, {}, opt);
  CHECK(res.status == 422);
  CHECK_THAT(res.body, Catch::Contains("bad.js: line 2, column 9: unterminated string literal"));
  CHECK_THAT(res.body, Catch::Contains("\"chain\":[\"main.js\",\"bad.js\"]"));
  CHECK_THAT(log.text(), Catch::Contains("unterminated string literal"));
  auto esm = call(app, "GET /esm.js", {}, {}, opt);
  CHECK(esm.status == 422);
  CHECK_THAT(esm.body, Catch::Contains("esm.js: line 2: top-level await is not supported"));
  t.write("esm.js", "import x from './y.js';\nx;\n");
  auto esm_fixed = call(app, "GET /esm.js", {}, {}, opt);
  CHECK(esm_fixed.status == 200);
  CHECK(parse(esm_fixed.body).paths == std::vector<std::string>{"esm.js", "y.js"});

  t.write("bad.js", "var ok = 1;\nvar s = 'closed';\n");
  auto fixed = call(app, "GET /main.js", {}, {}, opt);
  CHECK(fixed.status == 200);
  CHECK(parse(fixed.body).paths == std::vector<std::string>{"main.js", "bad.js"});
}

TEST_CASE("bundler: one cached bundle serves every mount of the bundler", "[bundler]") {
  Tree t;
  t.write("main.js", "module.exports = require('./dep');");
  t.write("dep.js", "module.exports = 2;");
  Bundler b(t.root());
  csgi::App app = csgi::Builder().mount("/a", [&b](csgi::Env& env) { return b(env); })
                      .mount("/js/b", [&b](csgi::Env& env) { return b(env); })
                      .build();
  auto first = call(app, "GET /a/main.js");
  auto second = call(app, "GET /js/b/main.js");
  REQUIRE(first.status == 200);
  REQUIRE(second.status == 200);
  CHECK(first.body == second.body);
  CHECK(first.header("ETag") == second.header("ETag"));
  CHECK(b.stats().builds == 1);
  CHECK(b.stats().hits == 1);
}

TEST_CASE("bundler: ETag, 304 and Cache-Control", "[bundler]") {
  Tree t;
  t.write("main.js", "module.exports = 1;");
  Bundler b(t.root());
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  auto first = call(app, "GET /main.js");
  REQUIRE(first.status == 200);
  std::string etag = first.header("ETag");
  CHECK(etag.size() > 2);
  CHECK(first.header("Cache-Control") == "no-cache");
  auto again = call(app, "GET /main.js", {{"If-None-Match", etag}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  CHECK(again.header("ETag") == etag);
  CHECK(call(app, "GET /main.js", {{"If-None-Match", "\"other\", W/" + etag}}).status == 304);
  CHECK(call(app, "GET /main.js", {{"If-None-Match", "\"other\""}}).status == 200);
  CHECK(b.stats().builds == 1);
  CHECK(b.stats().hits == 3);

  // The loader: revalidated by default, immutable under its versioned URL.
  auto loader = call(app, "GET /require.js");
  REQUIRE(loader.status == 200);
  CHECK(loader.body == Bundler::loader_source());
  CHECK(loader.header("Cache-Control") == "no-cache");
  std::string v = loader.header("ETag").substr(1, 16);
  CHECK(call(app, "GET /require.js?v=" + v).header("Cache-Control") == "public, max-age=31536000, immutable");
  CHECK(call(app, "GET /require.js", {{"If-None-Match", loader.header("ETag")}}).status == 304);
}

TEST_CASE("bundler: the client loader stays within 200 lines of at most 100 columns", "[bundler]") {
  std::string_view src = Bundler::loader_source();
  REQUIRE(!src.empty());
  CHECK(src.back() == '\n');
  std::size_t lines = 0, widest = 0;
  for (std::size_t at = 0; at < src.size(); ++lines) {
    std::size_t end = src.find('\n', at);
    if (end == std::string_view::npos) end = src.size();
    std::string_view line = src.substr(at, end - at);
    std::size_t columns = 0;  // code points: a comment's "…" is one column
    for (unsigned char c : line) columns += (c & 0xC0) != 0x80;
    widest = std::max(widest, columns);
    at = end + 1;
  }
  CHECK(lines <= 200);
  CHECK(widest <= 100);
}

TEST_CASE("bundler: the loaded set is subtracted; an entry already held answers at once", "[bundler]") {
  Tree t;
  t.write("lib.js", "require('./common'); require('./only-lib');");
  t.write("main.js", "require('./lib'); require('./common'); require('./only-main');");
  t.write("common.js", "");
  t.write("only-lib.js", "");
  t.write("only-main.js", "require('./common');");
  auto app = app_of(t.root());
  auto lib = parse(call(app, "GET /lib.js").body);
  CHECK(set_of(lib) == std::set<std::string>{"lib.js", "common.js", "only-lib.js"});

  auto res = call(app, "GET /main.js?e=" + lib.epoch + "&have=" + have(ids_of(lib)));
  REQUIRE(res.status == 200);
  auto main = parse(res.body);
  CHECK(set_of(main) == std::set<std::string>{"main.js", "only-main.js"});

  // Everything held: an empty bundle naming the entry.
  std::vector<long> all = ids_of(lib);
  for (long i : ids_of(main)) all.push_back(i);
  auto held = call(app, "GET /main.js?e=" + lib.epoch + "&have=" + have(all));
  REQUIRE(held.status == 200);
  auto h = parse(held.body);
  CHECK(h.paths.empty());
  CHECK(h.entry == main.ids.at("main.js"));
  CHECK(held.header("X-Bundle-Modules") == "0");

  // Another epoch's ids mean nothing: the whole closure comes back.
  auto stale = call(app, "GET /main.js?e=000000000000&have=" + have(ids_of(lib)));
  CHECK(parse(stale.body).paths.size() == 5);
  // Trailing zero digits do not change the set (same cached answer).
  CHECK(call(app, "GET /main.js?e=" + lib.epoch + "&have=" + have(ids_of(lib)) + "AAAA").body == res.body);
  CHECK(call(app, "GET /main.js?have=**").status == 400);
}

TEST_CASE("bundler: require(expr) and two-argument require are reported in a header", "[bundler]") {
  Tree t;
  t.write("main.js", "var n = 'x';\nrequire(n);\nrequire('./later', function () {});\nrequire('./real');");
  t.write("real.js", "");
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  REQUIRE(res.status == 200);
  CHECK(parse(res.body).paths == std::vector<std::string>{"main.js", "real.js"});
  CHECK(res.header("X-Bundle-Unbundled") == "main.js:2 require(expr); main.js:3 require('./later', ...)");
}

TEST_CASE("bundler: source text of any kind is escaped into one line per module", "[bundler]") {
  Tree t;
  std::string nasty = "var s = \"q\\\"\" + '\\\\' + '</script>';\r\n// \xE2\x80\xA8 \xE2\x80\xA9 \x01 \x7f tab\there\n";
  t.write("main.js", nasty);
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  REQUIRE(res.status == 200);
  CHECK(res.body.find("\xE2\x80\xA8") == std::string::npos);
  CHECK(res.body.find('\r') == std::string::npos);
  CHECK_THAT(res.body, Catch::Contains("\\u2028 \\u2029 \\u0001 \\u007f tab\\there\\n"));
  CHECK_THAT(res.body, Catch::Contains("var s = \\\"q\\\\\\\"\\\" + '\\\\\\\\'"));
  CHECK(std::count(res.body.begin(), res.body.end(), '\n') == 3);
}

TEST_CASE("bundler: finished bundles are cached; errors are not", "[bundler]") {
  Tree t;
  t.write("main.js", "require('./dep');");
  BundlerOptions o;
  o.freshness = Freshness::none;
  Bundler b(t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  CHECK(call(app, "GET /main.js").status == 404);
  CHECK(call(app, "GET /main.js").status == 404);
  CHECK(b.stats().builds == 0);
  t.write("dep.js", "");
  // Even in deploy mode (no change detection), the error was not kept as the answer.
  REQUIRE(call(app, "GET /main.js").status == 200);
  CHECK(call(app, "GET /main.js").status == 200);
  CHECK(b.stats().builds == 1);
  CHECK(b.stats().hits == 1);
}

TEST_CASE("bundler: edits, additions and removals while serving", "[bundler]") {
  for (Freshness f : {Freshness::inotify, Freshness::stat}) {
    DYNAMIC_SECTION((f == Freshness::inotify ? "inotify" : "stat")) {
      Tree t;
      t.write("main.js", "require('./a'); // v1");
      // Markers that cannot occur by chance in the rest of a bundle (its temporary directory's name).
      t.write("a.js", "module.exports = 'a.js-v1';");
      BundlerOptions o;
      o.freshness = f;
      Bundler b(t.root(), o);
      csgi::App app = [&b](csgi::Env& env) { return b(env); };
      auto body = [&] { return call(app, "GET /main.js").body; };
      REQUIRE_THAT(body(), Catch::Contains("a.js-v1"));
      std::string etag1 = call(app, "GET /main.js").header("ETag");

      t.write("a.js", "module.exports = 'a.js-v2';");  // edit (same size)
      CHECK(eventually([&] { return body().find("a.js-v2") != std::string::npos; }));
      CHECK(call(app, "GET /main.js", {{"If-None-Match", etag1}}).status == 200);

      t.write("main.js", "require('./a'); require('./b'); // v2");  // a new dependency, not there yet
      CHECK(eventually([&] { return call(app, "GET /main.js").status == 404; }));
      t.write("b.js", "module.exports = 'b';");  // added
      CHECK(eventually([&] { return call(app, "GET /main.js").status == 200; }));
      CHECK(set_of(parse(body())) == std::set<std::string>{"main.js", "a.js", "b.js"});

      t.write("b.json", "{}");
      fs::remove(t.dir / "b.js");  // removed: ./b now resolves to b.json
      CHECK(eventually([&] { return body().find("\"b.json\"") != std::string::npos; }));
      fs::remove(t.dir / "b.json");
      CHECK(eventually([&] { return call(app, "GET /main.js").status == 404; }));
      CHECK(b.stats().invalidations > 0);
    }
  }
}

// Not under the sanitizers: their runtimes are not fork-safe while another thread runs (ThreadSanitizer ends a
// child that starts a thread after a threaded fork; AddressSanitizer's allocator lock can be inherited held, and
// the child then waits on it forever).
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
namespace {
/// Forks a process that serves `app` (as a prefork worker does): it answers once, says so on `ready`,
/// waits for `go`, then reports on `result` whether an edit made meanwhile shows in the bundle.
pid_t fork_worker(const csgi::App& app, int ready, int go, int result) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  char ok = call(app, "GET /main.js").body.find("fork-v1") != std::string::npos ? '1' : '0';
  char c = 0;
  if (::write(ready, &ok, 1) != 1 || ::read(go, &c, 1) != 1) ::_exit(2);
  bool seen = eventually([&] { return call(app, "GET /main.js").body.find("fork-v2") != std::string::npos; });
  ok = seen ? '1' : '0';
  ::_exit(::write(result, &ok, 1) == 1 ? 0 : 2);
}
}  // namespace

TEST_CASE("bundler: each prefork worker sees edits (the inotify watcher is per process)", "[bundler]") {
  for (bool parent_served : {false, true}) {
    DYNAMIC_SECTION((parent_served ? "the parent served before fork" : "the parent only built the stack")) {
      Tree t;
      t.write("main.js", "require('./a');");
      t.write("a.js", "module.exports = 'fork-v1';");
      BundlerOptions o;
      o.freshness = Freshness::inotify;
      Bundler b(t.root(), o);
      csgi::App app = [&b](csgi::Env& env) { return b(env); };
      if (parent_served) REQUIRE_THAT(call(app, "GET /main.js").body, Catch::Contains("fork-v1"));
      int ready[2], go[2], result[2];
      REQUIRE(::pipe(ready) == 0);
      REQUIRE(::pipe(go) == 0);
      REQUIRE(::pipe(result) == 0);
      std::vector<pid_t> kids;
      for (int i = 0; i < 2; ++i) kids.push_back(fork_worker(app, ready[1], go[0], result[1]));
      std::string got;
      for (int i = 0; i < 2; ++i) {
        char c = 0;
        REQUIRE(::read(ready[0], &c, 1) == 1);
        got += c;
      }
      CHECK(got == "11");
      t.write("a.js", "module.exports = 'fork-v2';");  // same size
      REQUIRE(::write(go[1], "gg", 2) == 2);
      got.clear();
      for (int i = 0; i < 2; ++i) {
        char c = 0;
        REQUIRE(::read(result[0], &c, 1) == 1);
        got += c;
      }
      CHECK(got == "11");  // both workers saw the edit
      for (pid_t k : kids) {
        int status = 0;
        ::waitpid(k, &status, 0);
        CHECK(WIFEXITED(status));
      }
      for (int fd : {ready[0], ready[1], go[0], go[1], result[0], result[1]}) ::close(fd);
      if (parent_served) CHECK(eventually([&] { return call(app, "GET /main.js").body.find("fork-v2") != std::string::npos; }));
    }
  }
}
#endif

TEST_CASE("bundler: a prefork worker's module ids are its own: another worker's loaded set is not applied", "[bundler]") {
  // Ids are numbered per process in discovery order; a worker that discovers modules in another order
  // must not read a page's `have` (made from another worker's ids) against its own table.
  Tree t;
  t.write("main.js", "require('./a');");
  t.write("a.js", "module.exports = 1;");
  t.write("other.js", "require('./x');");
  t.write("x.js", "module.exports = 2;");
  BundlerOptions o;
  o.freshness = Freshness::none;
  Bundler b(t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t kid = ::fork();
  if (kid == 0) {  // worker 1: the page's first bundle (main.js, a.js: ids 0 and 1 here)
    std::string body = call(app, "GET /main.js").body;
    ::_exit(::write(out[1], body.data(), body.size()) == ssize_t(body.size()) ? 0 : 2);
  }
  ::close(out[1]);
  std::string first;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) first.append(buf, std::size_t(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(kid, &status, 0);
  REQUIRE(WIFEXITED(status));
  Bundle page = parse(first);
  REQUIRE(page.ids.size() == 2);
  // Worker 2 (here: the parent, which served nothing before the fork) numbers other.js and x.js first.
  REQUIRE(parse(call(app, "GET /other.js").body).ids.size() == 2);
  std::string target = "GET /other.js?e=" + page.epoch + "&have=" + have({page.ids["main.js"], page.ids["a.js"]});
  auto second = parse(call(app, target).body);
  CHECK(set_of(second) == std::set<std::string>{"other.js", "x.js"});
}

TEST_CASE("bundler: an edit in the same clock tick as the read is seen (racily clean stamps)", "[bundler]") {
  // File times come from a coarse clock (one kernel tick, a few ms): an edit of the same size right after
  // the read leaves size, mtime and ctime as they were. Such a stamp must not vouch for the source.
  Tree t;
  t.write("main.js", "require('./a');");
  BundlerOptions o;
  o.freshness = Freshness::stat;
  Bundler b(t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  int same_tick = 0;
  for (int round = 0; round < 20; ++round) {
    std::string v = "module.exports = 'a.js-r" + std::to_string(100 + round) + "';";
    t.write("a.js", v);
    REQUIRE_THAT(call(app, "GET /main.js").body, Catch::Contains("a.js-r" + std::to_string(100 + round)));
    std::string next = "module.exports = 'a.js-s" + std::to_string(100 + round) + "';";  // same size
    auto before = bundler::stamp_of((t.dir / "a.js").string());
    t.write("a.js", next);
    auto after = bundler::stamp_of((t.dir / "a.js").string());
    if (before == after) ++same_tick;
    CHECK_THAT(call(app, "GET /main.js").body, Catch::Contains("a.js-s" + std::to_string(100 + round)));
  }
  INFO(same_tick << " of 20 edits left the stamp unchanged");
  SUCCEED();
}

TEST_CASE("bundler: memory cap with LRU eviction", "[bundler]") {
  Tree t;
  std::string big(3000, 'x');
  for (int i = 0; i < 10; ++i) t.write("m" + std::to_string(i) + ".js", "// " + big);
  BundlerOptions o;
  o.cache_bytes = 12000;
  o.freshness = Freshness::none;
  Bundler b(t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 10; ++i) {
      auto res = call(app, "GET /m" + std::to_string(i) + ".js");
      REQUIRE(res.status == 200);
      CHECK_THAT(res.body, Catch::Contains("m" + std::to_string(i) + ".js"));
    }
  auto s = b.stats();
  CHECK(s.evictions > 0);
  CHECK(s.cached_bytes <= 12000);
  CHECK(s.builds > 10);  // evicted bundles were built again
}

TEST_CASE("bundler: middleware form passes other paths through", "[bundler]") {
  Tree t;
  t.write("app/main.js", "module.exports = 1;");
  BundlerOptions o;
  o.mount = "/bundle";
  auto app = csgi::wrap<Bundler>([](csgi::Env&) { return csgi::Response::text(200, "next"); }, t.root(), o);
  CHECK(call(app, "GET /other").body == "next");
  CHECK(call(app, "GET /bundlex/app/main.js").body == "next");
  auto res = call(app, "GET /bundle/app/main.js");
  REQUIRE(res.status == 200);
  CHECK_THAT(res.body, Catch::Contains("[0,\"app/main.js\",[],\"module.exports = 1;\"]"));
  csgi::testing::Options mounted;  // the body names no mount: the loader makes URLs from its own
  mounted.script_name = "/site";
  CHECK(call(app, "GET /site/bundle/app/main.js", {}, {}, mounted).body == res.body);
  CHECK(call(app, "GET /bundle/require.js").status == 200);
  CHECK(call(app, "POST /bundle/app/main.js").status == 405);
  CHECK(call(app, "HEAD /bundle/app/main.js").status == 200);
  CHECK_THROWS_AS(Bundler(t.root() + "/nope"), std::invalid_argument);
}

TEST_CASE("bundler: prebuild gives ids and an epoch that survive a restart", "[bundler]") {
  Tree t;
  t.write("b.js", "require('./a');");
  t.write("a.js", "");
  t.write("broken.js", "var s = 'x");
  BundlerOptions o;
  o.prebuild = true;
  std::string first = call(app_of(t.root(), o), "GET /b.js").body;
  std::string second = call(app_of(t.root(), o), "GET /b.js").body;
  CHECK(first == second);
  auto b = parse(first);
  CHECK(b.ids.at("a.js") == 0);
  CHECK(b.ids.at("b.js") == 1);
}

TEST_CASE("bundler: concurrent requests while files change", "[bundler]") {
  Tree t;
  t.write("main.js", "require('./a');");
  t.write("a.js", "module.exports = 0;");
  BundlerOptions o;
  o.cache_bytes = 4096;
  Bundler b(t.root(), o);
  csgi::App app = [&b](csgi::Env& env) { return b(env); };
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) {
        auto res = call(app, k % 2 ? "GET /main.js" : "GET /a.js?have=B");
        if (res.status != 200) ++bad;
      }
    });
  for (int i = 0; i < 50; ++i) t.write("a.js", "module.exports = " + std::to_string(i) + ";");
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}

TEST_CASE("bundler: ES modules: import edges, the transformed row, subtraction, missing imports", "[bundler][esm]") {
  Tree t;
  t.write("app.js", "import { count } from './counter.js';\nimport cjs from './cjs.js';\n"
                    "export const shown = count + 1;\nconsole.log(process.env.NODE_ENV);\n");
  t.write("counter.js", "export let count = 0;\n");
  t.write("cjs.js", "module.exports = 1;\n");
  t.write("more.js", "export * from './counter.js';\nexport { shown } from './app.js';\n");
  t.write("broken.js", "import { x } from './nope.js';\n");
  auto app = app_of(t.root());
  auto res = call(app, "GET /app.js");
  REQUIRE(res.status == 200);
  auto first = parse(res.body);
  CHECK(first.paths == std::vector<std::string>{"app.js", "counter.js", "cjs.js"});
  // The row: the dependency list ([specifier, id] in import order), the source with the prefix on its
  // first line and every line kept (defines applied too), then the import/export table. The prefix and
  // the table name an imported module by its index in the list: each specifier is on the wire once.
  CHECK_THAT(res.body, Catch::Contains(
      "\"app.js\",[[\"./counter.js\"," + std::to_string(first.ids["counter.js"]) + "],[\"./cjs.js\"," +
      std::to_string(first.ids["cjs.js"]) + "]],\"'use strict';__csgi.e({\\\"shown\\\":()=>shown});"
      "const __csgi_i0=__csgi.ns(0),__csgi_i1=__csgi.ns(1);yield;\\n\\n"
      " const shown = __csgi_i0.count + 1;\\nconsole.log(\\\"development\\\");\\n\","
      "{\"x\":[\"shown\"],\"r\":[],\"s\":[],\"i\":[]}]"));
  CHECK(count_of(res.body, "./counter.js") == 1);
  CHECK_THAT(res.body, Catch::Contains("[" + std::to_string(first.ids["cjs.js"]) + ",\"cjs.js\",[],\"module.exports = 1;"));

  auto second = call(app, "GET /more.js?e=" + first.epoch + "&have=" + have(ids_of(first)));
  REQUIRE(second.status == 200);
  CHECK(parse(second.body).paths == std::vector<std::string>{"more.js"});  // closure − loaded

  // Link checks ("i") go only where one can fail: not for `count` from counter.js or `default` from
  // CommonJS above, nor for `shown` (more.js passes it on by name); `count` through `export *` and a
  // name counter.js lacks keep theirs.
  t.write("links.js", "import { count as c, shown } from './more.js';\nimport { nope } from './counter.js';\n");
  auto links = call(app, "GET /links.js");
  REQUIRE(links.status == 200);
  CHECK_THAT(links.body, Catch::Contains(",\"i\":[[0,\"count\"],[1,\"nope\"]]}]"));

  // An import resolves with the "import" condition and the module field; a require beside it does not.
  t.write("node_modules/dual/package.json", R"({"main": "./cjs.js", "module": "./esm.js",
      "exports": {".": {"import": "./esm.js", "require": "./cjs.js"}}})");
  t.write("node_modules/dual/esm.js", "export default 1;");
  t.write("node_modules/dual/cjs.js", "module.exports = 1;");
  t.write("both.js", "import d from 'dual';\nimport './req.js';\n");
  t.write("req.js", "require('dual');");
  auto both = call(app, "GET /both.js");
  REQUIRE(both.status == 200);
  CHECK(parse(both.body).paths ==
        std::vector<std::string>{"both.js", "node_modules/dual/esm.js", "req.js", "node_modules/dual/cjs.js"});

  auto missing = call(app, "GET /broken.js");
  CHECK(missing.status == 404);
  CHECK_THAT(missing.body, Catch::Contains("cannot find module './nope.js' imported from broken.js:1"));
}
