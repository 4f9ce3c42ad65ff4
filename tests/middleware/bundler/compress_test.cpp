// Compressed answers: gzip and brotli forms negotiated by Accept-Encoding, one ETag per coding, each
// form made once per cached answer, errors never compressed.
#include <brotli/decode.h>
#include <zlib.h>

#include "bundler_fixture.hpp"
#include "csgi/middleware/bundler/detail/compress.hpp"

using namespace bundler_test;
using csgi::testing::call;
namespace bundler = csgi::mw::bundler;
using bundler::Coding;
using Freshness = csgi::mw::BundlerOptions::Freshness;

namespace {

std::string gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out(std::size_t{8} << 20, '\0');  // more than any test body
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  int rc = inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

std::string unbrotli(const std::string& in) {
  std::string out(std::size_t{8} << 20, '\0');  // more than any test body
  std::size_t n = out.size();
  REQUIRE(BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &n,
                                  reinterpret_cast<std::uint8_t*>(out.data())) == BROTLI_DECODER_RESULT_SUCCESS);
  out.resize(n);
  return out;
}

using Headers = std::vector<std::pair<std::string, std::string>>;

}  // namespace

TEST_CASE("compress: the coding follows Accept-Encoding q-values", "[bundler][compress]") {
  CHECK(bundler::choose_coding("") == Coding::identity);
  CHECK(bundler::choose_coding("gzip") == Coding::gzip);
  CHECK(bundler::choose_coding("gzip, deflate, br") == Coding::br);
  CHECK(bundler::choose_coding("gzip;q=1, br;q=0.5") == Coding::gzip);
  CHECK(bundler::choose_coding("br;q=0.2, gzip;q=0.8") == Coding::gzip);
  CHECK(bundler::choose_coding("br;q=0, gzip;q=0") == Coding::identity);
  CHECK(bundler::choose_coding("identity") == Coding::identity);
  CHECK(bundler::choose_coding("identity;q=1, gzip;q=0.5") == Coding::identity);
  CHECK(bundler::choose_coding("*") == Coding::br);
  CHECK(bundler::choose_coding("*;q=0.5, br;q=0") == Coding::gzip);
  CHECK(bundler::choose_coding("deflate") == Coding::identity);
  CHECK(bundler::choose_coding("gzip;q=garbage") == Coding::identity);
  CHECK(bundler::choose_coding("identity;q=0, *;q=0") == Coding::identity);  // nothing acceptable: uncoded
  std::string text(5000, 'x');
  CHECK(gunzip(bundler::gzip(text, 6)) == text);
  CHECK(unbrotli(bundler::brotli(text, 5)) == text);
}

