#include "csgi/middleware/session_store.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace csgi;
using namespace std::chrono;

namespace {
const std::string old_secret = "an old secret of at least 32 bytes.....";
const std::string new_secret = "the new secret, also 32 bytes or more..";

std::shared_ptr<mw::CookieSessionStore> store(std::vector<std::string> secrets, bool encrypt) {
  mw::CookieSessionStoreOptions o;
  o.secrets = std::move(secrets);
  o.encrypt = encrypt;
  return std::make_shared<mw::CookieSessionStore>(o);
}

const auto later = [] { return system_clock::now() + hours(1); };
}  // namespace

TEST_CASE("session_store: data round-trips through its encoding, any bytes; malformed bytes are refused") {
  mw::SessionData d{{"a", "1"}, {"", ""}, {"bin", std::string("x\0y:\n9:", 7)}, {"10:", "::"}};
  CHECK(mw::decode_session(mw::encode_session(d)) == d);
  for (std::string bad : {"1:a", "1:a1:", "x:a1:b", "99:a1:b", ":a", "1:a-1:b", "18446744073709551616:a"})
    CHECK_FALSE(mw::decode_session(bad));
  std::set<std::string> tokens;
  for (int i = 0; i < 100; ++i) tokens.insert(mw::random_token());
  CHECK(tokens.size() == 100);
}

TEST_CASE("session_store: the cookie store signs or encrypts; old keys verify, the new one signs") {
  for (bool encrypt : {false, true}) {
    INFO((encrypt ? "encrypted" : "signed"));
    auto old_store = store({old_secret}, encrypt);
    std::string old_cookie = old_store->save("id1", {{"user", "ann"}}, later());
    CHECK(old_cookie.find(encrypt ? "e." : "s.") == 0);
    auto rotated = store({new_secret, old_secret}, encrypt);
    auto got = rotated->load(old_cookie);
    REQUIRE(got);
    CHECK(got->id == "id1");
    CHECK(got->data.at("user") == "ann");
    std::string new_cookie = rotated->save("id1", got->data, later());
    CHECK(old_store->load(new_cookie) == std::nullopt);  // signed with the new key only
    CHECK(store({new_secret}, encrypt)->load(new_cookie));
    CHECK(store({new_secret}, encrypt)->load(old_cookie) == std::nullopt);  // the old key retired
    // A cookie of the other mode is refused (no downgrade from encrypted to signed).
    CHECK(store({old_secret}, !encrypt)->load(old_cookie) == std::nullopt);
  }
}

TEST_CASE("session_store: a signed cookie is HMAC-SHA256 of a key derived from the secret; its base64 canonical") {
  // The expected value computed apart (Python's hmac and base64): the format is what other code may check.
  const std::string want =
      "s.NDEwMjQ0NDgwMAowMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZgo0OnVzZXIzOmFubg."
      "CVHqt4EmYqcJNOAJ2tX1qLVOK0LSt7wDHcpCfiiOM7g";
  auto signer = store({std::string(32, 'k')}, false);
  auto in_2100 = system_clock::time_point(seconds(4102444800));
  for (int i = 0; i < 3; ++i)  // the keyed contexts are reused
    CHECK(signer->save("0123456789abcdef0123456789abcdef", {{"user", "ann"}}, in_2100) == want);
  REQUIRE(signer->load(want));
  CHECK(signer->load(want)->data.at("user") == "ann");
  std::string last_digit_bits = want.substr(0, want.size() - 1) + "h";  // 'g' and 'h' differ in unused bits
  for (const std::string& bad : {last_digit_bits, want + " ", " " + want, want.substr(0, want.size() - 1) + "=",
                                 want.substr(0, 40) + "+" + want.substr(41)})
    CHECK_FALSE(signer->load(bad));
}

TEST_CASE("session_store: an encrypted cookie hides its data; tampering or expiry gives nothing") {
  auto s = store({old_secret}, true);
  mw::SessionData secret{{"note", std::string(300, 'A')}};
  std::string c = s->save("id", secret, later());
  std::string plain = store({old_secret}, false)->save("id", secret, later());
  // A run of 'A's reads "QUFB…" in base64 at any alignment: the signed cookie shows it, the encrypted not.
  CHECK(c.find("QUFBQUFB") == std::string::npos);
  CHECK(plain.find("QUFBQUFB") != std::string::npos);
  CHECK(s->load(c)->data == secret);
  for (std::size_t i = 2; i < c.size(); i += 7) {
    std::string t = c;
    t[i] = t[i] == 'A' ? 'B' : 'A';
    CHECK(s->load(t) == std::nullopt);
  }
  CHECK(s->load(s->save("id", {}, system_clock::now() - seconds(1))) == std::nullopt);
  auto signed_store = store({old_secret}, false);
  CHECK(signed_store->load(signed_store->save("id", {}, system_clock::now() - seconds(1))) == std::nullopt);
  CHECK_THROWS_AS(store({"short"}, false), std::invalid_argument);
  CHECK_THROWS_AS(store({}, false), std::invalid_argument);
  CHECK_THROWS_AS(s->save("id", {{"big", std::string(5000, 'x')}}, later()), std::length_error);
}

TEST_CASE("session_store: the memory store expires, forgets, and holds at most its bound") {
  mw::MemorySessionStore m(32);
  m.save("a", {{"k", "v"}}, later());
  REQUIRE(m.load("a"));
  CHECK(m.load("a")->data.at("k") == "v");
  m.save("old", {}, system_clock::now() - seconds(1));
  CHECK(m.load("old") == std::nullopt);
  m.erase("a");
  CHECK(m.load("a") == std::nullopt);
  for (int i = 0; i < 1000; ++i) m.save(mw::random_token(), {{"i", std::to_string(i)}}, later());
  CHECK(m.size() <= 32);
  CHECK(m.size() >= 16);
  CHECK_THROWS_AS(mw::MemorySessionStore(0), std::invalid_argument);
}
