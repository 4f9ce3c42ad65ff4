#include "csgi/middleware/bundler/detail/css.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "bundler_fixture.hpp"
#include "csgi/core/test_client.hpp"

using csgi::testing::call;
using namespace bundler_test;
namespace bundler = csgi::mw::bundler;

namespace {
std::string esbuild_program() {
  const char* p = std::getenv("CSGI_TEST_ESBUILD");
  REQUIRE(p != nullptr);
  return p;
}
std::string rewritten(std::string_view css, std::string_view path) {
  return bundler::split_urls(css, path).join("/b");
}
}  // namespace

TEST_CASE("css: relative url() references become <mount>/~asset/ URLs; others stay", "[bundler]") {
  CHECK(rewritten(".a{background:url(img/a.png)}", "src/x.css") == ".a{background:url(\"/b/~asset/src/img/a.png\")}");
  CHECK(rewritten(".a{background:URL( \"../i.svg#g\" ) no-repeat}", "src/x.css") ==
        ".a{background:url(\"/b/~asset/i.svg#g\") no-repeat}");
  CHECK(rewritten("@font-face{src:url('./f/a b.woff2?v=1') format(\"woff2\")}", "x.css") ==
        "@font-face{src:url(\"/b/~asset/f/a%20b.woff2?v=1\") format(\"woff2\")}");
  CHECK(rewritten(".a{background:url(a%28b%29.png)}", "x.css") == ".a{background:url(\"/b/~asset/a%28b%29.png\")}");
  for (const char* same : {".a{background:url(data:image/png;base64,AAAA)}", ".a{background:url(\"https://x.test/a.png\")}",
                           ".a{background:url(//x.test/a.png)}", ".a{background:url(/abs.png)}",
                           ".a{filter:url(#blur)}", ".a{background:url(\"\")}", ".a{background:url(../../up.png)}",
                           ".a{content:\"url(a.png)\"}", ".a{background:myurl(a.png)}", "/* url(a.png) */.a{}"}) {
    INFO(same);
    CHECK(rewritten(same, "src/x.css") == same);
  }
  auto parts = bundler::split_urls("a{b:url(x.png)}c{d:url(y.png)}", "s.css");
  CHECK(parts.text == std::vector<std::string>{"a{b:url(\"", "\")}c{d:url(\"", "\")}"});
  CHECK(parts.assets == std::vector<std::string>{"/~asset/x.png", "/~asset/y.png"});
}

TEST_CASE("css: a CSS module's local names are scoped and listed", "[bundler]") {
  auto s = bundler::scope_css(
      ".btn, .btn-primary:hover > .icon:not(.x) {\n  color: red;\n  width: 0.5em;\n}\n"
      ":global(.page) .btn {\n  margin: 0;\n}\n@media (min-width: 10.5em) {\n  .icon {\n    content: \".fake\";\n  }\n}\n"
      "@keyframes spin {\n  to {\n    transform: rotate(1turn);\n  }\n}\n"
      ".x {\n  animation: spin 1s linear;\n  animation-name: spin, other;\n}\n[class~=btn] {\n  top: 0;\n}\n",
      "src/Button.module.css");
  std::map<std::string, std::string> names(s.names.begin(), s.names.end());
  REQUIRE(names.size() == 5);
  const std::string btn = names.at("btn"), spin = names.at("spin");
  CHECK(btn.starts_with("Button_btn_"));
  CHECK(names.at("btn-primary").starts_with("Button_btn-primary_"));
  CHECK(spin.starts_with("Button_spin_"));
  CHECK(!names.contains("page"));
  CHECK(!names.contains("fake"));
  CHECK(bundler::scope_css(".btn{}", "other/Button.module.css").names[0].second != btn);  // the path is in the hash
  CHECK_THAT(s.css, Catch::StartsWith("." + btn + ", ." + names.at("btn-primary") + ":hover > ." + names.at("icon") +
                                      ":not(." + names.at("x") + ") {\n  color: red;\n  width: 0.5em;\n}\n"));
  CHECK_THAT(s.css, Catch::Contains("\n.page ." + btn + " {"));
  CHECK_THAT(s.css, Catch::Contains("@media (min-width: 10.5em) {\n  ." + names.at("icon") + " {\n    content: \".fake\";"));
  CHECK_THAT(s.css, Catch::Contains("@keyframes " + spin + " {"));
  CHECK_THAT(s.css, Catch::Contains("animation: " + spin + " 1s linear;"));
  CHECK_THAT(s.css, Catch::Contains("animation-name: " + spin + ", other;"));
  CHECK_THAT(s.css, Catch::Contains("[class~=btn] {"));
}

