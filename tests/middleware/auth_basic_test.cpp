#include "csgi/middleware/auth_basic.hpp"

#include <crypt.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;
namespace fs = std::filesystem;

namespace {
std::string basic(std::string_view user_pass) {
  static constexpr char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < user_pass.size(); i += 3) {
    unsigned v = (unsigned char)user_pass[i] << 16 | (unsigned char)user_pass[i + 1] << 8 | (unsigned char)user_pass[i + 2];
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (user_pass.size() - i == 1) {
    unsigned v = (unsigned char)user_pass[i] << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (user_pass.size() - i == 2) {
    unsigned v = (unsigned char)user_pass[i] << 16 | (unsigned char)user_pass[i + 1] << 8;
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return "Basic " + out;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "csgi-auth-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

bool have_htpasswd() { return std::system("htpasswd -nb u p >/dev/null 2>&1") == 0; }

void htpasswd(const fs::path& file, const std::string& flags, const std::string& user, const std::string& pass) {
  std::string cmd = "htpasswd -b" + flags + " '" + file.string() + "' '" + user + "' '" + pass + "' 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
}

App whoami() {
  return lint([](Env& env) {
    return Response::text(200, std::string(env.get("REMOTE_USER")) + "/" + std::string(env.get("AUTH_TYPE")));
  });
}
}  // namespace

TEST_CASE("auth_basic: credential parsing") {
  std::string u, p;
  CHECK(mw::AuthBasic::parse_credentials(basic("alice:s3cr:et"), u, p));
  CHECK(u == "alice");
  CHECK(p == "s3cr:et");
  CHECK(mw::AuthBasic::parse_credentials("basic   " + basic("a:").substr(6), u, p));
  CHECK(p.empty());
  for (std::string bad : {std::string(""), std::string("Bearer abc"), std::string("Basic"), std::string("Basic !!!!"),
                          basic("nocolon"), basic(":nouser"), std::string("Basic YWJj="), basic("a:b\x01")})
    CHECK_FALSE(mw::AuthBasic::parse_credentials(bad, u, p));
}

TEST_CASE("auth_basic: htpasswd file from Debian's htpasswd — bcrypt, SHA-1, SHA-256/512-crypt, DES") {
  if (!have_htpasswd()) {
    WARN("skipped: htpasswd (apache2-utils) is not installed");
    return;
  }
  TempDir dir;
  fs::path file = dir.path / "users";
  htpasswd(file, "cB", "bcrypt", "pw-b");
  htpasswd(file, "s", "sha", "pw-s");
  htpasswd(file, "2", "sha256", "pw-2");
  htpasswd(file, "5", "sha512", "pw-5");
  htpasswd(file, "d", "des", "pw-d");
  mw::AuthBasicOptions o;
  o.realm = "Staff only";
  o.htpasswd_file = file.string();
  App app = lint(wrap<mw::AuthBasic>(whoami(), o));
  for (auto [user, pass] : std::vector<std::pair<std::string, std::string>>{
           {"bcrypt", "pw-b"}, {"sha", "pw-s"}, {"sha256", "pw-2"}, {"sha512", "pw-5"}, {"des", "pw-d"}}) {
    INFO(user);
    auto ok = testing::call(app, "GET /", {{"Authorization", basic(user + ":" + pass)}});
    CHECK(ok.status == 200);
    CHECK(ok.body == user + "/Basic");
    auto bad = testing::call(app, "GET /", {{"Authorization", basic(user + ":" + pass + "x")}});
    CHECK(bad.status == 401);
    CHECK(bad.header("WWW-Authenticate") == "Basic realm=\"Staff only\", charset=\"UTF-8\"");
  }
  CHECK(testing::call(app, "GET /").status == 401);
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("nobody:pw-b")}}).status == 401);
  // Swapped passwords between users fail.
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("sha:pw-b")}}).status == 401);
}

