#include "csgi/middleware/bundler/detail/esm_transform.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

using csgi::mw::bundler::EsmModule;
using csgi::mw::bundler::ScanOptions;
using csgi::mw::bundler::Token;

namespace {

EsmModule transform(std::string_view src) {
  std::vector<Token> tokens;
  ScanOptions o;
  o.tokens = &tokens;
  auto r = csgi::mw::bundler::scan(src, o);
  REQUIRE_FALSE(r.error);
  return csgi::mw::bundler::transform_esm(src, tokens);
}

// The module text the loader runs: the prefix, then the source with the edits.
std::string body(std::string_view src) {
  EsmModule m = transform(src);
  INFO(src);
  REQUIRE_FALSE(m.error);
  std::string out = m.prefix;
  std::size_t at = 0;
  for (auto& e : m.edits) {
    out.append(src.substr(at, e.begin - at)).append(e.text);
    at = e.end;
  }
  out.append(src.substr(at));
  CHECK(std::count(out.begin(), out.end(), '\n') == std::count(src.begin(), src.end(), '\n'));  // lines kept
  return out;
}

std::string error(std::string_view src) {
  EsmModule m = transform(src);
  INFO(src);
  REQUIRE(m.error);
  return *m.error;
}

}  // namespace

TEST_CASE("esm transform: import forms bind namespaces and rewrite references in place", "[bundler][esm]") {
  std::string b = body("import d, { a, b as c, \"x y\" as q } from './m.js';\nimport * as ns from './n.js';\n"
                       "import './side.js';\nd(a, c, q, ns.a);\n");
  CHECK(b.starts_with("'use strict';__csgi.e({});const __csgi_i0=__csgi.ns(0),__csgi_i1=__csgi.ns(1),"
                      "__csgi_i2=__csgi.ns(2);const ns=__csgi_i1;yield;\n\n\n"));
  CHECK_THAT(b, Catch::EndsWith("(0, __csgi_i0.default)(__csgi_i0.a, __csgi_i0.b, __csgi_i0[\"x y\"], ns.a);\n"));
  auto m = transform("import {a} from './m.js';\nexport {b} from './o.js';\nimport './m.js';");
  REQUIRE(m.requests.size() == 2);  // unique, in source order, resolved as imports
  CHECK(m.requests[0].spec == "./m.js");
  CHECK(m.requests[1].spec == "./o.js");
  CHECK(m.requests[1].line == 2);
  CHECK(m.requests[0].import);
  CHECK(m.meta == R"({"x":[],"r":[["b",1,"b"]],"s":[]})");
}

TEST_CASE("esm transform: export forms become getters on the first line", "[bundler][esm]") {
  std::string b = body("export let count = 0, other = f(1, 2);\nexport function inc() { count++; }\n"
                       "export class K {}\nexport { count as alias, inc as default };\n");
  CHECK(b.starts_with("'use strict';__csgi.e({\"count\":()=>count,\"other\":()=>other,"
                      "\"inc\":()=>inc,\"K\":()=>K,\"alias\":()=>count,"
                      "\"default\":()=>inc});yield; let count = 0, other = f(1, 2);\n function inc()"));
  CHECK_THAT(body("export default 1 + 2;"), Catch::EndsWith("yield;const __csgi_default = 1 + 2;"));
  CHECK_THAT(body("export default function () {}"), Catch::Contains("Object.defineProperty(__csgi_default,'name',{value:'default'})"));
  CHECK_THAT(body("export default function () {}"), Catch::EndsWith(" function __csgi_default () {}"));
  CHECK_THAT(body("export default class extends B {}"), Catch::EndsWith(" class __csgi_default extends B {}"));
  CHECK_THAT(body("export default async function named() {}"), Catch::Contains("\"default\":()=>named}"));
  CHECK(transform("export const { a, b: [c, , ...d], e = f(1, 2), ['k']: g, ...h } = o, [i = 1] = p, j = 2;").meta ==
        R"({"x":["a","c","d","e","g","h","i","j"],"r":[],"s":[]})");
  auto m = transform("export * from './a.js';\nexport * as ns from './b.js';\nexport { x as y } from './c.js';");
  CHECK(m.meta == R"({"x":[],"r":[["ns",1,"*"],["y",2,"x"]],"s":[0]})");
  // An imported binding exported again reads through the namespace.
  CHECK_THAT(body("import { a } from './a.js';\nexport { a as b };"), Catch::Contains("\"b\":()=>__csgi_i0.a}"));
}

