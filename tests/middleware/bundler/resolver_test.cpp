// Browser resolution and Node builtins: the resolver checked rule by rule (the expected answers are what
// esbuild --bundle --platform=browser picks for the same trees), and through the middleware.
#include "csgi/middleware/bundler/detail/resolver.hpp"

#include "csgi/middleware/bundler/detail/module_graph.hpp"

#include "bundler_fixture.hpp"

using namespace bundler_test;
using csgi::testing::call;
namespace bundler = csgi::mw::bundler;
using bundler::ImportKind;
using bundler::Platform;
using bundler::Resolved;
using Freshness = csgi::mw::BundlerOptions::Freshness;

namespace {

std::string path_of(const bundler::Resolver& r, std::string_view from, std::string_view spec,
                    ImportKind kind = ImportKind::require) {
  Resolved res = r.resolve(from, spec, nullptr, kind);
  if (res.status == Resolved::ok) return res.path;
  return (res.status == Resolved::forbidden ? "forbidden: " : "not found: ") + res.detail;
}

bundler::Resolver node_resolver(const std::string& root) {
  bundler::ResolverOptions o;
  o.platform = Platform::node;
  return bundler::Resolver(root, o);
}

/// A package whose browser field uses every form the field's spec describes.
void write_browser_package(Tree& t) {
  t.write("node_modules/pkg/package.json", R"({"main": "./index.js", "browser": {
      "./index.js": "./browser-index.js", "./lib/node": "./lib/browser.js", "./lib/server.js": false,
      "./missing.js": "./lib/browser.js", "lib/plain.js": "./lib/browser.js", "fs": false, "events": "events-lite",
      "buffer": "buffer"}})");
  t.write("node_modules/pkg/index.js", "module.exports = 'node';");
  t.write("node_modules/pkg/browser-index.js", "module.exports = 'browser';");
  t.write("node_modules/pkg/lib/node.js", "");
  t.write("node_modules/pkg/lib/browser.js", "");
  t.write("node_modules/pkg/lib/server.js", "");
  t.write("node_modules/pkg/lib/user.js", "");
  t.write("node_modules/pkg/lib/plain.js", "");
  t.write("node_modules/events-lite/index.js", "");
  t.write("node_modules/buffer/index.js", "");
}

}  // namespace

TEST_CASE("resolver: a string browser field replaces main on the browser platform", "[bundler][resolver]") {
  Tree t;
  t.write("node_modules/s/package.json", R"({"main": "./node.js", "browser": "./browser.js"})");
  t.write("node_modules/s/node.js", "");
  t.write("node_modules/s/browser.js", "");
  t.write("node_modules/m/package.json", R"({"main": "./cjs.js", "module": "./esm.js"})");
  t.write("node_modules/m/cjs.js", "");
  t.write("node_modules/m/esm.js", "");
  t.write("node_modules/only/package.json", R"({"module": "./esm.js"})");
  t.write("node_modules/only/esm.js", "");
  t.write("node_modules/only/index.js", "");
  bundler::Resolver r(t.root());
  CHECK(path_of(r, "", "s") == "node_modules/s/browser.js");
  // "module" is taken for an import only (esbuild's rule, even with no "main").
  CHECK(path_of(r, "", "m") == "node_modules/m/cjs.js");
  CHECK(path_of(r, "", "m", ImportKind::import) == "node_modules/m/esm.js");
  CHECK(path_of(r, "", "only") == "node_modules/only/index.js");
  CHECK(path_of(r, "", "only", ImportKind::import) == "node_modules/only/esm.js");
  auto n = node_resolver(t.root());
  CHECK(path_of(n, "", "s") == "node_modules/s/node.js");
  CHECK(path_of(n, "", "m", ImportKind::import) == "node_modules/m/cjs.js");
}

