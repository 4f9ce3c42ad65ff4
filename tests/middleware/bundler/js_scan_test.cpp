#include "csgi/middleware/bundler/detail/js_scan.hpp"

#include <catch2/catch.hpp>

using csgi::mw::bundler::scan;

namespace {
std::vector<std::string> specs(std::string_view src) {
  auto r = scan(src);
  INFO(r.error.value_or(""));
  REQUIRE_FALSE(r.error);
  std::vector<std::string> out;
  for (auto& d : r.deps) out.push_back(d.spec);
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST_CASE("scan: plain requires, quotes, escapes and lines", "[bundler][lexer]") {
  auto r = scan("var a = require('./a');\nvar b = require(\"./b.js\");\nrequire(`./c`);\nrequire('./\\x64');");
  REQUIRE_FALSE(r.error);
  REQUIRE(r.deps.size() == 4);
  CHECK(r.deps[0].spec == "./a");
  CHECK(r.deps[0].line == 1);
  CHECK(r.deps[1].spec == "./b.js");
  CHECK(r.deps[1].line == 2);
  CHECK(r.deps[2].spec == "./c");
  CHECK(r.deps[3].spec == "./d");
}

TEST_CASE("scan: /*#__PURE__*/ comments before require count", "[bundler][lexer]") {
  CHECK(specs("var x = /*#__PURE__*/require(\"./x.js\");") == V{"./x.js"});
  CHECK(specs("var x = require /* c */ ( /* c */ './y' /* c */ );") == V{"./y"});
}

TEST_CASE("scan: requires inside comments, strings and templates are not dependencies", "[bundler][lexer]") {
  CHECK(specs("// require('a')\n/* require('b') */\nvar s = \"require('c')\"; var t = 'require(\"d\")';").empty());
  CHECK(specs("var t = `text require('e') ${ 1 + 2 } more require('f')`;").empty());
  CHECK(specs("var t = `a ${ require('./inner') } b`;") == V{"./inner"});
  CHECK(specs("var t = `a ${ `nested ${ require('./deep') } x` } b`; require('./after');") == V{"./deep", "./after"});
  CHECK(specs("var t = `${ {a: 1}.a }`; require('./z');") == V{"./z"});
}

TEST_CASE("scan: regex literals versus division", "[bundler][lexer]") {
  // A regex holding a quote and require('x') must not open a string or count.
  CHECK(specs("var r = /'require('no')/g; require('./yes');") == V{"./yes"});
  CHECK(specs("if (x) /\"/.test(s); require('./yes');") == V{"./yes"});
  CHECK(specs("return /[/'\"]/.test(s) && require('./yes');") == V{"./yes"});
  // Division: after identifiers, numbers, ')' of a call, ']' — a quote after it is a real string.
  CHECK(specs("var q = a / b / c; require('./one');") == V{"./one"});
  CHECK(specs("var q = f(x) / 2, s = '/'; require('./two');") == V{"./two"});
  CHECK(specs("var q = arr[0] / 2; var s = 'x/'; require('./three');") == V{"./three"});
  CHECK(specs("var q = 4 / 2 /* / */; require('./four');") == V{"./four"});
  // '}' of a block: regex; '}' of an object literal: division.
  CHECK(specs("function f() {}\n/'/.test(s); require('./five');") == V{"./five"});
  CHECK(specs("var n = {a: 1}.a / 2; var s = '/'; require('./six');") == V{"./six"});
  // Regex with a class containing '/', and flags.
  CHECK(specs("var r = /[/]+/gi; require('./seven');") == V{"./seven"});
  CHECK(specs("x = y\n/foo/g.exec(z); require('./eight')").size() == 1);
}

TEST_CASE("scan: only the free identifier require counts", "[bundler][lexer]") {
  CHECK(specs("var util = freeModule.require('util'); x?.require('y');").empty());
  CHECK(specs("function f(require) { require('./local'); }\nrequire('./free');") == V{"./free"});
  CHECK(specs("var g = (a, require) => { require('./local'); }; require('./free');") == V{"./free"});
  CHECK(specs("var g = require => { require('./local'); }; require('./free');") == V{"./free"});
  CHECK(specs("{ let require = f; require('./local'); }\nrequire('./free');") == V{"./free"});
  CHECK(specs("function require(x) {}\nrequire('./shadowed');").empty());
  CHECK(specs("if (typeof require === 'function') { require('./yes'); }") == V{"./yes"});
  CHECK(specs("if (require) { require('./yes'); }") == V{"./yes"});
  // A default value `= require` is a reference, not a parameter named require (yargs).
  CHECK(specs("function Y(a = [], r = require) { require('./yes'); }") == V{"./yes"});
  CHECK(specs("function Y(r = require, b) { require('./yes'); }") == V{"./yes"});
  CHECK(specs("function Y(a, ...require) { require('./local'); }").empty());
  CHECK(specs("function Y(require = f) { require('./local'); }").empty());
  // A top-level `var require` in CommonJS is the wrapper's parameter (events' tests); in a function or
  // an ES module it is a local.
  CHECK(specs("var r0 = require;\nvar require = function (f) { return r0(f); };\nrequire('./yes');") == V{"./yes"});
  CHECK(specs("function f() { var require = g; require('./local'); }").empty());
  CHECK(specs("import { createRequire } from 'module';\nvar require = createRequire('/');\nrequire('w');").empty());
}

TEST_CASE("scan: dynamic and two-argument requires are reported, not bundled", "[bundler][lexer]") {
  auto r = scan("require(name);\nrequire('./a' + x);\nrequire('./b', cb);\nrequire();\nrequire(`./${x}`);\nimport('./m');");
  REQUIRE_FALSE(r.error);
  CHECK(r.deps.empty());
  REQUIRE(r.unbundled.size() == 6);
  CHECK(r.unbundled[0].what == "require(expr)");
  CHECK(r.unbundled[1].line == 2);
  CHECK(r.unbundled[2].what == "require('./b', ...)");
  CHECK(r.unbundled[3].what == "require()");
  CHECK(r.unbundled[4].what == "require(expr)");
  CHECK(r.unbundled[5].what == "import()");
  CHECK_FALSE(r.esm_line);
}

TEST_CASE("scan: ES module syntax is detected", "[bundler][lexer]") {
  auto r = scan("var a = 1;\nimport x from './x.js';\nexport { y } from \"./y.js\";\nimport './side.js';");
  REQUIRE_FALSE(r.error);
  REQUIRE(r.esm_line);
  CHECK(*r.esm_line == 2);
  REQUIRE(r.esm_imports.size() == 3);
  CHECK(r.esm_imports[0].spec == "./x.js");
  CHECK(r.esm_imports[1].spec == "./y.js");
  CHECK(r.esm_imports[2].spec == "./side.js");
  CHECK_FALSE(scan("var o = { import: 1, export: 2 }; o.import; o.export;").esm_line);
  CHECK_FALSE(scan("class H { async export() { return 1; } export = 2; }").esm_line);  // playwright-core
  CHECK(scan("export default 1;").esm_line);
}

TEST_CASE("scan: unlexable input is a clear error, never a crash", "[bundler][lexer]") {
  auto check = [](std::string_view src, std::string_view what) {
    auto r = scan(src);
    REQUIRE(r.error);
    CHECK_THAT(*r.error, Catch::Contains(std::string(what)));
  };
  check("var s = 'open", "unterminated string");
  check("var s = \"a\nb\";", "unterminated string");
  check("/* never closed", "unterminated comment");
  check("var t = `never closed", "unterminated template");
  check("var t = `a ${ b `;", "unterminated template");
  check("var r = /abc\n/;", "unterminated regular expression");
  check("function f() {", "never closed");
  check("}", "unbalanced");
  check("var x = 1;\nvar y = \x01;", "line 2");
  // Bytes of any value: never throws.
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(char((i * 7919) & 0xff));
  CHECK_NOTHROW(scan(junk));
  CHECK_NOTHROW(scan(std::string_view("require('\\", 11)));
}

TEST_CASE("scan: hashbang, numbers, private names, optional chaining", "[bundler][lexer]") {
  CHECK(specs("#!/usr/bin/env node\nrequire('./a');") == V{"./a"});
  CHECK(specs("var n = 1e-5 / 2 + 0x1F / 3 + .5 / 1 + 10n; require('./b');") == V{"./b"});
  CHECK(specs("class A { #p = 1; m() { return this.#p / 2; } } require('./c');") == V{"./c"});
  CHECK(specs("var v = a?.b / 2 + (c ?.5 : 1); require('./d');") == V{"./d"});
}

TEST_CASE("scan: every prefix of a tricky source scans without crashing", "[bundler][lexer]") {
  const std::string src =
      "#!/usr/bin/env node\n'use strict';\nvar a = /*#__PURE__*/require(\"./a\"), r = /[/'\\]]+/g, d = a / 2 / 3;\n"
      "var t = `x ${ `y ${ {k: '}'}.k } z` } \\` ${ require('./t') }`;\n// require('c')\n"
      "function f(require) { return require('./local'); }\nif (d) /re/.test('s'); else { x = {}.y / 1; }\n"
      "class C { #p = 1; async export() { return this.#p?.q ?? 0; } }\nconst s = '\\u2028\\x41', u = \"\\\"\";\n"
      "module.exports = () => require(`./tpl`);\n";
  auto full = scan(src);
  INFO(full.error.value_or(""));
  REQUIRE_FALSE(full.error);
  CHECK(full.deps.size() == 3);
  for (std::size_t n = 0; n <= src.size(); ++n) {
    auto r = scan(std::string_view(src).substr(0, n));
    CHECK(r.deps.size() <= 3);
  }
}

TEST_CASE("scan: member chains of chosen roots, for defines", "[bundler][lexer][defines]") {
  csgi::mw::bundler::ScanOptions o;
  o.chain_roots = {"process", "__DEV__"};
  std::string src =
      "a(process.env.NODE_ENV); 'process.env.NODE_ENV'; // process.env.NODE_ENV\n"
      "/* process */ x = `${process.env.X} process.env.Y`; y = /process.env/g;\n"
      "process\n  .env . NODE_ENV; o.process.env; o?.process; var process = 1;\n"
      "process.env.A = 1; process.env.B += 2; process.env.C++; ++process.env.D; delete process.env.E;\n"
      "process.env.F == 1; q = {process: 1, process}; __DEV__ && process.env.G.length; process.";
  auto r = scan(src, o);
  REQUIRE_FALSE(r.error);
  std::vector<std::string> paths;
  for (auto& c : r.chains) paths.push_back(c.path);
  CHECK(paths == V{"process.env.NODE_ENV", "process.env.X", "process.env.NODE_ENV", "process.env.F", "__DEV__",
                   "process.env.G.length", "process"});
  // Offsets: the chain's text, each prefix's end; a chain across lines keeps its span.
  auto& first = r.chains[0];
  CHECK(src.substr(first.begin, first.ends.back() - first.begin) == "process.env.NODE_ENV");
  REQUIRE(first.ends.size() == 3);
  CHECK(src.substr(first.begin, first.ends[0] - first.begin) == "process");
  auto& split = r.chains[2];
  CHECK(src.substr(split.begin, split.ends.back() - split.begin) == "process\n  .env . NODE_ENV");
  // Nothing is recorded unless asked for.
  CHECK(scan(src).chains.empty());
}
