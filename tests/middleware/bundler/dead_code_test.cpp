// Branches the defines make dead are not followed by the dependency scan and are left out of production
// bundles, as are comments and indentation, keeping every line.
#include "csgi/middleware/bundler/detail/dead_code.hpp"

#include <catch2/catch.hpp>

#include "bundler_fixture.hpp"

using csgi::testing::call;
using namespace bundler_test;
namespace bundler = csgi::mw::bundler;

namespace {
// The dead ranges of `src` under NODE_ENV = `env` (and __DEV__ true in development).
std::vector<bundler::DeadRange> dead_of(const std::string& src, const std::string& env, bool strict = false) {
  std::vector<bundler::Token> tokens;
  bundler::ScanOptions o;
  o.chain_roots = {"process", "__DEV__"};
  o.tokens = &tokens;
  auto r = bundler::scan(src, o);
  REQUIRE_FALSE(r.error);
  bundler::Defines d{{"process.env.NODE_ENV", "\"" + env + "\""}, {"__DEV__", env == "production" ? "false" : "true"}};
  return bundler::dead_ranges(src, tokens, r.chains, d, strict);
}
// Their source text.
std::vector<std::string> dead_text(const std::string& src, const std::string& env) {
  std::vector<std::string> out;
  for (const auto& r : dead_of(src, env)) out.push_back(src.substr(r.begin, r.end - r.begin));
  return out;
}
// `src` with each outermost dead range that can go replaced (dead_replacement).
std::string without_dead(const std::string& src, const std::string& env = "production", bool strict = false) {
  std::string out;
  std::size_t at = 0;
  for (const auto& r : dead_of(src, env, strict)) {
    auto text = bundler::dead_replacement(src, r);
    if (!text || r.begin < at) continue;
    out.append(src, at, r.begin - at).append(*text);
    at = r.end;
  }
  return out.append(src, at);
}
}  // namespace

TEST_CASE("dead code: if/else and ?: tests the defines make constant", "[bundler][defines]") {
  using V = std::vector<std::string>;
  std::string react =
      "'use strict';\nif (process.env.NODE_ENV === 'production') {\n  module.exports = require('./p');\n"
      "} else {\n  module.exports = require('./d');\n}\n";
  CHECK(dead_text(react, "production") == V{"{\n  module.exports = require('./d');\n}"});
  CHECK(dead_text(react, "development") == V{"{\n  module.exports = require('./p');\n}"});
  // != and ==, !, &&, ||, parentheses, unbraced statements, else if, ternaries.
  CHECK(dead_text("if (process.env.NODE_ENV != \"production\") a = require('x'); else b();", "production") ==
        V{"a = require('x');"});
  CHECK(dead_text("if (!(process.env.NODE_ENV == 'production') && __DEV__) x(); else if (y) z();", "development") ==
        V{"if (y) z();"});
  CHECK(dead_text("if ('production' !== process.env.NODE_ENV || __DEV__) x()\n", "production") ==
        V{"if ('production' !== process.env.NODE_ENV || __DEV__) x()"});  // no else: the whole statement
  CHECK(dead_text("module.exports = process.env.NODE_ENV === 'production' ? require('./p') : require('./d');",
                  "production") == V{"require('./d')"});
  CHECK(dead_text("f(__DEV__ ? a(1, 2) : b, c)", "production") == V{"a(1, 2)"});
  // Anything unknown keeps both branches.
  CHECK(dead_text("if (process.env.NODE_ENV === x) a(); else b();", "production").empty());
  CHECK(dead_text("if (process.env.NODE_ENV.length === 10) a(); else b();", "production").empty());
  CHECK(dead_text("if (typeof process.env.NODE_ENV) a(); else b();", "production").empty());
  CHECK(dead_text("if (__DEV__) for (;;) a(); else b();", "production").empty());
  CHECK(dead_text("if (__DEV__) a = 1\n+ require('x'); g()", "production").empty());  // ends by a line break
  CHECK(dead_text("x = __DEV__ ? 1 : a\n(require('y'))", "development").empty());
  CHECK(dead_text("x = y + __DEV__ ? 1 : 2", "development").empty());
}

