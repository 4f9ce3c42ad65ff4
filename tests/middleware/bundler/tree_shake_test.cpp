// Tree shaking: which top-level statements of an ES module may be left out, what each refers to, and
// what stands in for them; then the bundler leaving them out and adding them when a later bundle needs them.
#include "csgi/middleware/bundler/detail/tree_shake.hpp"

#include <catch2/catch.hpp>

#include "bundler_fixture.hpp"
#include "csgi/middleware/bundler/detail/shake_plan.hpp"

using csgi::testing::call;
using namespace bundler_test;
namespace bundler = csgi::mw::bundler;

namespace {
struct Shaken {
  std::string src;
  bundler::EsmModule esm;
  std::optional<bundler::ShakeTable> table;
};
Shaken shake(const std::string& src) {
  Shaken s{src, {}, {}};
  std::vector<bundler::Token> tokens;
  bundler::ScanOptions o;
  o.tokens = &tokens;
  REQUIRE_FALSE(bundler::scan(s.src, o).error);
  s.esm = bundler::transform_esm(s.src, tokens);
  REQUIRE_FALSE(s.esm.error);
  s.table = bundler::shake_table(s.src, tokens, s.esm, {});
  return s;
}
// The names of each unit, "a,b" per unit.
std::vector<std::string> units_of(const std::string& src) {
  auto s = shake("import { imp } from './x.js';\n" + src);
  std::vector<std::string> out;
  if (!s.table) return out;
  for (const auto& u : s.table->units) {
    std::string n;
    for (const auto& name : u.names) n += (n.empty() ? "" : ",") + name;
    out.push_back(n);
  }
  return out;
}
using V = std::vector<std::string>;
BundlerOptions production() {
  BundlerOptions o;
  o.freshness = BundlerOptions::Freshness::none;
  o.mode = BundlerOptions::Mode::production;
  return o;
}
}  // namespace

TEST_CASE("tree shaking: declarations free of side effects are units", "[bundler][shake]") {
  CHECK(units_of("function f() { sideEffect(); }\nasync function g() {}\nfunction* h() {}") == V{"f", "g", "h"});
  CHECK(units_of("class A extends imp { m() { x(); } static s() {} get [Symbol.iterator]() {} }") == V{"A"});
  CHECK(units_of("const a = 1, b = 'x', c = `t`, d = /re/g, e = [1, {k: 2}], f = () => go(), g = function () {};") ==
        V{"a,b,c,d,e,f,g"});
  CHECK(units_of("let x;\nvar y = x ? 1 : 2;\nconst z = typeof window, w = -Math.PI / 2 + Number.EPSILON;") ==
        V{"x", "y", "z,w"});
  CHECK(units_of("const v = /*@__PURE__*/ new imp(1), w = /* #__PURE__ */ make(2);\nfunction make() {}") ==
        V{"v,w", "make"});
  CHECK(units_of("const m = new Map(), s = Symbol('s'), f = Object.freeze({ a: 1 }), o = { m() { go(); } };") ==
        V{"m,s,f,o"});
  CHECK(units_of("export const a = 1;\nexport function b() {}\nexport class C {}\nexport default 42;") ==
        V{"a", "b", "C", "__csgi_default"});
  CHECK(units_of("export default class { }") == V{"__csgi_default"});
  CHECK(units_of("function f() {}\nconst o = { function: f, class: 1, new: 2, default: 3 };") == V{"f", "o"});
  // Automatic semicolons end a declaration.
  CHECK(units_of("const a = 1\nconst b = 2\nfunction f() {}\nconst c = [1]\n[0]") == V{"a", "b", "f"});
}

