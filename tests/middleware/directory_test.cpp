#include "csgi/middleware/directory.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::TempDir;
namespace fs = std::filesystem;

namespace {

const char* const nasty[] = {
    "<img src=x onerror=alert(1)>.html", "a\"b'c.txt", "a&amp;b.txt", "sp ace.txt", "caf\xc3\xa9.txt", "100%.txt",
    "q?x=1#frag.txt", "<i>dir",
};

struct Tree {
  TempDir dir;
  Tree() {
    for (const char* n : nasty) {
      if (std::string_view(n) == "<i>dir") fs::create_directories(dir.path / n);
      else dir.write(n, "x");
    }
    dir.write("sub/inner.txt", "inner");
    dir.write("withindex/index.html", "the index");
    dir.write(".secret", "hidden");
    fs::create_symlink("/etc/passwd", dir.path / "link_out");
  }
  App app(Symlinks policy = Symlinks::inside_root) const {
    DirectoryOptions o;
    o.files.root = dir.str();
    o.files.symlinks = policy;
    return mwtest::lint(Directory(o));
  }
};

/// Parses the page with Python's html.parser (a real HTML tokenizer, no browser) and prints each link as
/// "href\ttext" on its own line, with entities decoded as a browser would.
std::string links_of(const std::string& html) {
  TempDir tmp;
  auto page = tmp.write("page.html", html);
  std::string cmd =
      "/usr/bin/python3 -c '\n"
      "import sys, html.parser\n"
      "class P(html.parser.HTMLParser):\n"
      "  def __init__(s):\n"
      "    super().__init__(convert_charrefs=True); s.href=None; s.text=\"\"; s.tags=[]\n"
      "  def handle_starttag(s, tag, attrs):\n"
      "    s.tags.append(tag)\n"
      "    if tag == \"a\": s.href = dict(attrs)[\"href\"]; s.text = \"\"\n"
      "  def handle_data(s, d):\n"
      "    if s.href is not None: s.text += d\n"
      "  def handle_endtag(s, tag):\n"
      "    if tag == \"a\": sys.stdout.buffer.write((s.href + \"\\t\" + s.text + \"\\n\").encode()); s.href = None\n"
      "p = P(); p.feed(open(sys.argv[1], encoding=\"utf-8\").read())\n"
      "bad = [t for t in p.tags if t in (\"img\", \"i\")]\n"
      "sys.stdout.write(\"TAGS:\" + \",\".join(bad) + \"\\n\")\n"
      "' " + page.string();
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

}  // namespace

TEST_CASE("directory lists entries with escaped names and encoded links", "[directory]") {
  Tree t;
  auto r = testing::call(t.app(), "GET /");
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type") == "text/html; charset=utf-8");
  const std::string& page = r.body;
  CHECK(page.find("<img") == std::string::npos);
  CHECK(page.find("&lt;img src=x onerror=alert(1)&gt;.html") != std::string::npos);
  CHECK(page.find("a&quot;b&#39;c.txt") != std::string::npos);
  CHECK(page.find("a&amp;amp;b.txt") != std::string::npos);
  CHECK(page.find(".secret") == std::string::npos);
  CHECK(page.find("Parent Directory") == std::string::npos);  // the root has no parent
  CHECK(page.find("href=\"sub/\"") != std::string::npos);
  CHECK(testing::call(t.app(Symlinks::never), "GET /").body.find("link_out") == std::string::npos);
}

TEST_CASE("directory lists only what would be served; refused entries leak no size or time", "[directory]") {
  Tree t;
  TempDir outside;
  fs::path secret = outside.write("secret.bin", std::string(123457, 's'));  // 120.6 KiB
  fs::last_write_time(secret, fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 20));
  fs::create_symlink(secret, t.dir.path / "secret_link");
  fs::create_directory_symlink(outside.path, t.dir.path / "dir_out");
  fs::create_symlink(t.dir.path / "nowhere", t.dir.path / "dangling");
  t.dir.write("big.bin", std::string(5000, 'b'));
  fs::create_symlink("big.bin", t.dir.path / "link_in");  // inside the root: served, listed as its target
  t.dir.write("a%41.txt", "x");  // a name sanitize_path refuses (it looks double-encoded)
  REQUIRE(::mkfifo((t.dir.path / "fifo").c_str(), 0644) == 0);
  auto r = testing::call(t.app(), "GET /");
  REQUIRE(r.status == 200);
  const std::string& page = r.body;
  for (const char* refused : {"link_out", "secret_link", "dir_out", "dangling", "a%41.txt", "a%2541.txt", "fifo"}) {
    INFO(refused);
    CHECK(page.find(refused) == std::string::npos);
  }
  CHECK(page.find("120.6 KiB") == std::string::npos);
  CHECK(page.find(">200") == std::string::npos);  // the outside file's year (20 years ago) is not shown
  CHECK(testing::call(t.app(), "GET /secret_link").status == 403);
  CHECK(testing::call(t.app(), "GET /dir_out/").status == 403);
  // What is listed is served.
  CHECK(page.find("href=\"link_in\"") != std::string::npos);
  CHECK(testing::call(t.app(), "GET /link_in").status == 200);
  auto link_row = page.substr(page.find("href=\"link_in\""), 120);
  CHECK(link_row.find("4.9 KiB") != std::string::npos);
}

TEST_CASE("directory listing survives a real HTML parser (browser-free check)", "[directory]") {
  Tree t;
  auto r = testing::call(t.app(), "GET /");
  std::string links = links_of(r.body);
  REQUIRE_FALSE(links.empty());
  CHECK(links.find("TAGS:\n") != std::string::npos);  // no <img> or <i> element came out of a name
  for (const char* n : nasty) {
    bool dir = std::string_view(n) == "<i>dir";
    std::string shown = std::string(n) + (dir ? "/" : "");
    std::string href = percent_encode(n) + (dir ? "/" : "");
    INFO(n);
    CHECK(links.find(href + "\t" + shown + "\n") != std::string::npos);
    // Following the link reaches the entry.
    auto follow = testing::call(t.app(), "GET /" + href);
    CHECK(follow.status == 200);
    if (!dir) CHECK(follow.body == "x");
  }
}

TEST_CASE("directory: sub-directories, parent links, index files, redirects", "[directory]") {
  Tree t;
  auto sub = testing::call(t.app(), "GET /sub/");
  CHECK(sub.status == 200);
  CHECK(sub.body.find("Parent Directory") != std::string::npos);
  CHECK(sub.body.find("Index of /sub/") != std::string::npos);
  CHECK(sub.body.find("inner.txt") != std::string::npos);
  CHECK(testing::call(t.app(), "GET /sub").status == 301);
  CHECK(testing::call(t.app(), "GET /withindex/").body == "the index");
  CHECK(testing::call(t.app(), "GET /sub/inner.txt").body == "inner");
  CHECK_THROWS_AS(testing::call(t.app(), "GET /sub/../../"), BadRequest);  // the adapter's 400 (ENV-5)
}

TEST_CASE("html_escape escapes the five HTML specials", "[directory]") {
  CHECK(html_escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}