TEST_CASE("dead code: each form is replaced by the shortest code keeping its line breaks", "[bundler][defines]") {
  // if without else (the whole statement), the branch of an if/else (a block or one statement), else-if chains.
  CHECK(without_dead("if (__DEV__) {\n  a();\n  b();\n}\nc();") == ";\n\n\n\nc();");
  CHECK(without_dead("if (__DEV__) x(); else y();") == "if (__DEV__) ; else y();");
  CHECK(without_dead("if (!__DEV__) {\n  y();\n} else {\n  x();\n}\n") == "if (!__DEV__) {\n  y();\n} else {\n\n}\n");
  CHECK(without_dead("if (__DEV__) a(); else if (x) b(); else c();") == "if (__DEV__) ; else if (x) b(); else c();");
  CHECK(without_dead("if (__DEV__) a(); else if (x) b(); else c();", "development") == "if (__DEV__) a(); else ;");
  CHECK(without_dead("if (x) {} else if (__DEV__) {\n  y();\n}\nz();") == "if (x) {} else ;\n\n\nz();");
  CHECK(without_dead("function f() { if (__DEV__) warn() }") == "function f() { ; }");
  // Ternary arms holding commas, arrow functions and nested ternaries become 0.
  CHECK(without_dead("f(__DEV__ ? (a, b) : c, d);") == "f(__DEV__ ? 0 : c, d);");
  CHECK(without_dead("g = __DEV__ ? () => {\n  warn();\n} : NOOP;") == "g = __DEV__ ? 0\n\n : NOOP;");
  CHECK(without_dead("x = __DEV__ ? a : b ? c : d;", "development") == "x = __DEV__ ? a : 0;");
  CHECK(without_dead("x = __DEV__ ? a ? b : c : d;") == "x = __DEV__ ? 0 : d;");
  CHECK(without_dead("x = y ? __DEV__ ? a : b : c;", "development") == "x = y ? __DEV__ ? a : 0 : c;");
  // The right operand of && (test false) and || (test true), up to an operator binding as loosely.
  CHECK(without_dead("!!(process.env.NODE_ENV !== \"production\") && warn(`x ${a}`, a);") ==
        "!!(process.env.NODE_ENV !== \"production\") && 0;");
  CHECK(without_dead("f(__DEV__ || x(), y)", "development") == "f(__DEV__ || 0, y)");
  CHECK(without_dead("f(__DEV__ || x(), y)") == "f(__DEV__ || x(), y)");
  CHECK(without_dead("x || __DEV__ && f(1, 2) || g") == "x || __DEV__ && 0 || g");
  CHECK(without_dead("y = __DEV__ && a.b in c ? d : e") == "y = __DEV__ && 0 ? d : e");
  CHECK(without_dead("a && __DEV__ && b()") == "a && __DEV__ && b()");
  CHECK(without_dead("__DEV__ && a\n(b)") == "__DEV__ && a\n(b)");  // where it ends is not certain
  CHECK(without_dead("if (__DEV__ && !cb) {\n  warn();\n}") == ";\n\n");
  // A test that short-circuits is a constant whatever the operand it skips, unless that may hold more.
  CHECK(without_dead("if (!__DEV__ || x.y(1)) a(); else b();") == "if (!__DEV__ || 0) a(); else ;");
  CHECK(without_dead("if (__DEV__ && a ? b : c) x();") == "if (__DEV__ && 0 ? b : c) x();");
  // Nested dead code goes with the outer range.
  CHECK(without_dead("if (__DEV__) {\n  if (!__DEV__) a(); else b();\n}") == ";\n\n");
  // Every line break stays (CRLF as \n); a line terminator other than \n keeps the code.
  std::string crlf = "if (__DEV__) {\r\n  a();\r\n}\r\nb();";
  CHECK(without_dead(crlf) == ";\n\n\r\nb();");
  CHECK(without_dead("if (__DEV__) {\r  a();\r}\nb();") == "if (__DEV__) {\r  a();\r}\nb();");
  CHECK(without_dead("if (__DEV__) { a('\xE2\x80\xA8'); }") == "if (__DEV__) { a('\xE2\x80\xA8'); }");
  // Development keeps what is live there.
  CHECK(without_dead("if (__DEV__) {\n  a();\n}", "development") == "if (__DEV__) {\n  a();\n}");
}

