#include "csgi/middleware/bundler/detail/esbuild.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "bundler_fixture.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/middleware/bundler/detail/css.hpp"

// The tests tagged [.esbuild] need an esbuild executable in CSGI_TEST_ESBUILD; CTest runs them as
// bundler_typescript once the npm corpus (which pins esbuild) is installed.

using csgi::testing::call;
using namespace bundler_test;
namespace bundler = csgi::mw::bundler;

namespace {
std::string esbuild_program() {
  const char* p = std::getenv("CSGI_TEST_ESBUILD");
  REQUIRE(p != nullptr);
  return p;
}
}  // namespace

TEST_CASE("esbuild: which paths esbuild transforms", "[bundler]") {
  CHECK(bundler::esbuild_loader("src/a.ts") == "ts");
  CHECK(bundler::esbuild_loader("a.mts") == "ts");
  CHECK(bundler::esbuild_loader("a.cts") == "ts");
  CHECK(bundler::esbuild_loader("src/App.tsx") == "tsx");
  CHECK(bundler::esbuild_loader("b.jsx") == "jsx");
  CHECK(bundler::esbuild_loader("types.d.ts").empty());
  CHECK(bundler::esbuild_loader("a.js").empty());
  CHECK(bundler::esbuild_loader("a.json").empty());
  CHECK(bundler::esbuild_loader("dir.ts/a").empty());
}

TEST_CASE("esbuild: a missing esbuild program is a clear 422 naming the option", "[bundler]") {
  Tree t;
  t.write("main.ts", "const y: number = 2;\n");
  BundlerOptions o;
  o.esbuild = t.root() + "/no-such-esbuild";
  auto res = call(app_of(t.root(), o), "GET /main.ts");
  CHECK(res.status == 422);
  CHECK_THAT(res.body, Catch::Contains("main.ts: cannot run"));
  CHECK_THAT(res.body, Catch::Contains("esbuild option"));
}

