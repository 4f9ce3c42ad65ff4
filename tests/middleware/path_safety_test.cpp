#include "csgi/middleware/path_safety.hpp"

#include <catch2/catch.hpp>

#include "csgi/core/http_error.hpp"
#include "csgi/middleware/directory.hpp"
#include "csgi/middleware/static.hpp"
#include "csgi/middleware/static_prefix.hpp"
#include "files_test_util.hpp"

using namespace csgi;
using namespace csgi::mw;
using mwtest::TempDir;
namespace fs = std::filesystem;

namespace {

/// base/{secret.txt, etc/passwd, rootsibling/x.txt} are bait outside the root base/root.
struct Tree {
  TempDir base;
  std::string root;
  Tree() {
    base.write("secret.txt", "BAIT-OUTSIDE secret");
    base.write("etc/passwd", "BAIT-OUTSIDE passwd");
    base.write("rootsibling/x.txt", "BAIT-OUTSIDE sibling");
    base.write("root/public.txt", "public file");
    base.write("root/sub/inner.txt", "inner file");
    base.write("root/.hidden", "hidden file");
    base.write("root/%2e%2e", "a file literally named %2e%2e");
    root = (base.path / "root").string();
    fs::create_symlink("../secret.txt", base.path / "root/link_out");
    fs::create_symlink(base.path / "secret.txt", base.path / "root/link_abs_out");
    fs::create_symlink("..", base.path / "root/dir_out");
    fs::create_symlink("../rootsibling/x.txt", base.path / "root/link_sibling");
    fs::create_symlink("public.txt", base.path / "root/link_in");
    fs::create_symlink(base.path / "root/public.txt", base.path / "root/link_abs_in");
    fs::create_symlink("../sub", base.path / "root/sub/loop_in");
    ::mkfifo((base.path / "root/fifo").c_str(), 0644);
  }
};

/// Runs a request as an adapter would: a BadRequest from building the env becomes its status.
testing::TestResponse get(const App& app, const std::string& target, const std::string& raw_path_info = {}, bool raw = false) {
  testing::Options o;
  if (raw) o.setup = [&](Env& env) { env.set(keys::PATH_INFO, raw_path_info); };
  try {
    return testing::call(app, "GET " + target, {}, {}, o);
  } catch (const HttpError& e) {
    testing::TestResponse r;
    r.status = e.status();
    return r;
  }
}

struct Attack {
  const char* target;          // request target as sent (still percent-encoded)
  const char* raw = nullptr;   // when set: PATH_INFO injected as-is (bytes the decoder would not let through)
};

// More than 50 ways of asking for a file outside the root. Each must get a 4xx and no bait.
const Attack attacks[] = {
    {"/../secret.txt"},
    {"/../../secret.txt"},
    {"/sub/../../secret.txt"},
    {"/%2e%2e/secret.txt"},
    {"/%2E%2E/secret.txt"},
    {"/%2e./secret.txt"},
    {"/.%2e/secret.txt"},
    {"/%2e%2E/secret.txt"},
    {"/%252e%252e/secret.txt"},
    {"/%252E%252E/secret.txt"},
    {"/.%252e/secret.txt"},
    {"/..%2fsecret.txt"},
    {"/..%2Fsecret.txt"},
    {"/%2e%2e%2fsecret.txt"},
    {"/%2e%2e%2f%2e%2e%2fsecret.txt"},
    {"/..%252fsecret.txt"},
    {"/..%5csecret.txt"},
    {"/..%5Csecret.txt"},
    {"/%5c..%5csecret.txt"},
    {"/..\\secret.txt"},
    {"/\\..\\secret.txt"},
    {"/%2e%2e%5csecret.txt"},
    {"/..%255csecret.txt"},
    {"/..%00/secret.txt"},
    {"/public.txt%00.html"},
    {"/.%00./secret.txt"},
    {"/%c0%ae%c0%ae/secret.txt"},
    {"/%c0%ae./secret.txt"},
    {"/.%c0%ae/secret.txt"},
    {"/%c0%2e%c0%2e/secret.txt"},
    {"/%e0%80%ae%e0%80%ae/secret.txt"},
    {"/%f0%80%80%ae%f0%80%80%ae/secret.txt"},
    {"/..%c0%afsecret.txt"},
    {"/..%c1%9csecret.txt"},
    {"/..%e0%80%afsecret.txt"},
    {"/%25c0%25ae%25c0%25ae/secret.txt"},
    {"/%e0%ae/secret.txt"},
    {"/%%32%65%%32%65/secret.txt"},
    {"/%u002e%u002e/secret.txt"},
    {"/..%u2216secret.txt"},
    {"//../secret.txt"},
    {"/./../secret.txt"},
    {"/sub/./../../secret.txt"},
    {"/sub/%2e%2e/%2e%2e/secret.txt"},
    {"/sub/..%2f..%2fsecret.txt"},
    {"/sub%2f..%2f..%2fsecret.txt"},
    {"/.%2e/.%2e/secret.txt"},
    {"/%2e%2e%2f%2e%2e%2fetc%2fpasswd"},
    {"/../../../../../../../../../../etc/passwd"},
    {"/../etc/passwd"},
    {"/..;/secret.txt"},
    {"/..../secret.txt"},
    {"/.../secret.txt"},
    {"/..%09/secret.txt"},
    {"/%0a../secret.txt"},
    {"/..%20/secret.txt"},
    {"/%ef%bc%8e%ef%bc%8e/secret.txt"},
    {"/..%ef%bc%8fsecret.txt"},
    {"http://localhost/../secret.txt"},
    {"/link_out"},
    {"/link_abs_out"},
    {"/dir_out/secret.txt"},
    {"/dir_out/etc/passwd"},
    {"/link_sibling"},
    {"/%6c%69%6e%6b%5f%6f%75%74"},
    {"/sub/../link_out"},
    {"/.hidden"},
    {"/sub/../.hidden"},
    {"/%2ehidden"},
    {"/%252e%252e"},
    {"/fifo"},
    {"/raw-dotdot", "/../secret.txt"},
    {"/raw-relative", "../secret.txt"},
    {"/raw-nul", std::string_view("/public.txt\0/../../secret.txt", 29).data()},
    {"/raw-overlong", "/\xc0\xae\xc0\xae/secret.txt"},
    {"/raw-overlong3", "/\xe0\x80\xae\xe0\x80\xae/secret.txt"},
    {"/raw-backslash", "/..\\secret.txt"},
    {"/raw-surrogate", "/\xed\xa0\x80/../secret.txt"},
    {"/raw-percent", "/%2e%2e/secret.txt"},
};

}  // namespace

