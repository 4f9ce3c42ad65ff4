// Barrel optimization: named imports from a side-effect-free package's re-exporting module are served
// from the modules that define them; that module and the unused ones are not sent.
#include <catch2/catch.hpp>

#include "bundler_fixture.hpp"

using csgi::testing::call;
using namespace bundler_test;

namespace {
void write_lib(Tree& t, const std::string& side_effects) {
  t.write("node_modules/lib/package.json", R"({"module": "./index.js")" + side_effects + "}");
  t.write("node_modules/lib/index.js",
          "export * from './a.js';\nexport { default as b, bump } from './b.js';\nexport * as cns from './c.js';\n"
          "import { d } from './d.js';\nexport { d };\nexport * from './unused.js';\n");
  t.write("node_modules/lib/a.js", "export let a = 1;\nexport function incA() { a++; }\n");
  t.write("node_modules/lib/b.js",
          "let n = 0;\nexport default function b() { return n; }\nexport function bump() { n++; }\n");
  t.write("node_modules/lib/c.js", "export const c = 'c';\n");
  t.write("node_modules/lib/d.js", "export const d = 'd';\n");
  t.write("node_modules/lib/unused.js", "import big from './big.js';\nexport const u = big;\n");
  t.write("node_modules/lib/big.js", "module.exports = 1;\n");
}
}  // namespace

TEST_CASE("bundler: named imports from a side-effect-free barrel skip it", "[bundler][esm][barrel]") {
  Tree t;
  write_lib(t, R"(, "sideEffects": false)");
  t.write("main.js", "import { a, incA, b, cns, d } from 'lib';\nexport const all = [a, incA, b, cns, d];\n");
  t.write("ns.js", "import * as lib from 'lib';\nexport const all = lib;\n");
  t.write("star.js", "export * from 'lib';\n");
  auto app = app_of(t.root());
  auto res = call(app, "GET /main.js");
  REQUIRE(res.status == 200);
  auto b = parse(res.body);
  CHECK(set_of(b) == std::set<std::string>{"main.js", "node_modules/lib/a.js", "node_modules/lib/b.js",
                                           "node_modules/lib/c.js", "node_modules/lib/d.js"});
  // The dependency map names, for each imported name, the defining module and its name there.
  auto id = [&](const std::string& p) { return std::to_string(b.ids.at("node_modules/lib/" + p)); };
  CHECK_THAT(res.body, Catch::Contains("[[\"lib\",[[\"a\"," + id("a.js") + ",\"a\"],[\"incA\"," + id("a.js") +
                                       ",\"incA\"],[\"b\"," + id("b.js") + ",\"default\"],[\"cns\"," + id("c.js") +
                                       ",\"*\"],[\"d\"," + id("d.js") + ",\"d\"]]]]"));
  // Later, the whole barrel: only what the page lacks.
  auto later = call(app, "GET /ns.js?e=" + b.epoch + "&have=" + have(ids_of(b)));
  REQUIRE(later.status == 200);
  CHECK(set_of(parse(later.body)) == std::set<std::string>{"ns.js", "node_modules/lib/index.js",
                                                           "node_modules/lib/unused.js", "node_modules/lib/big.js"});
  // A namespace import and export * need the module itself.
  CHECK(set_of(parse(call(app, "GET /ns.js").body)).count("node_modules/lib/index.js") == 1);
  CHECK(set_of(parse(call(app, "GET /star.js").body)).count("node_modules/lib/index.js") == 1);
}

TEST_CASE("bundler: a barrel that may have side effects is sent whole", "[bundler][esm][barrel]") {
  for (std::string se :
       {std::string(), std::string(R"(, "sideEffects": true)"), std::string(R"(, "sideEffects": ["./index.js"])"),
        std::string(R"(, "sideEffects": ["*.js"])")}) {
    Tree t;
    write_lib(t, se);
    t.write("main.js", "import { a } from 'lib';\n");
    auto res = call(app_of(t.root()), "GET /main.js");
    REQUIRE(res.status == 200);
    CHECK(set_of(parse(res.body)).count("node_modules/lib/index.js") == 1);
    CHECK(set_of(parse(res.body)).count("node_modules/lib/unused.js") == 1);
  }
  // A glob naming other files leaves the barrel free of side effects.
  Tree t;
  write_lib(t, R"(, "sideEffects": ["./src/**/*.css", "polyfill.js"])");
  t.write("main.js", "import { a } from 'lib';\n");
  auto res = call(app_of(t.root()), "GET /main.js");
  CHECK(set_of(parse(res.body)) == std::set<std::string>{"main.js", "node_modules/lib/a.js"});
}