TEST_CASE("auth_basic: $apr1$ and plain text refused when the file is read; reload on change") {
  if (!have_htpasswd()) {
    WARN("skipped: htpasswd (apache2-utils) is not installed");
    return;
  }
  TempDir dir;
  fs::path file = dir.path / "users";
  htpasswd(file, "cm", "md5", "pw");
  mw::AuthBasicOptions o;
  o.htpasswd_file = file.string();
  CHECK_THROWS_WITH(mw::AuthBasic(whoami(), o), Catch::Contains("apr1"));
  std::ofstream(file) << "plain:password\n";
  CHECK_THROWS_AS(mw::AuthBasic(whoami(), o), std::invalid_argument);
  fs::remove(file);
  htpasswd(file, "cB", "alice", "one");
  o.reload_interval = std::chrono::milliseconds(1);
  App app = wrap<mw::AuthBasic>(whoami(), o);
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("alice:one")}}).status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  htpasswd(file, "B", "bob", "two");
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("bob:two")}}).status == 200);
  // A broken file refuses everyone (the previous users are not kept), logged once.
  std::ofstream(file, std::ios::app) << "broken line\n";
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto res = testing::call(app, "GET /", {{"Authorization", basic("alice:one")}});
  CHECK(res.status == 500);
  CHECK(res.errors.find("refusing every request") != std::string::npos);
  CHECK(res.errors.find(":3: expected user:hash") != std::string::npos);
}

namespace {
/// Calls `app` as alice:one (after the reload interval has passed) and returns the status; the
/// csgi.errors text is appended to `log`.
int as_alice(const App& app, std::string& log, std::string_view pass = "one") {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto res = testing::call(app, "GET /", {{"Authorization", basic("alice:" + std::string(pass))}});
  log += res.errors;
  return res.status;
}
std::size_t count(const std::string& hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("auth_basic: a deleted or unreadable htpasswd refuses everyone with 500, logged once per change") {
  if (!have_htpasswd()) {
    WARN("skipped: htpasswd (apache2-utils) is not installed");
    return;
  }
  TempDir dir;
  fs::path file = dir.path / "users";
  htpasswd(file, "cB", "alice", "one");
  mw::AuthBasicOptions o;
  o.htpasswd_file = file.string();
  o.reload_interval = std::chrono::milliseconds(1);
  App app = wrap<mw::AuthBasic>(whoami(), o);
  std::string log;
  CHECK(as_alice(app, log) == 200);
  fs::rename(file, dir.path / "users.bak");
  CHECK(as_alice(app, log) == 500);
  CHECK(as_alice(app, log) == 500);
  CHECK(testing::call(app, "GET /").status == 500);
  CHECK(count(log, "refusing every request") == 1);
  CHECK(log.find("No such file") != std::string::npos);
  fs::rename(dir.path / "users.bak", file);
  CHECK(as_alice(app, log) == 200);
  CHECK(count(log, "usable again") == 1);
  // A directory in its place cannot be read as a file either.
  fs::rename(file, dir.path / "users.bak");
  fs::create_directory(file);
  log.clear();
  CHECK(as_alice(app, log) == 500);
  CHECK(as_alice(app, log) == 500);
  CHECK(count(log, "not a regular file") == 1);
}

TEST_CASE("auth_basic: a file replaced by rename or emptied is seen even when its mtime is unchanged") {
  if (!have_htpasswd()) {
    WARN("skipped: htpasswd (apache2-utils) is not installed");
    return;
  }
  TempDir dir;
  fs::path file = dir.path / "users";
  htpasswd(file, "cB", "alice", "one");
  auto mtime = fs::last_write_time(file);
  mw::AuthBasicOptions o;
  o.htpasswd_file = file.string();
  o.reload_interval = std::chrono::milliseconds(1);
  App app = wrap<mw::AuthBasic>(whoami(), o);
  std::string log;
  CHECK(as_alice(app, log) == 200);
  // Replaced by rename (as rsync -t or an atomic deploy does), with the old file's mtime.
  fs::path next = dir.path / "users.new";
  htpasswd(next, "cB", "alice", "two");
  fs::last_write_time(next, mtime);
  fs::rename(next, file);
  CHECK(as_alice(app, log, "one") == 401);
  CHECK(as_alice(app, log, "two") == 200);
  // Emptied in place, the mtime set back.
  std::ofstream(file, std::ios::trunc).close();
  fs::last_write_time(file, mtime);
  CHECK(as_alice(app, log, "two") == 401);
  CHECK(count(log, "holds no users") == 1);
}

TEST_CASE("auth_basic: callback; configuration errors") {
  mw::AuthBasicOptions o;
  o.authenticator = [](std::string_view u, std::string_view p, Env&) { return u == "admin" && p == "pw"; };
  App app = lint(wrap<mw::AuthBasic>(whoami(), o));
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("admin:pw")}}).body == "admin/Basic");
  CHECK(testing::call(app, "GET /", {{"Authorization", basic("admin:px")}}).status == 401);
  mw::AuthBasicOptions none;
  CHECK_THROWS_AS(mw::AuthBasic(whoami(), none), std::invalid_argument);
  mw::AuthBasicOptions quote = o;
  quote.realm = "a\"b";
  CHECK_THROWS_AS(mw::AuthBasic(whoami(), quote), std::invalid_argument);
  mw::AuthBasicOptions missing;
  missing.htpasswd_file = "/nonexistent/htpasswd";
  CHECK_THROWS_AS(mw::AuthBasic(whoami(), missing), std::runtime_error);
}