TEST_CASE("esbuild: TypeScript and JSX modules go out as JavaScript through the graph", "[.esbuild]") {
  Tree t;
  t.write("tsconfig.json", "{\n  // JSONC, as tsc reads it\n  \"compilerOptions\": {\"jsx\": \"react-jsx\", \"jsxImportSource\": \"mini\"}\n}\n");
  t.write("node_modules/mini/package.json", R"({"name":"mini","exports":{"./jsx-runtime":"./jsx-runtime.js"}})");
  t.write("node_modules/mini/jsx-runtime.js", "export function jsx(t, p) { return {t, p}; }\nexport const jsxs = jsx;\n");
  t.write("src/main.tsx", "import {n} from './util';\nimport {twice} from './helpers.js';\n"
                          "const y: number = twice(n);\nexport const el = <div id=\"a\">{y}</div>;\n");
  t.write("src/util.ts", "export const n: number = 21;\ninterface Unused { a: string }\n");
  t.write("src/helpers.ts", "export function twice(x: number): number { return x * 2; }\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto bundler = std::make_shared<csgi::mw::Bundler>(t.root(), o);
  csgi::App app = [bundler](csgi::Env& env) { return (*bundler)(env); };
  auto res = call(app, "GET /src/main.tsx");
  REQUIRE(res.status == 200);
  Bundle b = parse(res.body);
  CHECK(set_of(b) == std::set<std::string>{"src/main.tsx", "src/util.ts", "src/helpers.ts", "node_modules/mini/jsx-runtime.js"});
  CHECK_THAT(res.body, !Catch::Contains(": number"));
  CHECK_THAT(res.body, !Catch::Contains("interface"));
  CHECK_THAT(res.body, !Catch::Contains("<div"));
  CHECK_THAT(res.body, Catch::Contains("jsx)(\\\"div\\\", { id: \\\"a\\\", children: y })"));
  auto s = bundler->stats();
  CHECK(s.transpiles == 3);
  CHECK(s.transpile_hits == 0);
}

TEST_CASE("esbuild: a syntax error is a 422 with file, line, column and esbuild's message", "[.esbuild]") {
  Tree t;
  t.write("bad.ts", "// first line\nconst y x = 2;\n");
  t.write("good.ts", "export const ok: boolean = true;\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto app = app_of(t.root(), o);
  auto res = call(app, "GET /bad.ts");
  CHECK(res.status == 422);
  CHECK_THAT(res.body, Catch::StartsWith("csgiRequire.fail({\"status\":422,\"module\":\"bad.ts\""));
  CHECK_THAT(res.body, Catch::Contains("bad.ts:2:8: Expected \\\";\\\" but found \\\"x\\\""));
  CHECK_THAT(res.errors, Catch::Contains("bad.ts:2:8: Expected \";\" but found \"x\""));
  CHECK(call(app, "GET /good.ts").status == 200);
}

TEST_CASE("esbuild: the transform cache is keyed by content and options", "[.esbuild]") {
  bundler::Transpiler tr(esbuild_program());
  auto a = tr.run("a.ts", "export const a: number = 1;\n", "");
  REQUIRE(a.code);
  auto again = tr.run("a.ts", "export const a: number = 1;\n", "");
  CHECK(again.code == a.code);
  CHECK(tr.hits == 1);
  CHECK(tr.misses == 1);
  tr.run("a.ts", "export const a: number = 2;\n", "");  // other content
  tr.run("a.tsx", "export const a: number = 1;\n", "");  // other loader
  auto j = tr.run("a.tsx", "export const e = <b/>;\n", R"({"compilerOptions":{"jsx":"react-jsx"}})");
  auto k = tr.run("a.tsx", "export const e = <b/>;\n", R"({"compilerOptions":{"jsx":"react"}})");
  CHECK(tr.misses == 5);
  CHECK(tr.hits == 1);
  REQUIRE(j.code);
  REQUIRE(k.code);
  CHECK_THAT(*j.code, Catch::Contains("react/jsx-runtime"));
  CHECK_THAT(*k.code, Catch::Contains("React.createElement"));
}

TEST_CASE("esbuild: a rewritten file with the same text is a cache hit", "[.esbuild]") {
  Tree t;
  t.write("main.ts", "export const v: string = 'one';\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  o.freshness = BundlerOptions::Freshness::stat;
  auto bundler = std::make_shared<csgi::mw::Bundler>(t.root(), o);
  csgi::App app = [bundler](csgi::Env& env) { return (*bundler)(env); };
  REQUIRE(call(app, "GET /main.ts").status == 200);
  t.write("main.ts", "export const v: string = 'two';\n");
  auto two = call(app, "GET /main.ts");
  CHECK_THAT(two.body, Catch::Contains("two") && !Catch::Contains("one"));
  t.write("main.ts", "export const v: string = 'one';\n");
  auto one = call(app, "GET /main.ts");
  CHECK_THAT(one.body, Catch::Contains("one") && !Catch::Contains("two"));
  auto s = bundler->stats();
  CHECK(s.transpiles == 2);
  CHECK(s.transpile_hits == 1);
}

TEST_CASE("esbuild: an imported stylesheet goes out as a module that adds it to the document once", "[.esbuild]") {
  Tree t;
  t.write("src/main.ts", "import './theme.css';\nimport './button';\nexport const ok: boolean = true;\n");
  t.write("src/theme.css", "/* theme */\nbody { color: red }\n");
  t.write("src/button.css", ".button { content: \"\\\"q\\\"\" }\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto app = app_of(t.root(), o);
  auto res = call(app, "GET /src/main.ts");
  REQUIRE(res.status == 200);
  Bundle b = parse(res.body);
  CHECK(set_of(b) == std::set<std::string>{"src/main.ts", "src/theme.css", "src/button.css"});
  CHECK_THAT(res.body, Catch::Contains("data-csgi-css"));
  CHECK_THAT(res.body, Catch::Contains("color: red"));
  CHECK_THAT(res.body, !Catch::Contains("/* theme */"));
}

TEST_CASE("esbuild: a program that exits without reading its input is an error, not a SIGPIPE", "[bundler]") {
  Tree t;
  t.write("quits", "#!/bin/sh\necho 'no esbuild here' >&2\nexit 3\n");
  fs::permissions(t.dir / "quits", fs::perms::owner_all);
  bundler::Transpiler tr((t.dir / "quits").string());
  auto r = tr.run("big.ts", std::string(std::size_t{4} << 20, ' '), "");  // larger than a pipe's buffer
  CHECK(!r.code);
  CHECK(r.error == "big.ts: esbuild: no esbuild here");
}

TEST_CASE("esbuild: <mount>/~css/<path> answers a stylesheet's text for the live-reload follower", "[.esbuild]") {
  Tree t;
  t.write("src/a.css", "/* c */ .a { color: red }\n");
  t.write("src/a.js", "module.exports = 1;\n");
  t.write("src/m.module.css", ".m { color: red }\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto app = app_of(t.root(), o);
  auto css = call(app, "GET /~css/src/a.css");
  CHECK(css.status == 200);
  CHECK(css.header("Content-Type") == "text/css; charset=utf-8");
  CHECK(css.body == ".a {\n  color: red;\n}\n");
  CHECK(call(app, "GET /~css/src/a.js").status == 404);
  // A CSS module: its scoped text, and its name map for the follower to compare with the <style>'s.
  auto m = call(app, "GET /~css/src/m.module.css");
  CHECK(m.status == 200);
  auto scoped = bundler::scope_css(".m {\n  color: red;\n}\n", "src/m.module.css");
  CHECK(m.body == scoped.css);
  CHECK(m.header("X-Bundle-Css-Names") == bundler::css_names(scoped.names));
  CHECK(m.header("X-Bundle-Css-Names") == "{\"m\":\"" + scoped.names[0].second + "\"}");
  CHECK(call(app, "GET /~css/src/none.css").status == 404);
  // A stylesheet outside the root is never read, however the path is spelled.
  Tree outer;
  outer.write("outside.css", ".secret { color: red }\n");
  outer.write("root/in.css", ".in { color: red }\n");
  auto inner = app_of((outer.dir / "root").string(), o);
  for (const char* target : {"GET /~css/../outside.css", "GET /~css/%2e%2e/outside.css", "GET /~css/a/%2e%2e/%2e%2e/outside.css",
                             "GET /~css/..%2foutside.css"}) {
    auto r = call(inner, target);
    INFO(target);
    CHECK((r.status == 403 || r.status == 404));
    CHECK_THAT(r.body, !Catch::Contains("secret"));
  }
  CHECK(call(inner, "GET /~css/in.css").status == 200);
}