TEST_CASE("esm transform: property names, keys, members and shorthands", "[bundler][esm]") {
  std::string b = body("import { x, f } from './m.js';\n"
                       "o.x; o?.x; ({ x: 1, f() {}, get x() {}, [x]: x, y: x ? x : f });\n"
                       "class C { x = 1; f() {} static x\n  y = x }\n({ x, f });\nswitch (1) { case x: break; }\n"
                       "f`t`;\n");
  CHECK_THAT(b, Catch::Contains("o.x; o?.x; ({ x: 1, f() {}, get x() {}, [__csgi_i0.x]: __csgi_i0.x, y: __csgi_i0.x ? "
                                "__csgi_i0.x : __csgi_i0.f });"));
  CHECK_THAT(b, Catch::Contains("class C { x = 1; f() {} static x\n  y = __csgi_i0.x }"));
  CHECK_THAT(b, Catch::Contains("({ x: __csgi_i0.x, f: __csgi_i0.f });"));
  CHECK_THAT(b, Catch::Contains("case __csgi_i0.x: break;"));
  CHECK_THAT(b, Catch::Contains("(0, __csgi_i0.f)`t`;"));
  CHECK_THAT(body("const u = import\n  .meta.url;"), Catch::EndsWith("const u = __csgi.meta\n.url;"));
  CHECK_THAT(body("const u = import.meta.url; import('./x.js');"),
             Catch::EndsWith("const u = __csgi.meta.url; __csgi.import('./x.js');"));
  CHECK_THAT(body("const k = { import: 1, import() {} }; class D { import() {} }"),
             Catch::EndsWith("const k = { import: 1, import() {} }; class D { import() {} }"));
  // A block after a line ended by ASI, which the lexer takes for an object literal: calls stay references.
  CHECK_THAT(body("import { x } from './m.js';\nlet a = b\n{ x() }"), Catch::EndsWith("{ (0, __csgi_i0.x)() }"));
  // `class` as a key does not make the next object literal a class body.
  CHECK_THAT(body("import { x } from './m.js';\n({ class: 1, o: { x } });"),
             Catch::EndsWith("({ class: 1, o: { x: __csgi_i0.x } });"));
  // Strings, comments, templates and regexes are not touched.
  CHECK_THAT(body("import { x } from './m.js';\n'x'; /* x */ `x ${x}`; /x/;"),
             Catch::EndsWith("'x'; /* x */ `x ${__csgi_i0.x}`; /x/;"));
}

TEST_CASE("esm transform: what it cannot prove is a clear error, not a miscompile", "[bundler][esm]") {
  const char* imp = "import { x } from './m.js';\n";
  // The top level redeclaring an import, a for without a braced body, a label, a class expression.
  for (std::string tail : {"var x = 1;", "const { x } = o;", "let [a, x] = o;", "function x() {}", "class x {}",
                           "x: for (;;) break x;", "for (let x of y) do g(x); while (0);", "const C = class x {};",
                           "function w() { a\nfunction x() {} }"}) {
    INFO(tail);
    CHECK_THAT(error(imp + tail), Catch::Contains("'x' is imported and also declared here in a way"));
  }
  CHECK(error("await f();") == "line 1: top-level await is not supported (use it inside an async function)");
  CHECK_THAT(error("for await (const a of b) {}"), Catch::Contains("top-level await"));
  CHECK_FALSE(transform("async function f() { await g(); }\nconst h = async () => await g();\n"
                        "class A { async m() { await 1; } }\nexport {};").error);
  CHECK_THAT(error("export const { a, b() {} } = o;"), Catch::Contains("destructuring"));
  CHECK_THAT(error("import j from './j.json' with { type: 'json' };"), Catch::Contains("import attributes"));
  CHECK_THAT(error("export const a = 1;\nexport { a };"), Catch::Contains("line 2: duplicate export 'a'"));
  CHECK_THAT(error("import { a } from './x.js';\nimport { a } from './y.js';"), Catch::Contains("imported twice"));
  CHECK_THAT(error("export const __csgi_i0 = 1;"), Catch::Contains("reserved"));
  CHECK_THAT(error("import { a } from x;"), Catch::Contains("from '<module>'"));
  // Bytes of no UTF-8 sequence (here inside a specifier) would go into JSON and JavaScript strings.
  CHECK(error("export const a = 1;\nimport x from \"y; \x9f\x87 z\";\n") ==
        "line 2: an ES module must be valid UTF-8");
  CHECK_FALSE(transform("export const caf\xc3\xa9 = '\xe2\x82\xac';").error);
  CHECK(error("export var \\u0061 = 1;") == "line 1: an identifier written with a \\u escape is not supported in an ES module");
  // An empty specifier as the first request of the module (once indexed a request that did not exist).
  for (const char* src : {"import x from '';", "export * from '';", "export { a } from '';"})
    CHECK_THAT(error(src), Catch::Contains("a module specifier must be a plain string literal"));
}