TEST_CASE("sanitize_path refuses traversal and malformed paths", "[path_safety]") {
  CHECK(sanitize_path("/a/b/c.txt").relative == "a/b/c.txt");
  CHECK(sanitize_path("").relative.empty());
  CHECK(sanitize_path("/").relative.empty());
  CHECK(sanitize_path("//a//./b/").relative == "a/b");
  CHECK(sanitize_path("/a/").trailing_slash);
  CHECK(sanitize_path("/a/../b").status == 403);
  CHECK(sanitize_path("a/b").status == 400);
  CHECK(sanitize_path("/a\\b").status == 400);
  CHECK(sanitize_path(std::string_view("/a\0b", 4)).status == 400);
  CHECK(sanitize_path("/\xc0\xae").status == 400);
  CHECK(sanitize_path("/%2e%2e").status == 400);
  CHECK(sanitize_path("/100%.txt").status == 0);
  CHECK(sanitize_path("/.git/config").status == 404);
  CHECK(sanitize_path("/.git/config", true).status == 0);
  CHECK(sanitize_path("/.well-known/x").status == 0);
  CHECK(sanitize_path("/caf\xc3\xa9.txt").status == 0);
}

TEST_CASE("sanitize_path: plain paths (one pass) and the rest (segment by segment) agree", "[path_safety]") {
  auto rel = [](std::string_view p) {
    SafePath sp = sanitize_path(p);
    return std::to_string(sp.status) + ":" + sp.relative + (sp.trailing_slash ? "/" : "");
  };
  CHECK(rel("/x") == "0:x");
  CHECK(rel("/x/") == "0:x/");
  CHECK(rel("/a.b/c./d-e_f~g h/") == "0:a.b/c./d-e_f~g h/");
  CHECK(rel("/a//b") == "0:a/b");
  CHECK(rel("/a/./b") == "0:a/b");
  CHECK(rel("/a/b/.") == "0:a/b");
  CHECK(rel("//") == "0:/");
  CHECK(rel("/a/.b") == "404:");
  CHECK(rel("/a/..") == "403:");
  CHECK(rel("/a/%41") == "400:");
  CHECK(rel("/a%zz") == "0:a%zz");
  CHECK(rel("/a\x7f") == "400:");
  CHECK(rel("/a\x01b") == "400:");
  CHECK(rel("/a\\b") == "400:");
  CHECK(rel("/caf\xc3\xa9/") == "0:caf\xc3\xa9/");
  CHECK(rel("/\xc3") == "400:");
  CHECK(rel("/" + std::string(4095, 'a')) == "0:" + std::string(4095, 'a'));
  CHECK(rel("/" + std::string(4096, 'a')) == "400:");
}

