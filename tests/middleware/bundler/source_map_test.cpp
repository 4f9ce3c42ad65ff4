#include "csgi/middleware/bundler/detail/source_map.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bundler_fixture.hpp"

namespace bundler = csgi::mw::bundler;
using bundler::Mapping;

TEST_CASE("source map: mappings survive VLQ encoding, negative deltas and several lines", "[bundler]") {
  std::vector<Mapping> m{{0, 0, 0, 0}, {0, 17, 3, 2}, {0, 40, 1, 0}, {2, 0, 200, 1000}, {2, 5, 0, 0}};
  CHECK(bundler::encode_mappings(m) == "AAAA,iBAGE,uBAFF;;AAuMw+B,KAxMx+B");  // as node's module.SourceMap reads it
  CHECK(bundler::decode_mappings(bundler::encode_mappings(m)) == m);
  CHECK(!bundler::decode_mappings("AA!A"));
  CHECK(!bundler::decode_mappings("AAA"));  // neither 1, 4 nor 5 fields
}

TEST_CASE("source map: the bundler's edits map each copied word and each edited line back", "[bundler]") {
  //                 0123456789012345678
  std::string src = "let a = X.Y;\nf(a);\n";
  std::vector<bundler::EsmEdit> edits{{8, 11, "\"v\""}, {13, 14, "g"}};
  auto m = bundler::edit_mappings(src, edits, "P;", 5);
  // Line 0: the prefix at 5 (→ 0:0), "let" at 7, "a" at 11, " = " ..., the edit at 15 (→ 0:8), ";" at 18.
  CHECK(m == std::vector<Mapping>{{0, 5, 0, 0}, {0, 7, 0, 0}, {0, 11, 0, 4}, {0, 15, 0, 8}, {0, 18, 0, 11},
                                  {1, 0, 1, 0}, {1, 1, 1, 1}, {1, 2, 1, 2}});
  // Composed with a map of the middle text back to a source: each position takes the segment at or before.
  std::vector<Mapping> inner{{0, 0, 4, 0}, {0, 8, 4, 20}, {1, 2, 7, 3}};
  CHECK(bundler::compose(m, inner) ==
        std::vector<Mapping>{{0, 5, 4, 0}, {0, 7, 4, 0}, {0, 11, 4, 0}, {0, 15, 4, 20}, {0, 18, 4, 20}, {1, 2, 7, 3}});
}

TEST_CASE("source map: esbuild's inline map is taken off its output", "[bundler]") {
  std::string code = "let a = 1;\n//# sourceMappingURL=data:application/json;base64,eyJ2ZXJzaW9uIjozfQ==\n";
  auto map = bundler::take_inline_map(code);
  REQUIRE(map);
  CHECK(*map == "{\"version\":3}");
  CHECK(code == "let a = 1;\n");
  std::string plain = "let a = 1;\n";
  CHECK(!bundler::take_inline_map(plain));
}

TEST_CASE("source map: <mount>/~map/<path> answers a module's map, and only a module's", "[bundler]") {
  using namespace bundler_test;
  Tree t;
  t.write("main.js", "import {b} from './b.js';\nexport const a = process.env.NODE_ENV + b;\n");
  t.write("b.js", "export const b = 1;\n");
  t.write("data.json", "{}");
  t.write("s.css", ".a{}");
  auto app = app_of(t.root());
  auto res = csgi::testing::call(app, "GET /~map/main.js?c=40");
  REQUIRE(res.status == 200);
  CHECK(res.header("Content-Type") == "application/json");
  CHECK(res.header("Cache-Control") == "no-store");
  CHECK_THAT(res.body, Catch::Contains(R"("sources":["csgi:///main.js"])"));
  CHECK_THAT(res.body, Catch::Contains(R"("sourcesContent":["import {b} from './b.js';\nexport const a = process.env.NODE_ENV + b;\n"])"));
  CHECK_THAT(res.body, Catch::Contains(R"("mappings":"wC)"));  // line 1 starts at column 40
  CHECK(csgi::testing::call(app, "GET /~map/main.js?c=x").status == 400);
  CHECK(csgi::testing::call(app, "GET /~map/main.js?e=1").status == 400);
  CHECK(csgi::testing::call(app, "GET /~map/data.json").status == 404);
  CHECK(csgi::testing::call(app, "GET /~map/s.css").status == 404);
  CHECK(csgi::testing::call(app, "GET /~map/none.js").status == 404);
  for (const char* outside : {"GET /~map/../x.js", "GET /~map/%2e%2e/x.js"}) {
    auto r = csgi::testing::call(app, outside);
    CHECK((r.status == 403 || r.status == 404));
  }
}

TEST_CASE("source map: on by default in development, off in production unless asked", "[bundler]") {
  using namespace bundler_test;
  Tree t;
  t.write("main.js", "export const a = 1;\n");
  const auto served = [&](std::optional<BundlerOptions::Mode> mode, std::optional<bool> maps) {
    BundlerOptions o;
    if (mode) o.mode = *mode;
    o.source_maps = maps;
    auto app = app_of(t.root(), o);
    const bool named = csgi::testing::call(app, "GET /main.js").body.find("\"maps\":1") != std::string::npos;
    const int status = csgi::testing::call(app, "GET /~map/main.js?c=0").status;
    CHECK(named == (status == 200));
    return named;
  };
  CHECK(served(std::nullopt, std::nullopt));
  CHECK(!served(BundlerOptions::Mode::production, std::nullopt));
  CHECK(served(BundlerOptions::Mode::production, true));
  CHECK(!served(BundlerOptions::Mode::development, false));
}