TEST_CASE("compress: bundles in gzip and brotli, a Vary and an ETag per coding", "[bundler][compress]") {
  Tree t;
  std::string big;
  for (int i = 0; i < 200; ++i) big += "exports.f" + std::to_string(i) + " = function () { return " + std::to_string(i) + "; };\n";
  t.write("main.js", "require('./lib');\n" + big);
  t.write("lib.js", big);
  auto b = std::make_shared<Bundler>(t.root(), BundlerOptions{});
  csgi::App app = [b](csgi::Env& env) { return (*b)(env); };

  auto plain = call(app, "GET /main.js");
  REQUIRE(plain.status == 200);
  CHECK(plain.header("Content-Encoding").empty());
  CHECK(plain.header("Vary") == "Accept-Encoding");
  const std::string etag = plain.header("ETag");
  REQUIRE(etag.size() > 2);

  auto gz = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}});
  REQUIRE(gz.status == 200);
  CHECK(gz.header("Content-Encoding") == "gzip");
  CHECK(gz.header("Vary") == "Accept-Encoding");
  CHECK(gz.header("ETag") == etag.substr(0, etag.size() - 1) + "-gzip\"");
  CHECK(gz.body.size() * 3 < plain.body.size());
  CHECK(gunzip(gz.body) == plain.body);

  auto br = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip, deflate, br"}});
  REQUIRE(br.status == 200);
  CHECK(br.header("Content-Encoding") == "br");
  CHECK(br.header("ETag") == etag.substr(0, etag.size() - 1) + "-br\"");
  CHECK(unbrotli(br.body) == plain.body);
  CHECK(call(app, "GET /main.js", Headers{{"Accept-Encoding", "br;q=0.1, gzip"}}).header("Content-Encoding") == "gzip");
  CHECK(call(app, "GET /main.js", Headers{{"Accept-Encoding", "identity, gzip;q=0.5"}}).header("Content-Encoding").empty());

  // Conditional GET per coding: a coding's own ETag is a 304, another coding's is not.
  auto not_mod = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}, {"If-None-Match", gz.header("ETag")}});
  CHECK(not_mod.status == 304);
  CHECK(not_mod.header("ETag") == gz.header("ETag"));
  CHECK(not_mod.header("Vary") == "Accept-Encoding");
  CHECK(call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}, {"If-None-Match", etag}}).status == 200);
  CHECK(call(app, "GET /main.js", Headers{{"If-None-Match", gz.header("ETag")}}).status == 200);
  CHECK(call(app, "GET /main.js", Headers{{"If-None-Match", etag}}).status == 304);

  // Each form was made once for this cached bundle, however many requests asked for it.
  for (int i = 0; i < 5; ++i) {
    CHECK(call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}}).body == gz.body);
    CHECK(call(app, "GET /main.js", Headers{{"Accept-Encoding", "br"}}).body == br.body);
  }
  CHECK(b->stats().compressions == 2);
  CHECK(b->stats().builds == 1);

  // The loader too, with its own ETags.
  auto loader = call(app, "GET /require.js", Headers{{"Accept-Encoding", "br"}});
  CHECK(loader.header("Content-Encoding") == "br");
  CHECK(unbrotli(loader.body) == std::string(Bundler::loader_source()));
  CHECK_THAT(loader.header("ETag"), Catch::EndsWith("-br\""));
}

TEST_CASE("compress: errors are neither compressed nor cached; an edit gives new forms", "[bundler][compress]") {
  Tree t;
  t.write("main.js", "require('./missing');");
  BundlerOptions o;
  o.freshness = Freshness::stat;
  auto b = std::make_shared<Bundler>(t.root(), o);
  csgi::App app = [b](csgi::Env& env) { return (*b)(env); };
  for (int i = 0; i < 2; ++i) {
    auto err = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip, br"}});
    CHECK(err.status == 404);
    CHECK(err.header("Content-Encoding").empty());
    CHECK(err.header("Cache-Control") == "no-store");
    CHECK_THAT(err.body, Catch::StartsWith("csgiRequire.fail("));
  }
  CHECK(b->stats().compressions == 0);
  t.write("missing.js", "module.exports = 1;");
  auto ok = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}});
  REQUIRE(ok.status == 200);
  CHECK(ok.header("Content-Encoding") == "gzip");
  t.write("missing.js", "module.exports = 22;");
  auto edited = call(app, "GET /main.js", Headers{{"Accept-Encoding", "gzip"}});
  REQUIRE(edited.status == 200);
  CHECK(edited.header("ETag") != ok.header("ETag"));
  CHECK_THAT(gunzip(edited.body), Catch::Contains("module.exports = 22;"));
  CHECK(b->stats().compressions == 2);

  // Off: identity only, no Vary.
  BundlerOptions off;
  off.compress = false;
  auto plain = call(app_of(t.root(), off), "GET /main.js", Headers{{"Accept-Encoding", "gzip, br"}});
  CHECK(plain.header("Content-Encoding").empty());
  CHECK(plain.header("Vary").empty());
  BundlerOptions bad;
  bad.brotli_quality = 12;
  CHECK_THROWS_AS(Bundler(t.root(), bad), std::invalid_argument);
}