TEST_CASE("esm transform: locals named like an import keep their scope", "[bundler][esm]") {
  std::string b = body("import { x } from './m.js';\n"
                       "x;\n"
                       "function f(a, x = 1) { return x; }\n"
                       "function g() { if (a) { var x = 1; } return x; }\n"
                       "{ x; let x = 2; }\n"
                       "const h = (a, x) => { return x; }, k = x => { return x; };\n"
                       "try {} catch (x) { x; }\n"
                       "for (const x of [1]) { x; }\n"
                       "for (let i = 0, x = 1; i < x; i++) { x; }\n"
                       "({ m(x) { return x; } });\n"
                       "x;\n");
  CHECK_THAT(b, Catch::EndsWith("yield;\n"
                                "__csgi_i0.x;\n"
                                "function f(a, x = 1) { return x; }\n"
                                "function g() { if (a) { var x = 1; } return x; }\n"
                                "{ x; let x = 2; }\n"
                                "const h = (a, x) => { return x; }, k = x => { return x; };\n"
                                "try {} catch (x) { x; }\n"
                                "for (const x of [1]) { x; }\n"
                                "for (let i = 0, x = 1; i < x; i++) { x; }\n"
                                "({ m(x) { return x; } });\n"
                                "__csgi_i0.x;\n"));
  // Patterns, default values, concise arrows, nested function and class declarations, function
  // expressions' names (forms of minified and library code: lit, d3, three, vue, graphql, chart.js).
  b = body("import { x, y } from './m.js';\n"
           "function f(a, b = x, { c = x, x: [d] } = y) { return d; }\n"
           "const g = (t, x) => x + y, h = x => x\n"
           "x;\n"
           "function k() { const { p: { x }, q = x } = y; return x; }\n"
           "function m() { for (const [x] of y) { x; } return x; }\n"
           "function n() { return x(); function x() { return y; } }\n"
           "function o() { { class x {} } return x; }\n"
           "const p = function x() { return x; }, q = (0, x);\n"
           "const r = (a = (x) => x) => x, s = ({ [x]: z }) => z;\n"
           "switch (a) { case 1: function x() {} }\n"
           "for (const [x, z] of y) g(x, z), h(x); x;\n"
           "for (const x of y) for (i = 0; i < x; ++i) (a[i] = x).d = x; x;\n"
           "for (const x of y) if (x) g(x); else h(x); x;\n"
           "x;\n");
  CHECK_THAT(b, Catch::EndsWith("yield;\n"
                                "function f(a, b = __csgi_i0.x, { c = __csgi_i0.x, x: [d] } = __csgi_i0.y) { return d; }\n"
                                "const g = (t, x) => x + __csgi_i0.y, h = x => x\n"
                                "__csgi_i0.x;\n"
                                "function k() { const { p: { x }, q = x } = __csgi_i0.y; return x; }\n"
                                "function m() { for (const [x] of __csgi_i0.y) { x; } return __csgi_i0.x; }\n"
                                "function n() { return x(); function x() { return __csgi_i0.y; } }\n"
                                "function o() { { class x {} } return __csgi_i0.x; }\n"
                                "const p = function x() { return x; }, q = (0, __csgi_i0.x);\n"
                                "const r = (a = (x) => x) => __csgi_i0.x, s = ({ [__csgi_i0.x]: z }) => z;\n"
                                "switch (a) { case 1: function x() {} }\n"
                                "for (const [x, z] of __csgi_i0.y) g(x, z), h(x); __csgi_i0.x;\n"
                                "for (const x of __csgi_i0.y) for (i = 0; i < x; ++i) (a[i] = x).d = x; __csgi_i0.x;\n"
                                "for (const x of __csgi_i0.y) if (x) g(x); else h(x); __csgi_i0.x;\n"
                                "__csgi_i0.x;\n"));
  // `extends (expr) {` is a class heritage, not a parameter list.
  CHECK_THAT(body("import { x, y } from './m.js';\nclass A extends (x ?? y) { m() { return y; } }"),
             Catch::EndsWith("class A extends (__csgi_i0.x ?? __csgi_i0.y) { m() { return __csgi_i0.y; } }"));
  // A hashbang is only allowed as the module's first characters: it becomes a comment behind the prefix.
  CHECK_THAT(body("#!/usr/bin/env node\nimport { x } from './m.js';\nx;"),
             Catch::Contains("yield;///usr/bin/env node\n"));
  // A namespace import is a const of its own: JavaScript scopes it, nothing is rewritten or refused.
  CHECK_THAT(body("import * as ns from './m.js';\nfunction f(ns) { return ns; }\nns;"),
             Catch::EndsWith("function f(ns) { return ns; }\nns;"));
}