TEST_CASE("resolver: an object browser field remaps the package's own requires and its main", "[bundler][resolver]") {
  Tree t;
  write_browser_package(t);
  bundler::Resolver r(t.root());
  const std::string in = "node_modules/pkg/lib";
  // The main file, by the package's own map.
  CHECK(path_of(r, "", "pkg") == "node_modules/pkg/browser-index.js");
  // Relative requires: by name (a key may add an extension or /index, never drop one) or by the file
  // they reach.
  CHECK(path_of(r, in, "./node") == "node_modules/pkg/lib/browser.js");
  CHECK(path_of(r, in, "./node.js") == "node_modules/pkg/lib/node.js");  // key "./lib/node": as esbuild
  CHECK(path_of(r, in, "./server") == "(empty):node_modules/pkg/lib/server.js");
  CHECK(path_of(r, in, "./plain") == "node_modules/pkg/lib/browser.js");  // key "lib/plain.js", no "./"
  CHECK(path_of(r, in, "../missing.js") == "node_modules/pkg/lib/browser.js");
  CHECK(path_of(r, in, "./user") == "node_modules/pkg/lib/user.js");
  // false: an empty module.
  Resolved off = r.resolve(in, "./server");
  REQUIRE(off.status == Resolved::ok);
  CHECK(off.empty);
  CHECK(off.path == "(empty):node_modules/pkg/lib/server.js");
  Resolved fs_off = r.resolve(in, "fs");
  CHECK((fs_off.status == Resolved::ok && fs_off.empty && fs_off.path == "(empty):fs"));
  // A package replaced by another; a package mapped to itself stays itself.
  CHECK(path_of(r, in, "events") == "node_modules/events-lite/index.js");
  CHECK(path_of(r, in, "buffer") == "node_modules/buffer/index.js");
  // Outside the package the map does not apply: deep requires, and the names it maps.
  CHECK(path_of(r, "", "pkg/lib/node") == "node_modules/pkg/lib/node.js");
  CHECK(path_of(r, "", "events").starts_with("not found: 'events' is a Node builtin module"));
  // The node platform ignores the field.
  auto n = node_resolver(t.root());
  CHECK(path_of(n, "", "pkg") == "node_modules/pkg/index.js");
  CHECK(path_of(n, in, "./node") == "node_modules/pkg/lib/node.js");
}

TEST_CASE("resolver: the app's own package.json browser map applies to its modules", "[bundler][resolver]") {
  Tree t;
  t.write("package.json", R"({"browser": {"./src/db.js": "./src/db-browser.js", "./src/log.js": false}})");
  t.write("src/db.js", "");
  t.write("src/db-browser.js", "");
  t.write("src/log.js", "");
  bundler::Resolver r(t.root());
  CHECK(path_of(r, "src", "./db") == "src/db-browser.js");
  CHECK(path_of(r, "", "./src/db.js") == "src/db-browser.js");
  CHECK(r.resolve("src", "./log").empty);
}

TEST_CASE("resolver: exports conditions for the browser, by importing syntax and in key order", "[bundler][resolver]") {
  Tree t;
  t.write("node_modules/c/package.json", R"({"exports": {".": {"node": "./n.js", "browser": "./b.js", "default": "./d.js"},
      "./syntax": {"import": "./s.mjs", "require": "./s.cjs"}, "./mod": {"module": "./m.js", "default": "./d.js"},
      "./order": {"default": "./d.js", "browser": "./b.js"}, "./nested": {"browser": {"import": "./s.mjs", "default": "./b.js"}},
      "./none": {"node": "./n.js"}, "./arr": [{"worker": "./w.js"}, "./d.js"]},
      "browser": {"./d.js": "./b.js"}})");
  for (auto f : {"n.js", "b.js", "d.js", "s.mjs", "s.cjs", "m.js", "w.js"}) t.write(std::string("node_modules/c/") + f, "");
  bundler::Resolver r(t.root());
  CHECK(path_of(r, "", "c") == "node_modules/c/b.js");
  CHECK(path_of(r, "", "c/syntax") == "node_modules/c/s.cjs");
  CHECK(path_of(r, "", "c/syntax", ImportKind::import) == "node_modules/c/s.mjs");
  CHECK(path_of(r, "", "c/mod") == "node_modules/c/m.js");
  CHECK(path_of(r, "", "c/order") == "node_modules/c/d.js");  // the first matching key wins; exports targets are not browser-mapped
  CHECK(path_of(r, "", "c/nested") == "node_modules/c/b.js");
  CHECK(path_of(r, "", "c/nested", ImportKind::import) == "node_modules/c/s.mjs");
  CHECK(path_of(r, "", "c/none").starts_with("not found: \"./none\" is not exported"));
  CHECK(path_of(r, "", "c/arr") == "node_modules/c/d.js");
  auto n = node_resolver(t.root());
  CHECK(path_of(n, "", "c") == "node_modules/c/n.js");
  CHECK(path_of(n, "", "c/mod") == "node_modules/c/d.js");
}