TEST_CASE("htpasswd: hashes checked directly") {
  // {SHA} of "password" (known vector), and a libcrypt SHA-512 hash made here.
  CHECK(mw::Htpasswd::verify_hash("{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "password"));
  CHECK_FALSE(mw::Htpasswd::verify_hash("{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "passwort"));
  CHECK_FALSE(mw::Htpasswd::supported("$apr1$abc$def"));
  CHECK_FALSE(mw::Htpasswd::supported("plaintext"));
  auto h = mw::Htpasswd::parse("# comment\n\nu1:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\r\n");
  CHECK(h.size() == 1);
  CHECK(h.verify("u1", "password"));
  CHECK_FALSE(h.verify("u2", "password"));
  CHECK_THROWS_AS(mw::Htpasswd::parse("u:{SHA}x\nu:{SHA}x\n"), std::invalid_argument);
}

TEST_CASE("htpasswd: an unknown user is checked against the file's costliest hash") {
  const std::string sha = "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=";
  const std::string des = ".PLpHf69N/jFQ";
  const std::string md5 = "$1$N2PG02pM$0QY8xSnB.IgvREt.ccn4D0";
  const std::string sha256 = "$5$bUJjU/iyois7GbLz$KGL/u5Pj1A68A0/bRhCWFMmdbH6eUc9VHp7Q6tKmy36";
  const std::string sha512 = "$6$u/8OlDpovUz0rHfR$f7AGpFt2tUb0IZqKGmKNqEI95SfgW61VTotZFJs1Ysdmfy8sMYhIh8vBe3gRjVdBOAqYLExKaRhUj07gJSpiP.";
  const std::string sha512_20k = "$6$rounds=20000$xJ8AzP9KiVwhIZ2o$NOJKH8Rfu8cTMRS3XW0lIQqLiAuaTRV2QZDf/idn1LRoXJcudi3p9SG9EjJ3bzhJZnLl0GvrXHHjd6O7kRh4c/";
  const std::string bcrypt4 = "$2y$04$BsFfZ3l93MNE1yg3lE7fW.JQnCyypTNieDBtIcnxpI9XJ8FTWs5nm";
  const std::string bcrypt6 = "$2y$06$IVqkLEcV6h14qygXPAJMpuk./Zx/HgkeRoR74Z0wa5yS.hIrtQzm.";
  const std::string yescrypt = "$y$j9T$TmjMgt9yJpAio9SxSpo6K1$zuUF0aw/HIDdStf3vQbcc9jI8yiJLQq2RWnuDITvAs4";
  const std::string yescrypt_big = "$y$jBT$GCjsE7g28KyJRPg0GnlL.1$k6EtMLYNT5YUU6Ac..8Q.GHjh/O07.BuEv8.eTJUT73";
  auto dummy = [](std::vector<std::string> hashes) {
    std::string text;
    for (std::size_t i = 0; i < hashes.size(); ++i) text += "u" + std::to_string(i) + ":" + hashes[i] + "\n";
    return std::string(mw::Htpasswd::parse(text).dummy_hash());
  };
  // The first entry is the cheapest: the unknown user must still cost what the bcrypt user costs.
  CHECK(dummy({sha, bcrypt4}) == bcrypt4);
  CHECK(dummy({sha, des, md5, bcrypt4, bcrypt6, sha256}) == bcrypt6);
  CHECK(dummy({sha512, sha512_20k, bcrypt6}) == sha512_20k);
  CHECK(dummy({bcrypt6, yescrypt, sha512_20k}) == yescrypt);
  CHECK(dummy({yescrypt_big, yescrypt}) == yescrypt_big);
  CHECK(dummy({des, md5}) == md5);
  CHECK(mw::Htpasswd::parse("# none\n").dummy_hash().empty());
  // Every hash verifies, so the estimates name real, parseable settings.
  for (const auto& h : {des, md5, sha256, sha512, sha512_20k, bcrypt4, bcrypt6, yescrypt}) {
    INFO(h);
    CHECK(mw::Htpasswd::verify_hash(h, "pw"));
  }
}

TEST_CASE("htpasswd: a user with a cheaper hash pays the costliest hash's cost too") {
  const std::string sha = "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=";  // "password"
  const std::string sha512 = "$6$u/8OlDpovUz0rHfR$f7AGpFt2tUb0IZqKGmKNqEI95SfgW61VTotZFJs1Ysdmfy8sMYhIh8vBe3gRjVdBOAqYLExKaRhUj07gJSpiP.";
  const std::string sha512_20k = "$6$rounds=20000$xJ8AzP9KiVwhIZ2o$NOJKH8Rfu8cTMRS3XW0lIQqLiAuaTRV2QZDf/idn1LRoXJcudi3p9SG9EjJ3bzhJZnLl0GvrXHHjd6O7kRh4c/";
  const std::string bcrypt4 = "$2y$04$BsFfZ3l93MNE1yg3lE7fW.JQnCyypTNieDBtIcnxpI9XJ8FTWs5nm";
  const std::string bcrypt6 = "$2y$06$IVqkLEcV6h14qygXPAJMpuk./Zx/HgkeRoR74Z0wa5yS.hIrtQzm.";
  const std::string yescrypt = "$y$j9T$TmjMgt9yJpAio9SxSpo6K1$zuUF0aw/HIDdStf3vQbcc9jI8yiJLQq2RWnuDITvAs4";
  const std::string yescrypt_big = "$y$jBT$GCjsE7g28KyJRPg0GnlL.1$k6EtMLYNT5YUU6Ac..8Q.GHjh/O07.BuEv8.eTJUT73";
  auto total = [](const mw::Htpasswd& h, std::string_view user) {
    double sum = 0;
    for (auto c : h.checks(user)) sum += mw::Htpasswd::cost(c);
    return sum;
  };
  // Each pad is a setting libcrypt really computes (a refused one would cost nothing).
  auto computes = [](std::string_view setting) {
    std::string s(setting);
    void* data = nullptr;
    int size = 0;
    const char* out = crypt_ra("pw", s.c_str(), &data, &size);
    bool ok = out && out[0] != '*';
    std::free(data);
    return ok;
  };

  SECTION("bcrypt of two costs: the cheaper user's checks add up to the costlier's exactly") {
    auto h = mw::Htpasswd::parse("cheap:" + bcrypt4 + "\ndear:" + bcrypt6 + "\n");
    auto cheap = h.checks("cheap");
    REQUIRE(cheap.size() == 3);
    CHECK(cheap[0] == bcrypt4);
    CHECK(cheap[1].substr(0, 7) == "$2y$05$");
    CHECK(cheap[2].substr(0, 7) == "$2y$04$");
    CHECK(total(h, "cheap") == mw::Htpasswd::cost(bcrypt6));  // 2^4 + 2^5 + 2^4 = 2^6
    CHECK(h.checks("dear") == std::vector<std::string_view>{bcrypt6});
    CHECK(h.checks("nobody") == std::vector<std::string_view>{bcrypt6});
    for (std::size_t i = 1; i < cheap.size(); ++i) CHECK(computes(cheap[i]));
    CHECK(h.verify("cheap", "pw"));
    CHECK(h.verify("dear", "pw"));
    CHECK_FALSE(h.verify("cheap", "pW"));
    CHECK_FALSE(h.verify("nobody", "pw"));  // the dummy hash's own password opens nothing
  }
  SECTION("{SHA} and SHA-512 users in a file with a 20000-round SHA-512 entry") {
    auto h = mw::Htpasswd::parse("s:" + sha + "\nq:" + sha512 + "\nr:" + sha512_20k + "\n");
    const double top = mw::Htpasswd::cost(sha512_20k);
    for (const char* u : {"s", "q", "r", "nobody"}) {
      INFO(u);
      CHECK(total(h, u) <= top);
      CHECK(total(h, u) > top - mw::Htpasswd::cost("$6$rounds=1000$x$"));
    }
    auto q = h.checks("q");
    REQUIRE(q.size() == 2);
    CHECK(q[1].substr(0, 19) == "$6$rounds=15000$xJ8");
    CHECK(computes(q[1]));
    CHECK(h.verify("s", "password"));
    CHECK(h.verify("q", "pw"));
  }
  SECTION("yescrypt of two N and a bcrypt user") {
    auto h = mw::Htpasswd::parse("y:" + yescrypt + "\nb:" + bcrypt6 + "\nbig:" + yescrypt_big + "\n");
    const double top = mw::Htpasswd::cost(yescrypt_big);
    CHECK(total(h, "y") == Approx(top));  // N 4096 + pads 8192 and 4096 = 16384
    CHECK(total(h, "b") <= top);
    CHECK(total(h, "b") > top * 0.99);
    for (auto c : h.checks("b")) CHECK(computes(c));
    CHECK(h.verify("y", "pw"));
    CHECK(h.verify("b", "pw"));
  }
  SECTION("a file of one cost has no pads") {
    auto h = mw::Htpasswd::parse("a:" + bcrypt4 + "\nb:" + bcrypt4 + "\n");
    CHECK(h.checks("a").size() == 1);
    CHECK(h.checks("b").size() == 1);
    CHECK(mw::Htpasswd::parse("").checks("x").empty());
  }
}

TEST_CASE("auth_basic: one instance serves threads concurrently while the file is re-read") {
  if (!have_htpasswd()) {
    WARN("skipped: htpasswd (apache2-utils) is not installed");
    return;
  }
  TempDir dir;
  fs::path file = dir.path / "users";
  htpasswd(file, "cs", "u", "p");
  mw::AuthBasicOptions o;
  o.htpasswd_file = file.string();
  o.reload_interval = std::chrono::milliseconds(1);
  App app = wrap<mw::AuthBasic>(whoami(), o);
  std::atomic<int> wrong{0};
  std::atomic<bool> stop{false};
  std::thread touch([&] {
    for (int i = 0; i < 20 && !stop; ++i) {
      fs::last_write_time(file, fs::file_time_type::clock::now() + std::chrono::seconds(i + 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (testing::call(app, "GET /", {{"Authorization", basic("u:p")}}).status != 200) ++wrong;
        if (testing::call(app, "GET /", {{"Authorization", basic("u:x")}}).status != 401) ++wrong;
      }
    });
  for (auto& t : ts) t.join();
  stop = true;
  touch.join();
  CHECK(wrong == 0);
}
