#include "csgi/core/env.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

using csgi::Env;

TEST_CASE("Env: keys are readable and writable by name", "[env]") {
  Env env;
  CHECK(env["PATH_INFO"] == "");
  CHECK_FALSE(env["PATH_INFO"].exists());
  env["PATH_INFO"] = "/foo";
  CHECK(env["PATH_INFO"] == "/foo");
  CHECK(env.get("PATH_INFO") == "/foo");
  env["PATH_INFO"] = "/bar";
  CHECK(env.get("PATH_INFO") == "/bar");
  CHECK(env.size() == 1);
  CHECK(env.erase("PATH_INFO"));
  CHECK_FALSE(env.contains("PATH_INFO"));
  CHECK_FALSE(env.erase("PATH_INFO"));
}

TEST_CASE("Env: set copies, so the caller's buffer may change", "[env]") {
  Env env;
  std::string key = "myapp.key", value = "value";
  env.set(key, value);
  key[0] = 'X';
  value[0] = 'X';
  CHECK(env.get("myapp.key") == "value");
}

TEST_CASE("Env: many long values spill past the inline arena and survive", "[env]") {
  Env env;
  for (int i = 0; i < 200; ++i) env.set("k" + std::to_string(i), std::string(100, static_cast<char>('a' + i % 26)));
  for (int i = 0; i < 200; ++i) CHECK(env.get("k" + std::to_string(i)) == std::string(100, static_cast<char>('a' + i % 26)));
  env.clear();
  CHECK(env.size() == 0);
  env.set("again", "yes");
  CHECK(env.get("again") == "yes");
}

TEST_CASE("Env: typed values and objects under a middleware namespace", "[env]") {
  struct Session {
    int visits = 0;
  };
  Env env;
  env.set_bool("csgi.multithread", true);
  env.set_int("myapp.count", 42);
  auto s = std::make_shared<Session>();
  env.set_object("myapp.session", s);
  CHECK(env.flag("csgi.multithread"));
  CHECK(env.find("myapp.count")->integer() == 42);
  REQUIRE(env.object<Session>("myapp.session") == s.get());
  CHECK(env.object<int>("myapp.session") == nullptr);
  CHECK(env.object<Session>("missing") == nullptr);
  CHECK(env.get("myapp.count", "fallback") == "fallback");
  std::weak_ptr<Session> weak = s;
  s.reset();
  CHECK_FALSE(weak.expired());
  env.clear();
  CHECK(weak.expired());
}

TEST_CASE("Env: input and errors default sensibly", "[env]") {
  Env env;
  CHECK(env.input().read_all().empty());
  csgi::StringInput in("hello");
  csgi::StringErrorStream err;
  env.set_object<csgi::Input>(csgi::keys::input, &in);
  env.set_object<csgi::ErrorStream>(csgi::keys::errors, &err);
  CHECK(env.input().read_all() == "hello");
  env.errors().write("oops");
  CHECK(err.text() == "oops\n");
}

TEST_CASE("Env: iteration keeps insertion order", "[env]") {
  Env env;
  env.set("B", "2");
  env.set("A", "1");
  std::string order;
  for (const auto& e : env) order += e.key;
  CHECK(order == "BA");
}

TEST_CASE("Env: agrees with a map through sets, erases and clears, past the indexed size", "[env]") {
  Env env;
  std::map<std::string, std::string> model;
  std::vector<std::string> order;  // keys in insertion order
  std::uint32_t seed = 7;
  auto next = [&seed] { return (seed = seed * 1103515245u + 12345u) >> 8; };
  // Keys of many lengths that share prefixes and suffixes, as HTTP_ keys do.
  auto key_of = [](std::uint32_t i) {
    std::string k = i % 3 == 0 ? "HTTP_X_" : i % 3 == 1 ? "k" : "csgi.";
    k += std::to_string(i);
    if (i % 5 == 0) k += "_SUFFIX_THAT_IS_LONG";
    return k;
  };
  for (int step = 0; step < 20000; ++step) {
    std::uint32_t op = next() % 100, i = next() % 300;
    std::string key = key_of(i), value = "v" + std::to_string(step);
    if (op < 70) {
      if (!model.count(key)) order.push_back(key);
      model[key] = value;
      env.set(key, value);
    } else if (op < 90) {
      bool had = model.erase(key) > 0;
      if (had) order.erase(std::find(order.begin(), order.end(), key));
      CHECK(env.erase(key) == had);
    } else if (op < 91) {
      model.clear();
      order.clear();
      env.clear();
    }
    std::string probe = key_of(next() % 300);
    auto it = model.find(probe);
    REQUIRE(env.contains(probe) == (it != model.end()));
    if (it != model.end()) REQUIRE(env.get(probe) == it->second);
    REQUIRE(env.size() == model.size());
  }
  REQUIRE(env.size() == order.size());
  for (std::size_t k = 0; k < order.size(); ++k) CHECK(env.entries()[k].key == order[k]);
}

TEST_CASE("Env: a reused env stays right over more clears than the index has epochs", "[env]") {
  Env env;
  // A key set once, then a run of empty requests: its old index slot must never come back to life.
  env.set_view("csgi.once", "1");
  for (int round = 0; round < 70000; ++round) {
    env.clear();
    REQUIRE_FALSE(env.contains("csgi.once"));
  }
  for (int round = 0; round < 70000; ++round) {
    env.clear();
    REQUIRE_FALSE(env.contains("PATH_INFO"));
    if (round % 2) env.set_view("PATH_INFO", "/odd");
    env.set_int("csgi.round", round);
    REQUIRE(env.find("csgi.round")->integer() == round);
    REQUIRE(env.contains("PATH_INFO") == (round % 2 == 1));
    REQUIRE(env.size() == (round % 2 ? 2u : 1u));
    REQUIRE(env.entries().back().key == "csgi.round");
  }
}

