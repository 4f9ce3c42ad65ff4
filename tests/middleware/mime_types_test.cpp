#include "csgi/middleware/mime_types.hpp"

#include <catch2/catch.hpp>

#include "files_test_util.hpp"

using namespace csgi::mw;

TEST_CASE("built-in table covers the web types", "[mime_types]") {
  MimeTypes m;
  CHECK(m.lookup("index.html") == "text/html");
  CHECK(m.lookup("A/B/STYLE.CSS") == "text/css");
  CHECK(m.lookup("x.woff2") == "font/woff2");
  CHECK(m.lookup("x.unknownext") == "application/octet-stream");
  CHECK(m.lookup("noext", "text/plain") == "text/plain");
  CHECK(m.lookup("trailingdot.") == "application/octet-stream");
  CHECK(m.lookup("dir.d/file") == "application/octet-stream");
}

TEST_CASE("mime.types format loads over the built-ins", "[mime_types]") {
  MimeTypes m;
  auto n = m.load("# comment\napplication/x-test  tst  TST2 # trailing comment\n\ntext/html html\nnotatype foo\n");
  CHECK(n == 3);
  CHECK(m.lookup("a.tst") == "application/x-test");
  CHECK(m.lookup("a.tst2") == "application/x-test");
  CHECK(m.lookup("a.foo") == "application/octet-stream");
  m.add("TST", "application/y");
  CHECK(m.lookup("a.tst") == "application/y");
}

TEST_CASE("the system table reads /etc/mime.types when present", "[mime_types]") {
  auto sys = MimeTypes::system();
  CHECK(sys->lookup("a.html") == "text/html");
  CHECK(sys->lookup("a.png") == "image/png");
  mwtest::TempDir d;
  auto p = d.write("mime.types", "application/x-csgi-test csgitest\n");
  CHECK(MimeTypes::from_file(p.string()).lookup("x.csgitest") == "application/x-csgi-test");
  CHECK(MimeTypes::from_file("/nonexistent").lookup("x.html") == "text/html");
}

TEST_CASE("compressible types", "[mime_types]") {
  CHECK(is_compressible_type("text/html; charset=utf-8"));
  CHECK(is_compressible_type("application/json"));
  CHECK(is_compressible_type("application/vnd.api+json"));
  CHECK(is_compressible_type("image/svg+xml"));
  CHECK(is_compressible_type("Application/JavaScript"));
  CHECK_FALSE(is_compressible_type("image/png"));
  CHECK_FALSE(is_compressible_type("application/gzip"));
  CHECK_FALSE(is_compressible_type("font/woff2"));
  CHECK_FALSE(is_compressible_type(""));
}