TEST_CASE("tree shaking: statements with effects stay", "[bundler][shake]") {
  CHECK(units_of("const a = go();") == V{});
  CHECK(units_of("const o = { function: 1, x: go(), y() {} };") == V{});  // a key named function
  CHECK(units_of("const a = new imp();") == V{});
  CHECK(units_of("const a = imp.b;") == V{});              // a getter may run
  CHECK(units_of("const a = window;") == V{});             // an unknown global may throw
  CHECK(units_of("let a = 0; const b = a++;") == V{"a"});  // b assigns
  CHECK(units_of("const a = [...imp];") == V{});
  CHECK(units_of("const a = String.raw`x`;") == V{});       // a tagged template is a call
  CHECK(units_of("const a = (function () {})();") == V{});  // a call of a function expression
  CHECK(units_of("const a = function () {}();") == V{});
  CHECK(units_of("class A { static { go(); } }") == V{});
  CHECK(units_of("class A { static x = go(); }") == V{});
  CHECK(units_of("class A { [go()]() {} }") == V{});
  CHECK(units_of("class A extends go() {}") == V{});
  CHECK(units_of("const { a, b } = imp;") == V{});  // a pattern
  CHECK(units_of("export default go();") == V{});
  CHECK(units_of("export default function () {}") == V{});  // its name is set by the module's prefix
  CHECK(units_of("imp.x = 1;\nif (imp) { function f() {} }") == V{});
}

TEST_CASE("tree shaking: a name declared twice keeps its declarations; eval keeps the module", "[bundler][shake]") {
  CHECK(units_of("var a = 1;\nvar a = 2;\nfunction f() {}") == V{"f"});
  CHECK(units_of("var i = 0;\nfor (var i = 0; i < 2; i++) {}\nconst k = 1;") == V{"k"});
  CHECK_FALSE(shake("function f() {}\neval('f');").table);
  CHECK_FALSE(shake("go();").table);
}

TEST_CASE("tree shaking: what each unit and the rest refer to", "[bundler][shake]") {
  auto s = shake(
      "import d, { a as b } from './x.js';\nimport * as ns from './y.js';\n"
      "function f() { return g() + b; }\nfunction g() { return ns.k; }\nconst h = { f };\n"
      "const obj = { g: 1 };\nexport { f };\nh.f();\nconsole.log(obj.g, d);\n");
  REQUIRE(s.table);
  const auto& t = *s.table;
  REQUIRE(t.units.size() == 4);  // f, g, h, obj
  CHECK(t.unit_of.at("f") == 1);
  CHECK(t.uses[1] == std::vector<std::uint32_t>{2});  // f → g (b is an import)
  CHECK(t.imports[1] == std::vector<std::pair<std::uint32_t, std::string>>{{0, "a"}});
  CHECK(t.imports[2] == std::vector<std::pair<std::uint32_t, std::string>>{{1, "k"}});  // ns.k: one name
  CHECK(t.uses[3] == std::vector<std::uint32_t>{1});  // h = { f }: shorthand is a reference
  CHECK(t.uses[4].empty());                           // { g: 1 }: a key is not
  // The rest: `h.f()` and `console.log(obj.g, d)`; `export { f }` names f without using it.
  CHECK(t.uses[0] == std::vector<std::uint32_t>{3, 4});
  CHECK(t.imports[0] == std::vector<std::pair<std::uint32_t, std::string>>{{0, "default"}});
}

TEST_CASE("tree shaking: code the defines make dead refers to nothing", "[bundler][shake]") {
  std::string src = "function warn() {}\nif (process.env.NODE_ENV !== 'production') { warn(); }\nexport const x = 1;\n";
  std::vector<bundler::Token> tokens;
  bundler::ScanOptions o;
  o.tokens = &tokens;
  o.chain_roots = {"process"};
  auto r = bundler::scan(src, o);
  auto esm = bundler::transform_esm(src, tokens);
  auto dead = bundler::dead_ranges(src, tokens, r.chains, {{"process.env.NODE_ENV", "\"production\""}}, true);
  REQUIRE(dead.size() == 1);
  auto with = bundler::shake_table(src, tokens, esm, dead);
  REQUIRE(with);
  CHECK(with->uses[0].empty());
  auto without = bundler::shake_table(src, tokens, esm, {});
  REQUIRE(without);
  CHECK(without->uses[0] == std::vector<std::uint32_t>{1});
}