TEST_CASE("valid_utf8 rejects overlong forms, surrogates and truncation", "[path_safety]") {
  CHECK(valid_utf8("plain"));
  CHECK(valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  CHECK_FALSE(valid_utf8("\xc0\xae"));
  CHECK_FALSE(valid_utf8("\xc1\x9c"));
  CHECK_FALSE(valid_utf8("\xe0\x80\xae"));
  CHECK_FALSE(valid_utf8("\xf0\x80\x80\xae"));
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));
  CHECK_FALSE(valid_utf8("\xe2\x82"));
  CHECK_FALSE(valid_utf8("\x80"));
}

TEST_CASE("no traversal encoding serves a file outside the root", "[path_safety][static]") {
  Tree t;
  STATIC_REQUIRE(sizeof(attacks) / sizeof(attacks[0]) >= 50);
  for (Symlinks policy : {Symlinks::never, Symlinks::inside_root}) {
    StaticOptions so;
    so.root = t.root;
    so.symlinks = policy;
    DirectoryOptions dopt;
    dopt.files = so;
    StaticPrefixOptions po;
    po.prefixes = {"/"};
    po.files = so;
    App next = [](Env&) { return Response::text(200, "next app"); };
    struct Subject {
      const char* name;
      App bare;
    };
    const Subject apps[] = {
        {"static", Static(so)},
        {"directory", Directory(dopt)},
        {"static_prefix", wrap<StaticPrefix>(next, po)},
    };
    for (auto& [name, bare] : apps) {
      for (const Attack& a : attacks) {
        bool raw = a.raw != nullptr;
        // Injected PATH_INFOs break the env rules on purpose: they go to the app without Lint.
        App app = raw ? bare : mwtest::lint(bare);
        std::string raw_path = raw ? (std::string(a.target) == "/raw-nul" ? std::string(a.raw, 29) : std::string(a.raw)) : "";
        auto r = get(app, a.target, raw_path, raw);
        INFO("app " << name << ", policy " << (policy == Symlinks::never ? "never" : "inside_root") << ", target "
                    << a.target << " -> " << r.status);
        // static_prefix hands a path outside its prefixes ("../x" is not under "/") to the next app.
        bool fell_through = std::string_view(name) == "static_prefix" && r.body == "next app";
        CHECK((fell_through || r.status >= 400));
        CHECK(r.status < 500);
        CHECK_FALSE(r.file);
        CHECK(r.body.find("BAIT") == std::string::npos);
      }
    }
  }
}

TEST_CASE("symlink policy: inside the root followed or refused, outside always refused", "[path_safety]") {
  Tree t;
  Root never(t.root, Symlinks::never);
  Root inside(t.root, Symlinks::inside_root);
  CHECK(never.open("public.txt").is_file());
  CHECK(never.open("link_in").status == 403);
  CHECK(never.open("link_abs_in").status == 403);
  CHECK(never.open("sub/loop_in/inner.txt").status == 403);
  CHECK(inside.open("link_in").is_file());
  CHECK(inside.open("link_abs_in").is_file());
  CHECK(inside.open("sub/loop_in/inner.txt").is_file());
  for (const char* out : {"link_out", "link_abs_out", "dir_out/secret.txt", "link_sibling", "dir_out"}) {
    INFO(out);
    CHECK(never.open(out).status == 403);
    CHECK(inside.open(out).status == 403);
  }
  CHECK(inside.open("missing.txt").status == 404);
  CHECK(inside.open("public.txt/x").status == 404);
  CHECK(inside.open("fifo").status == 403);  // opened without blocking, then refused
  CHECK(inside.open("").is_dir());
}

TEST_CASE("a symlink inside the root is served under inside_root", "[path_safety][static]") {
  Tree t;
  StaticOptions so;
  so.root = t.root;
  auto app = mwtest::lint(Static(so));
  auto r = get(app, "/link_in");
  CHECK(r.status == 200);
  CHECK(r.body == "public file");
  so.symlinks = Symlinks::never;
  CHECK(get(mwtest::lint(Static(so)), "/link_in").status == 403);
}