TEST_CASE("resolver: imports (#name) maps of the requiring module's package", "[bundler][resolver]") {
  Tree t;
  t.write("node_modules/p/package.json", R"({"main": "./src/i.js", "imports": {
      "#dep": {"browser": "./src/dep-browser.js", "default": "./src/dep.js"}, "#int/*": "./src/internal/*.js",
      "#ext": "ext", "#out": "./../../secret.js", "#gone": null}})");
  for (auto f : {"src/i.js", "src/dep.js", "src/dep-browser.js", "src/internal/a.js"}) t.write(std::string("node_modules/p/") + f, "");
  t.write("node_modules/p/node_modules/ext/index.js", "");
  t.write("secret.js", "");
  bundler::Resolver r(t.root());
  const std::string in = "node_modules/p/src";
  CHECK(path_of(r, in, "#dep") == "node_modules/p/src/dep-browser.js");
  CHECK(path_of(node_resolver(t.root()), in, "#dep") == "node_modules/p/src/dep.js");
  CHECK(path_of(r, in, "#int/a") == "node_modules/p/src/internal/a.js");
  CHECK(path_of(r, in, "#ext") == "node_modules/p/node_modules/ext/index.js");
  CHECK(path_of(r, in, "#out").starts_with("forbidden: "));
  CHECK(path_of(r, in, "#gone").starts_with("not found: \"#gone\" is not in the imports"));
  CHECK(path_of(r, in, "#nope").starts_with("not found: "));
  CHECK(path_of(r, "", "#dep").starts_with("not found: no package.json"));
}

TEST_CASE("resolver: .mjs and .cjs load when named, never by extension probing (as esbuild)", "[bundler][resolver]") {
  Tree t;
  t.write("a.cjs", "");
  t.write("b.mjs", "");
  t.write("node_modules/x/package.json", R"({"main": "./main.cjs"})");
  t.write("node_modules/x/main.cjs", "");
  bundler::Resolver r(t.root());
  CHECK(path_of(r, "", "./a.cjs") == "a.cjs");
  CHECK(path_of(r, "", "./b.mjs") == "b.mjs");
  CHECK(path_of(r, "", "./a").starts_with("not found: "));
  CHECK(path_of(r, "", "x") == "node_modules/x/main.cjs");
}

TEST_CASE("resolver: Node builtins say how to map them; the builtins option maps them", "[bundler][resolver]") {
  Tree t;
  t.write("node_modules/util/index.js", "");
  t.write("node_modules/events-shim/index.js", "");
  t.write("shims/path.js", "");
  bundler::Resolver plain(t.root());
  std::string fs = path_of(plain, "", "fs");
  CHECK(fs.starts_with("not found: 'fs' is a Node builtin module, which browsers do not have"));
  CHECK_THAT(fs, Catch::Contains("BundlerOptions::builtins[\"fs\"]"));
  CHECK_THAT(path_of(plain, "", "node:fs"), Catch::Contains("'fs' is a Node builtin module"));
  CHECK_THAT(path_of(plain, "", "fs/promises"), Catch::Contains("'fs/promises' is a Node builtin module"));
  // An npm package of the builtin's name is taken for the plain name (browserify's and esbuild's way),
  // never for "node:" (which always means the builtin).
  CHECK(path_of(plain, "", "util") == "node_modules/util/index.js");
  CHECK_THAT(path_of(plain, "", "node:util"), Catch::Contains("'util' is a Node builtin module"));
  CHECK(path_of(plain, "", "node:nonesuch").starts_with("not found: cannot find package node:nonesuch"));

  bundler::ResolverOptions o;
  o.builtins = {{"events", "events-shim"}, {"path", "./shims/path.js"}, {"fs", ""}, {"util", "util/"}, {"os", "missing-pkg"}};
  bundler::Resolver mapped(t.root(), o);
  CHECK(path_of(mapped, "a/b", "events") == "node_modules/events-shim/index.js");
  CHECK(path_of(mapped, "", "node:events") == "node_modules/events-shim/index.js");
  CHECK(path_of(mapped, "deep/dir", "path") == "shims/path.js");
  CHECK(path_of(mapped, "", "node:util") == "node_modules/util/index.js");
  Resolved off = mapped.resolve("", "node:fs");
  CHECK((off.status == Resolved::ok && off.empty && off.path == "(empty):fs"));
  CHECK_THAT(path_of(mapped, "", "os"), Catch::Contains("the builtins option maps 'os' to 'missing-pkg', which cannot be found"));
  bundler::ResolverOptions prefixed;
  prefixed.builtins = {{"node:events", "events-shim"}};
  bundler::Resolver by_prefixed_key(t.root(), prefixed);
  CHECK(path_of(by_prefixed_key, "", "events") == "node_modules/events-shim/index.js");
  CHECK(path_of(by_prefixed_key, "", "node:events") == "node_modules/events-shim/index.js");
}