TEST_CASE("css: a stylesheet's assets in the bundle, under ~css and at ~asset", "[.esbuild]") {
  Tree t;
  t.write("src/main.js", "require('./theme.css');\n");
  t.write("src/theme.css", ".a { background: url(img/dot.png) }\n.b { background: url(data:image/gif;base64,R0lGOD) }\n");
  t.write("src/img/dot.png", "\x89PNG fake");
  t.write("src/secret.txt", "secret");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  o.mount = "/bundle";
  Bundler bundler([](csgi::Env&) { return csgi::Response::text(404, "next"); }, t.root(), o);
  csgi::App app = [&bundler](csgi::Env& env) { return bundler(env); };
  auto res = call(app, "GET /bundle/src/main.js");
  REQUIRE(res.status == 200);
  // The module builds the URL from the loader's base at run time (the bundle does not depend on the mount).
  CHECK_THAT(res.body, Catch::Contains(R"(csgiRequire.base():'';)"));
  CHECK_THAT(res.body, Catch::Contains(R"(url(\\\"\"+b+\"/~asset/src/img/dot.png\"+\"\\\");)"));
  CHECK_THAT(res.body, Catch::Contains("url(data:image/gif;base64,R0lGOD)"));
  auto css = call(app, "GET /bundle/~css/src/theme.css");
  CHECK(css.status == 200);
  CHECK_THAT(css.body, Catch::Contains("background: url(\"/bundle/~asset/src/img/dot.png\")"));
  auto png = call(app, "GET /bundle/~asset/src/img/dot.png");
  CHECK(png.status == 200);
  CHECK(png.header("Content-Type") == "image/png");
  CHECK(png.body == "\x89PNG fake");
  CHECK(call(app, "GET /bundle/~asset/src/secret.txt").status == 404);
  CHECK(call(app, "GET /bundle/~asset/src/main.js").status == 404);
  CHECK(call(app, "GET /bundle/~asset/src/none.png").status == 404);
  CHECK(call(app, "GET /bundle/~asset/../x.png").status != 200);
}

TEST_CASE("css: a CSS module exports its scoped names and adds the scoped stylesheet", "[.esbuild]") {
  Tree t;
  t.write("src/m.js", "import s, {btn} from './x.module.css';\nexport const out = [s.btn, btn, s['btn-wide']];\n");
  t.write("src/x.module.css", ".btn { color: blue }\n.btn-wide { width: 100% }\n.class { top: 0 }\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto app = [&] {
    auto b = std::make_shared<Bundler>(t.root(), o);
    return csgi::App([b](csgi::Env& env) { return (*b)(env); });
  }();
  auto res = call(app, "GET /src/m.js");
  REQUIRE(res.status == 200);
  CHECK(set_of(parse(res.body)) == std::set<std::string>{"src/m.js", "src/x.module.css"});
  auto s = bundler::scope_css(".btn {\n  color: blue;\n}\n", "src/x.module.css");
  const std::string btn = s.names[0].second;
  CHECK_THAT(res.body, Catch::Contains("." + btn + " {"));
  CHECK_THAT(res.body, Catch::Contains("btn-wide"));
  CHECK_THAT(res.body, Catch::Contains("s.setAttribute('data-csgi-names',"));
  CHECK_THAT(res.body, !Catch::Contains(".btn {"));
  // Named exports for identifiers only: `btn`, not `btn-wide` nor the reserved word `class`.
  CHECK_THAT(res.body, Catch::Contains(R"({"x":["default","btn"],)"));
}

TEST_CASE("css: relative @imports become dependencies in order; conditional and absolute ones stay", "[bundler]") {
  auto r = bundler::css_imports("@charset \"utf-8\";\n@import \"./a.css\";\n@import \"b.css\";\n@import url(../c.css);\n"
                                "@import \"https://x.test/f.css\";\n@import \"d.css\" screen;\n@import \"e.css\" layer(x);\n"
                                "@import \"../../../up.css\";\n.a {\n  content: \"@import 'z.css';\";\n}\n@import \"late.css\";\n",
                                "src/s/x.css");
  CHECK(r.imports == std::vector<std::string>{"./a.css", "./b.css", "../c.css"});
  CHECK(r.css == "@charset \"utf-8\";\n@import \"https://x.test/f.css\";\n@import \"d.css\" screen;\n"
                 "@import \"e.css\" layer(x);\n@import \"../../../up.css\";\n.a {\n  content: \"@import 'z.css';\";\n}\n"
                 "@import \"late.css\";\n");
  CHECK(bundler::css_imports(".a{}", "x.css").imports.empty());
  // The module requires its imports before adding its own <style>, so theirs come first.
  auto js = bundler::css_module("src/x.css", bundler::split_urls(".a{}", "src/x.css"), nullptr, {"./a.css"});
  CHECK_THAT(js, Catch::StartsWith("'use strict';require(\"./a.css\");if("));
}

