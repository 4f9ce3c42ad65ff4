#include "csgi/core/env.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

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