TEST_CASE("tree shaking: placeholders and assignments keep lines", "[bundler][shake]") {
  auto s = shake(
      "import B from './b.js';\nexport class A extends B {\n  m() {}\n}\nconst a = 1,\n  b = 2;\n"
      "function f() {}\n");
  REQUIRE(s.table);
  REQUIRE(s.table->units.size() == 3);
  const auto& a = s.table->units[0];
  const auto& decl = s.table->units[1];
  const auto& f = s.table->units[2];
  CHECK(a.line == 2);
  CHECK(decl.line == 5);
  CHECK(bundler::unit_placeholder(a, s.src) == "let A;\n\n");
  CHECK(bundler::unit_placeholder(decl, s.src) == "let a,b;\n");
  CHECK(bundler::unit_assignment(a, "       class A extends B {}") == "A=       class A extends B {};");
  CHECK(bundler::unit_assignment(decl, "const a = 1,\n  b = 2;") == "      a = 1,\n  b = 2;;");
  CHECK(bundler::unit_assignment(f, "function f() {}") == "f=function f() {};");
}

TEST_CASE("tree shaking: unit sets as the loader carries them", "[bundler][shake]") {
  bundler::UnitSet u(14, false);
  u[0] = true;
  u[1] = u[6] = u[7] = u[13] = true;
  CHECK(bundler::encode_units(u) == "hBB");  // units 1,6 → 33 'h'; 7 → 1 'B'; 13: bit 0 of char 2, 'B'
  auto back = bundler::decode_units("hBB", 13);
  REQUIRE(back);
  CHECK(*back == u);
  CHECK(bundler::encode_units(bundler::UnitSet(5, false)) == "");
  CHECK_FALSE(bundler::decode_units("a.b", 3));
  CHECK(bundler::decode_units("_", 2)->size() == 3);  // bits past the table are ignored
}

namespace {
// The rows of a bundle: one per line after the first.
std::vector<std::string> rows_of(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = body.find('\n');
  while (at != std::string::npos && at + 1 < body.size()) {
    std::size_t nl = body.find('\n', at + 1);
    std::string line = body.substr(at + 1, nl == std::string::npos ? std::string::npos : nl - at - 1);
    if (line.starts_with("[")) out.push_back(line);
    at = nl;
  }
  return out;
}
}  // namespace

TEST_CASE("bundler: production bundles leave out what nothing refers to and add it later", "[bundler][shake]") {
  Tree t;
  t.write("lib.js",
          "export let count = 0;\nexport function inc() { return ++count; }\n"
          "export class Base {}\nexport class Derived extends Base {}\nexport const table = { a: 1 };\n"
          "function helper() { return 'h'; }\nexport const viaHelper = /*@__PURE__*/ helper();\n");
  t.write("main.js", "import { inc } from './lib.js';\ninc();\n");
  t.write("more.js", "import { Derived } from './lib.js';\nexport const d = new Derived();\n");
  auto app = Bundler(t.root(), production());

  auto first = call(app, "GET /main.js");
  REQUIRE(first.status == 200);
  CHECK(first.header("X-Bundle-Shaken") == "5 left out, 0 modules completed");
  auto page = parse(first.body);
  auto rows = rows_of(first.body);
  REQUIRE(rows.size() == 2);
  const std::string& lib = rows[1];
  CHECK(lib.find("__csgi.x=s=>eval(s);") != std::string::npos);
  CHECK(lib.find("function inc()") != std::string::npos);
  CHECK(lib.find("let count = 0;") != std::string::npos);
  CHECK(lib.find("let Base;\\nlet Derived;\\nlet table;\\nlet helper;\\nlet viaHelper;") != std::string::npos);
  CHECK(lib.find("\"k\":\"D\"") != std::string::npos);  // units held: count and inc (1, 2)
  CHECK(count_of(first.body, "\\n") == count_of(call(app, "GET /main.js").body, "\\n"));

  // A later bundle adds Base and Derived to the held module (in source order), and nothing else.
  const std::string lib_id = std::to_string(page.ids.at("lib.js"));
  std::string held = "&have=" + have(ids_of(page)) + "&p=" + lib_id + ".D";
  auto later = call(app, "GET /more.js?e=" + page.epoch + held);
  REQUIRE(later.status == 200);
  CHECK(later.header("X-Bundle-Shaken") == "0 left out, 1 modules completed");
  auto more_rows = rows_of(later.body);
  REQUIRE(more_rows.size() == 2);
  CHECK(more_rows[0].starts_with("[" + std::to_string(parse(later.body).ids.at("more.js")) + ",\"more.js\""));
  CHECK(more_rows[1] == "[" + lib_id +
                            ",null,\"P\",[[3,3,\"Base= class Base {};\"],"
                            "[4,4,\"Derived= class Derived extends Base {};\"]]]");

  // Asking for the module itself: all the rest, functions first (they are hoisted), and "all" (null).
  auto rest = call(app, "GET /lib.js?e=" + page.epoch + "&have=" + have(ids_of(page)) + "&p=" + lib_id + ".P");
  REQUIRE(rest.status == 200);
  auto rest_rows = rows_of(rest.body);
  REQUIRE(rest_rows.size() == 1);
  CHECK(rest_rows[0].starts_with("[" + lib_id + ",null,null,[[6,6,\"helper=function helper()"));
  CHECK(rest_rows[0].find("[5,5,\"       table = { a: 1 };;\"]") != std::string::npos);
  CHECK(rest_rows[0].find("[7,7,\"       viaHelper = helper();;\"]") != std::string::npos);
  // Held whole (no p=): an empty bundle, as before.
  CHECK(rows_of(call(app, "GET /lib.js?e=" + page.epoch + "&have=" + have(ids_of(page))).body).empty());
  CHECK(call(app, "GET /lib.js?e=" + page.epoch + "&p=x").status == 400);
  CHECK(call(app, "GET /lib.js?e=" + page.epoch + "&have=" + have(ids_of(page)) + "&p=" + lib_id + ".*").status == 400);
}