TEST_CASE("css: composes adds names to a class's export; the declaration goes", "[bundler]") {
  auto s = bundler::scope_css(".base {\n  color: red;\n}\n.btn {\n  composes: base;\n  composes: g1 g2 from global;\n"
                              "  composes: shared from \"./lib/x.module.css\";\n  top: 0;\n}\n",
                              "src/Button.module.css");
  std::map<std::string, std::string> names(s.names.begin(), s.names.end());
  const std::string base = bundler::scope_css(".base{}", "src/Button.module.css").names[0].second;
  const std::string btn = bundler::scope_css(".btn{}", "src/Button.module.css").names[0].second;
  const std::string shared = bundler::scope_css(".shared{}", "src/lib/x.module.css").names[0].second;
  CHECK(names.at("base") == base);
  CHECK(names.at("btn") == btn + " " + base + " g1 g2 " + shared);
  CHECK(s.imports == std::vector<std::string>{"./lib/x.module.css"});
  CHECK(s.css == "." + base + " {\n  color: red;\n}\n." + btn + " {\n  top: 0;\n}\n");
}

TEST_CASE("css: a bare :global or :local switches the mode for the rest of the selector", "[bundler]") {
  auto s = bundler::scope_css(":global .page .x, .y {\n}\n.a :global .b :local .c {\n}\n.d:global .e {\n}\n"
                              ":global(.f) .g {\n}\n:global-like .h {\n}\n",
                              "m.module.css");
  std::map<std::string, std::string> names(s.names.begin(), s.names.end());
  for (const char* local : {"y", "a", "c", "d", "g", "h"}) CHECK(names.contains(local));
  for (const char* global : {"page", "x", "b", "e", "f"}) CHECK(!names.contains(global));
  CHECK_THAT(s.css, Catch::StartsWith(".page .x, ." + names.at("y") + " {\n}\n." + names.at("a") + " .b ." + names.at("c") +
                                      " {\n}\n." + names.at("d") + " .e {\n}\n.f ." + names.at("g") + " {\n}\n:global-like ." +
                                      names.at("h")));
}

TEST_CASE("css: @import follows stylesheets as modules, cycles included", "[.esbuild]") {
  Tree t;
  t.write("src/m.js", "import './a.css';\nimport s from './c.module.css';\nexport const out = s.c;\n");
  t.write("src/a.css", "@import \"./b.css\";\n@import url(https://x.test/f.css);\n.a { background: url(i.png) }\n");
  t.write("src/b.css", "@import './a.css';\n.b { color: red }\n");
  t.write("src/c.module.css", ".c { composes: d from './d.module.css'; }\n");
  t.write("src/d.module.css", ".d { color: blue }\n");
  BundlerOptions o;
  o.esbuild = esbuild_program();
  auto b = std::make_shared<Bundler>(t.root(), o);
  csgi::App app([b](csgi::Env& env) { return (*b)(env); });
  auto res = call(app, "GET /src/m.js");
  REQUIRE(res.status == 200);
  CHECK(set_of(parse(res.body)) ==
        std::set<std::string>{"src/m.js", "src/a.css", "src/b.css", "src/c.module.css", "src/d.module.css"});
  CHECK_THAT(res.body, Catch::Contains(R"(@import \\\"https://x.test/f.css\\\";)"));
  CHECK_THAT(res.body, !Catch::Contains(R"(@import \\\"./b.css)"));
  auto css = call(app, "GET /~css/src/a.css");
  REQUIRE(css.status == 200);
  CHECK_THAT(css.body, !Catch::Contains("b.css"));
  CHECK_THAT(css.body, Catch::Contains("~asset/src/i.png"));
}

TEST_CASE("css: an SVG from ~asset runs no script as a document; no asset is sniffed", "[bundler]") {
  Tree t;
  t.write("img/x.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>");
  t.write("img/x.png", "\x89PNG fake");
  auto app = app_of(t.root());
  auto svg = call(app, "GET /~asset/img/x.svg");
  REQUIRE(svg.status == 200);
  CHECK(svg.header("Content-Type") == "image/svg+xml");
  CHECK(svg.header("Content-Security-Policy") == "default-src 'none'; style-src 'unsafe-inline'");
  CHECK(svg.header("X-Content-Type-Options") == "nosniff");
  auto png = call(app, "GET /~asset/img/x.png");
  REQUIRE(png.status == 200);
  CHECK(png.header("X-Content-Type-Options") == "nosniff");
  CHECK(png.header("Content-Security-Policy").empty());
}