TEST_CASE("bundler: browser mappings and builtins through the middleware", "[bundler][resolver]") {
  Tree t;
  write_browser_package(t);
  t.write("main.js", "var pkg = require('pkg');\nvar u = require('util');\n");
  t.write("node_modules/pkg/browser-index.js", "require('./lib/server'); require('fs'); require('events');");
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  CHECK(res.status == 404);
  CHECK_THAT(res.body, Catch::Contains("\"module\":\"util\""));
  CHECK_THAT(res.body, Catch::Contains("cannot find module 'util' required from main.js:2"));
  CHECK_THAT(res.body, Catch::Contains("'util' is a Node builtin module"));
  CHECK_THAT(res.body, Catch::Contains("BundlerOptions::builtins"));

  BundlerOptions o;
  o.builtins = {{"util", ""}};
  auto mapped = app_of(t.root(), o);
  res = call(mapped, "GET /main.js");
  REQUIRE(res.status == 200);
  auto b = parse(res.body);
  CHECK(set_of(b) == std::set<std::string>{"main.js", "node_modules/pkg/browser-index.js", "(empty):util", "(empty):fs",
                                           "(empty):node_modules/pkg/lib/server.js", "node_modules/events-lite/index.js"});
  // An empty module is an empty source without a sourceURL, and stays deliverable after eviction.
  CHECK_THAT(res.body, Catch::Contains("[" + std::to_string(b.ids.at("(empty):fs")) + ",\"(empty):fs\",[],\"\"]"));
  auto held = call(mapped, "GET /main.js?e=" + b.epoch + "&have=" + have({b.ids.at("main.js")}));
  CHECK(held.status == 200);
}