namespace {
// An EnvSource over a map: what an adapter would otherwise have set up front. Counts its calls.
class MapSource final : public csgi::EnvSource {
public:
  explicit MapSource(std::map<std::string, std::string> entries, bool keep = true)
      : entries_(std::move(entries)), keep_(keep) {}
  bool fetch(Env& env, std::string_view key) noexcept override {
    ++fetches;
    auto it = entries_.find(std::string(key));
    if (it != entries_.end() && !forgotten_.count(it->first))
      env.emplace(it->first, csgi::Value::of_text(it->second), false);
    return keep_;
  }
  void fetch_all(Env& env) noexcept override {
    ++fetch_alls;
    for (const auto& [k, v] : entries_)
      if (!forgotten_.count(k)) env.emplace(k, csgi::Value::of_text(v), false);
  }
  bool forget(std::string_view key) noexcept override {
    std::string k(key);
    return entries_.count(k) && forgotten_.insert(k).second;
  }
  int fetches = 0, fetch_alls = 0;

private:
  std::map<std::string, std::string> entries_;
  std::set<std::string> forgotten_;
  bool keep_;
};
}  // namespace

TEST_CASE("Env: a source's entries appear on first use, as if the env held them", "[env]") {
  std::map<std::string, std::string> host{{"REQUEST_METHOD", "GET"}, {"HTTP_HOST", "h"}, {"HTTP_X_A", "a"}};
  Env env;
  MapSource src(host);
  env.attach(src, host.size());
  CHECK(src.fetches == 0);
  const Env& cenv = env;
  CHECK(cenv.get("HTTP_HOST") == "h");  // a const lookup adds it
  CHECK(src.fetches == 1);
  CHECK(env.get("HTTP_HOST") == "h");
  CHECK(src.fetches == 1);  // now the env's own
  CHECK_FALSE(env.contains("HTTP_NONE"));
  env.set("HTTP_X_A", "mine");  // overrides the host's
  CHECK(env.get("HTTP_X_A") == "mine");
  auto [v, inserted] = env.emplace("REQUEST_METHOD", csgi::Value::of_text("POST"));
  CHECK((!inserted && v->text() == "GET"));  // emplace keeps what the source holds
  CHECK(env.erase("REQUEST_METHOD"));
  CHECK_FALSE(env.contains("REQUEST_METHOD"));  // forgotten, not fetched again
  CHECK_FALSE(env.erase("REQUEST_METHOD"));
  std::map<std::string, std::string> seen;
  for (const auto& e : env) seen[std::string(e.key)] = std::string(e.value.text());
  CHECK(seen == std::map<std::string, std::string>{{"HTTP_HOST", "h"}, {"HTTP_X_A", "mine"}});
  CHECK(src.fetch_alls == 1);
  int fetches = src.fetches;
  CHECK_FALSE(env.contains("HTTP_NONE"));  // resolved: the source is detached
  CHECK(src.fetches == fetches);
  env.clear();
  CHECK_FALSE(env.contains("HTTP_HOST"));  // clear() detaches too
  CHECK(src.fetches == fetches);
}

TEST_CASE("Env: a source that asks to be resolved is read whole at once", "[env]") {
  Env env;
  MapSource src({{"A", "1"}, {"B", "2"}}, false);
  env.attach(src, 2);
  CHECK(env.get("A") == "1");
  CHECK((src.fetches == 1 && src.fetch_alls == 1));
  CHECK(env.size() == 2);
  CHECK(env.get("B") == "2");
  CHECK(src.fetches == 1);
}

TEST_CASE("Env: with a source it agrees with an eager env through random operations", "[env]") {
  std::uint32_t seed = 11;
  auto next = [&seed] { return (seed = seed * 1103515245u + 12345u) >> 8; };
  auto key_of = [](std::uint32_t i) { return (i % 2 ? "HTTP_X_" : "k") + std::to_string(i); };
  for (int round = 0; round < 200; ++round) {
    std::map<std::string, std::string> host;
    for (std::uint32_t i = 0; i < 40; ++i)
      if (next() % 2) host[key_of(i)] = "h" + std::to_string(i);
    Env lazy, eager;
    for (const auto& [k, v] : host) eager.set(k, v);
    MapSource src(host);
    lazy.attach(src, host.size());
    for (int step = 0; step < 30; ++step) {
      std::uint32_t op = next() % 100;
      std::string key = key_of(next() % 40), value = "v" + std::to_string(step);
      if (op < 40) {
        REQUIRE(lazy.get(key) == eager.get(key));
        REQUIRE(lazy.contains(key) == eager.contains(key));
      } else if (op < 60) {
        lazy.set(key, value);
        eager.set(key, value);
      } else if (op < 75) {
        REQUIRE(lazy.erase(key) == eager.erase(key));
      } else if (op < 90) {
        auto a = lazy.emplace(key, csgi::Value::of_text(lazy.intern(value)));
        auto b = eager.emplace(key, csgi::Value::of_text(eager.intern(value)));
        REQUIRE((a.second == b.second && a.first->text() == b.first->text()));
      } else if (op < 95) {
        REQUIRE(lazy.size() == eager.size());
      }
    }
    std::map<std::string, std::string> l, e;
    for (const auto& x : lazy) REQUIRE(l.emplace(std::string(x.key), std::string(x.value.text())).second);
    for (const auto& x : eager) e.emplace(std::string(x.key), std::string(x.value.text()));
    REQUIRE(l == e);
  }
}