TEST_CASE("bundler: development bundles and tree_shake = false send whole modules", "[bundler][shake]") {
  Tree t;
  t.write("lib.js", "export function used() {}\nexport function unused() {}\n");
  t.write("main.js", "import { used } from './lib.js';\nused();\n");
  BundlerOptions o;
  o.freshness = BundlerOptions::Freshness::none;
  auto dev = call(Bundler(t.root(), o), "GET /main.js");
  CHECK(dev.body.find("function unused()") != std::string::npos);
  CHECK(dev.header("X-Bundle-Shaken").empty());
  o.mode = BundlerOptions::Mode::production;
  CHECK(call(Bundler(t.root(), o), "GET /main.js").body.find("function unused()") == std::string::npos);
  o.tree_shake = false;
  CHECK(call(Bundler(t.root(), o), "GET /main.js").body.find("function unused()") != std::string::npos);
}

TEST_CASE("bundler: what CommonJS requires and what the page asks for is kept whole", "[bundler][shake]") {
  Tree t;
  t.write("esm.js", "export function a() {}\nexport function b() {}\n");
  t.write("star.js", "export * from './esm.js';\n");
  t.write("cjs.js", "module.exports = require('./esm.js');\n");
  auto app = Bundler(t.root(), production());
  CHECK(call(app, "GET /cjs.js").header("X-Bundle-Shaken").empty());
  CHECK(call(app, "GET /star.js").header("X-Bundle-Shaken").empty());  // the entry's namespace: all
  CHECK(call(app, "GET /esm.js").header("X-Bundle-Shaken").empty());
}

TEST_CASE("tree shaking: a unit that reads a binding assigned elsewhere stays", "[bundler][shake]") {
  // A statement added later would read the value of then, not the one it had where it stands (the
  // declarations themselves stay units: whatever assigns them keeps them).
  CHECK(units_of("let cur = null;\nexport function set(v) { cur = v; }\nconst snap = cur;") == V{"cur", "set"});
  CHECK(units_of("let n = 0;\nn++;\nconst copy = n, later = () => n;") == V{"n"});
  CHECK(units_of("let a = 1, b = 2;\n[a, b] = [b, a];\nconst c = b;") == V{"a,b"});
  CHECK(units_of("let a = 1, b = 2;\nconst c = b, d = () => a;") == V{"a,b", "c,d"});
  CHECK(units_of("var x = 1;\nfor (x of [1, 2]) {}\nconst y = x;") == V{"x"});
}