TEST_CASE("bundler: an edit of a browser field is seen on the next request", "[bundler][resolver]") {
  Tree t;
  write_browser_package(t);
  t.write("main.js", "require('pkg');");
  const std::string pkg_json = "node_modules/pkg/package.json";
  for (auto fresh : {Freshness::stat, Freshness::inotify}) {
    BundlerOptions o;
    o.freshness = fresh;
    auto app = app_of(t.root(), o);
    t.write(pkg_json, R"({"main": "./index.js", "browser": {"./index.js": "./browser-index.js"}})");
    // Let the coarse clock pass the files' change times, so the build's stamps are not "racily clean"
    // (that alone would force a re-check): only a stamp of the package.json itself can notice the edit.
    auto ctime = bundler::stamp_of((t.dir / pkg_json).string()).ctime_ns;
    for (int i = 0; i < 2000 && bundler::coarse_now_ns() <= ctime; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(bundler::coarse_now_ns() > ctime);
    auto res = call(app, "GET /main.js");
    REQUIRE(res.status == 200);
    CHECK(set_of(parse(res.body)).count("node_modules/pkg/browser-index.js"));
    t.write(pkg_json, R"({"main": "./index.js", "browser": {"./index.js": false}})");
    CHECK(eventually([&] { return set_of(parse(call(app, "GET /main.js").body)).count("(empty):node_modules/pkg/index.js") == 1; }));
  }
}

TEST_CASE("bundler: defines replace process.env.NODE_ENV per mode, keeping every line", "[bundler][defines]") {
  Tree t;
  std::string src = "var e = process.env.NODE_ENV, s = 'process.env.NODE_ENV';\nif (process\n.env.NODE_ENV) x(__DEV__, __DEV__.y, process.env.OTHER);\n// process.env.NODE_ENV\n";
  t.write("main.js", src);
  auto source_of = [](const std::string& body) {
    auto b = body.find(",[],\"") + 5;
    auto e = body.find("\"]\n]");
    return body.substr(b, e - b);
  };
  auto dev = call(app_of(t.root()), "GET /main.js");
  REQUIRE(dev.status == 200);
  CHECK(source_of(dev.body) ==
        R"(var e = \"development\", s = 'process.env.NODE_ENV';\nif (\"development\"\n) x(__DEV__, __DEV__.y, process.env.OTHER);\n// process.env.NODE_ENV\n)");
  CHECK_THAT(dev.body, Catch::EndsWith("\n],{\"shim\":1,\"env\":{\"NODE_ENV\":\"development\"},\"maps\":1});\n"));

  BundlerOptions o;
  o.mode = BundlerOptions::Mode::production;
  o.defines = {{"__DEV__", "false"}, {"process.env.OTHER", "42"}};
  o.process_shim = false;
  auto prod = call(app_of(t.root(), o), "GET /main.js");
  REQUIRE(prod.status == 200);
  CHECK(source_of(prod.body) ==
        R"(var e = \"production\", s = 'process.env.NODE_ENV';\nif (\"production\"\n) x(false, false.y, 42);\n\n)");  // the comment left out, its line kept
  CHECK_THAT(prod.body, Catch::EndsWith("\n]);\n"));  // production: no maps unless asked
  CHECK(call(app_of(t.root(), o), "GET /~map/main.js").status == 404);
  o.source_maps = true;
  CHECK_THAT(call(app_of(t.root(), o), "GET /main.js").body, Catch::EndsWith("\n],{\"maps\":1});\n"));

  BundlerOptions bad;
  bad.defines = {{"X", "1\n+2"}};
  CHECK_THROWS_AS(Bundler(t.root(), bad), std::invalid_argument);
  bad.defines = {{"a..b", "1"}};
  CHECK_THROWS_AS(Bundler(t.root(), bad), std::invalid_argument);
}

TEST_CASE("resolver: tsconfig.json paths and baseUrl for the app's own bare imports", "[bundler]") {
  Tree t;
  t.write("tsconfig.json", "{\n  // as tsc reads it\n  \"compilerOptions\": {\"baseUrl\": \".\", \"paths\": {\n"
                           "    \"@/*\": [\"src/*\"], \"@ui/*\": [\"missing/*\", \"src/components/*\"], \"config\": [\"src/config.ts\"]}}\n}\n");
  t.write("src/util.ts", "export const u = 1;");
  t.write("src/components/Button.tsx", "export const B = 1;");
  t.write("src/config.ts", "export default 1;");
  t.write("lib/helpers.js", "exports.h = 1;");
  t.write("node_modules/lib/index.js", "");
  t.write("node_modules/dep/index.js", "require('@/util')");
  t.write("node_modules/@/util/index.js", "");
  bundler::Resolver r(t.root());
  auto is = [&](std::string_view from, std::string_view spec, const char* path) {
    auto res = r.resolve(from, spec, nullptr, bundler::ImportKind::import);
    INFO(spec);
    CHECK(res.status == bundler::Resolved::ok);
    CHECK(res.path == path);
  };
  is("src", "@/util", "src/util.ts");
  is("src/components", "@ui/Button", "src/components/Button.tsx");  // the second target
  is("", "config", "src/config.ts");
  is("src", "lib/helpers", "lib/helpers.js");  // baseUrl
  is("src", "dep", "node_modules/dep/index.js");  // not in paths or under baseUrl: node_modules
  is("node_modules/dep", "@/util", "node_modules/@/util/index.js");  // packages do not use the app's tsconfig
  auto out = r.resolve("src", "@/../../etc/passwd", nullptr, bundler::ImportKind::import);
  CHECK(out.status != bundler::Resolved::ok);
}
