// Branches the defines make dead are not followed by the dependency scan; production bundles leave
// comments and indentation out, keeping every line.
#include "csgi/middleware/bundler/dead_code.hpp"

#include <catch2/catch.hpp>

#include "bundler_fixture.hpp"

using csgi::testing::call;
using namespace bundler_test;
namespace bundler = csgi::mw::bundler;

namespace {
// The source text of the dead ranges of `src` under NODE_ENV = `env`.
std::vector<std::string> dead_text(const std::string& src, const std::string& env) {
  std::vector<bundler::Token> tokens;
  bundler::ScanOptions o;
  o.chain_roots = {"process", "__DEV__"};
  o.tokens = &tokens;
  auto r = bundler::scan(src, o);
  REQUIRE_FALSE(r.error);
  bundler::Defines d{{"process.env.NODE_ENV", "\"" + env + "\""}, {"__DEV__", env == "production" ? "false" : "true"}};
  std::vector<std::string> out;
  for (auto [b, e] : bundler::dead_ranges(src, tokens, r.chains, d)) out.push_back(src.substr(b, e - b));
  return out;
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
  CHECK(dead_text("if ('production' !== process.env.NODE_ENV || __DEV__) x()\n", "production") == V{"x()"});
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
  // The code is left as it is: the dead branch never runs.
  CHECK_THAT(prod.body, Catch::Contains("require('./cjs/dev.js')"));
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