TEST_CASE("dead code: a range declaring a binding for its function stays whole", "[bundler][defines]") {
  auto kept = [](const std::string& src, bool strict = false) {
    return without_dead(src, "production", strict) == src;
  };
  // var (also in a nested block or a for head) and, in sloppy code, function declarations (Annex B).
  CHECK(kept("if (__DEV__) {\n  var a = 1, b;\n}"));
  CHECK(kept("if (__DEV__) { if (x) { for (var i = 0; i < 2; i++) {} } }"));
  CHECK(kept("if (__DEV__) { function f() {} }"));
  CHECK(kept("if (__DEV__) { label: function f() {} }"));
  CHECK(kept("if (__DEV__) { foo(a)\n{ var v; } }"));  // a block after a line break, not a method body
  CHECK(kept("if (__DEV__) { o = { var: 1 }; }"));     // unsure: kept
  CHECK(kept("if (__DEV__) { h('div', { class: 'x' }); if (y) { var z; } }"));  // a key, not a class
  CHECK(dead_of("if (__DEV__) {\n  var a = 1, b;\n}", "production").at(0).hoists);
  // Not the function's: var inside nested functions, methods, arrows and classes; let, const, class;
  // function expressions; function declarations in strict code (an ES module).
  CHECK(without_dead("if (__DEV__) { list.forEach(function (x) { var y = x; }); }") == ";");
  CHECK(without_dead("if (__DEV__) { o = { m() { var z; }, get g() { var w; } }; }") == ";");
  CHECK(without_dead("if (__DEV__) { class C { static { var s; } m() { var t; } } }") == ";");
  CHECK(without_dead("if (__DEV__) { x = () => { var q; }; let a; const b = 1; }") == ";");
  CHECK(without_dead("if (__DEV__) { x = function named() { var q; }, y = !function () {}; }") == ";");
  CHECK(without_dead("if (__DEV__) { function f() { var q; } }", "production", true) == ";");
  CHECK(without_dead("x = __DEV__ ? function () { var q; } : 1;") == "x = __DEV__ ? 0 : 1;");
}

TEST_CASE("bundler: production bundles leave dead code out, keeping every line", "[bundler][defines]") {
  Tree t;
  const std::string main =
      "var out = [];\nif (process.env.NODE_ENV !== 'production') {\n  out.push('dev block');\n}\n"
      "var x = process.env.NODE_ENV === 'production' ? 1 : (function () {\n  return 'dev arm';\n})();\n"
      "if (process.env.NODE_ENV !== 'production') {\n  var kept = 'dev var';\n}\nmodule.exports = out;\n";
  const std::string esm =
      "import { a } from './a.js';\nif (process.env.NODE_ENV !== 'production') {\n  a('dev esm');\n}\n"
      "export const y = process.env.NODE_ENV === 'production' ? 1 : a('dev esm arm');\n";
  t.write("main.js", main + "require('./esm.js');\n");
  t.write("esm.js", esm);
  t.write("a.js", "export function a(x) { return x; }\n");
  BundlerOptions o;
  o.mode = BundlerOptions::Mode::production;
  auto prod = call(app_of(t.root(), o), "GET /main.js");
  REQUIRE(prod.status == 200);
  CHECK_THAT(prod.body, !Catch::Contains("dev block") && !Catch::Contains("dev arm") && !Catch::Contains("dev esm"));
  CHECK_THAT(prod.body, Catch::Contains("var kept = 'dev var';"));  // a var binding stays
  CHECK_THAT(prod.body,
             Catch::Contains(R"(var out = [];\n;\n\n\nvar x = \"production\" === 'production' ? 1 : 0\n\n;)"));
  CHECK_THAT(prod.body, Catch::Contains(R"(yield;\n;\n\n\n)") &&
                            Catch::Contains(R"(y = \"production\" === 'production' ? 1 : 0;)"));
  // Every line kept: as many line breaks in each module's text as in its source.
  const auto texts = prod.body;
  CHECK(count_of(texts, "\\n") == count_of(main + "require('./esm.js');\n", "\n") + count_of(esm, "\n") +
                                      count_of("export function a(x) { return x; }\n", "\n"));
  auto dev = call(app_of(t.root()), "GET /main.js");
  REQUIRE(dev.status == 200);
  CHECK_THAT(dev.body, Catch::Contains("dev block") && Catch::Contains("dev arm") && Catch::Contains("dev esm arm"));
}

TEST_CASE("bundler: a require in a branch the mode makes dead is not bundled", "[bundler][defines]") {
  Tree t;
  t.write("node_modules/lib/index.js",
          "'use strict';\nif (process.env.NODE_ENV === 'production') {\n  module.exports = require('./cjs/prod.js');\n"
          "} else {\n  module.exports = require('./cjs/dev.js');\n}\n");
  t.write("node_modules/lib/cjs/prod.js", "module.exports = 'prod';\n");
  t.write("node_modules/lib/cjs/dev.js", "module.exports = 'dev';\n");
  t.write("main.js",
          "var lib = require('lib');\nmodule.exports = typeof __DEV__ !== 'undefined' && __DEV__ ? require('./a') : "
          "require('./b');\n");
  t.write("a.js", "");
  t.write("b.js", "");
  auto dev = call(app_of(t.root()), "GET /main.js");
  REQUIRE(dev.status == 200);
  CHECK(set_of(parse(dev.body)) ==
        std::set<std::string>{"main.js", "node_modules/lib/index.js", "node_modules/lib/cjs/dev.js", "a.js", "b.js"});
  BundlerOptions o;
  o.mode = BundlerOptions::Mode::production;
  o.defines = {{"__DEV__", "true"}};
  auto prod = call(app_of(t.root(), o), "GET /main.js");
  REQUIRE(prod.status == 200);
  // `typeof __DEV__` is not a constant: both of main's branches stay.
  CHECK(set_of(parse(prod.body)) ==
        std::set<std::string>{"main.js", "node_modules/lib/index.js", "node_modules/lib/cjs/prod.js", "a.js", "b.js"});
  // Production leaves the dead branch out, keeping its lines.
  CHECK_THAT(prod.body, !Catch::Contains("require('./cjs/dev.js')"));
  CHECK_THAT(prod.body, Catch::Contains(R"(} else {\n\n})"));
  CHECK_THAT(dev.body, Catch::Contains("require('./cjs/prod.js')"));
}

TEST_CASE("bundler: production bundles leave comments and indentation out, keeping every line", "[bundler][defines]") {
  Tree t;
  t.write("main.js",
          "/**\n * Docs.\n */\nvar a = 1; // one\nvar b = a/**/-/**/-1, s = '/* kept */', r = /\\/\\/x/;\n"
          "/*! legal */\n/* @license MIT */\nif (b) {\n    b = `x\n    y`;\n  }\nmodule.exports = b; /* two\n lines */ "
          "// end");
  auto source_of = [](const std::string& body) {
    auto b = body.find(",[],\"") + 5;
    auto e = body.find("\"]\n]");
    return body.substr(b, e - b);
  };
  BundlerOptions o;
  o.mode = BundlerOptions::Mode::production;
  auto prod = call(app_of(t.root(), o), "GET /main.js");
  REQUIRE(prod.status == 200);
  CHECK(source_of(prod.body) ==
        R"(\n\n\nvar a = 1;\nvar b = a - -1, s = '/* kept */', r = /\\/\\/x/;\n/*! legal */\n/* @license MIT */\n)"
        R"(if (b) {\nb = `x\n    y`;\n}\nmodule.exports = b;\n)");  // indentation goes too, template text stays
  auto dev = call(app_of(t.root()), "GET /main.js");
  CHECK_THAT(dev.body, Catch::Contains("Docs.") && Catch::Contains("// one"));
}
