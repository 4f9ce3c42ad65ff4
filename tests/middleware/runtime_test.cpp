#include "csgi/middleware/runtime.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <regex>
#include <thread>
#include <vector>

#include "misc_helpers.hpp"

using namespace csgi;
using namespace csgi::mwtest;

TEST_CASE("runtime: X-Runtime on every body kind, body untouched") {
  for (Kind k : all_kinds) {
    INFO(name(k));
    App app = lint(wrap<mw::Runtime>(answer(k, 200, "hello world")));
    auto res = testing::call(app, "GET /");
    CHECK(res.status == 200);
    CHECK(res.body == "hello world");
    CHECK(std::regex_match(res.header("X-Runtime"), std::regex(R"(\d+\.\d{6})")));
  }
}

TEST_CASE("runtime: custom header name replaces an inner one; empty name refused") {
  App inner = answer(Kind::complete, 200, "x", {{"X-Took", "old"}});
  App app = lint(wrap<mw::Runtime>(inner, mw::RuntimeOptions{"X-Took"}));
  auto res = testing::call(app, "GET /");
  CHECK(res.headers.get_all("X-Took").size() == 1);
  CHECK(res.header("X-Took") != "old");
  CHECK_THROWS_AS(mw::Runtime(inner, mw::RuntimeOptions{""}), std::invalid_argument);
}

TEST_CASE("runtime: measures the app's time") {
  App slow = lint([](Env&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return Response::text(200, "ok");
  });
  auto res = testing::call(wrap<mw::Runtime>(slow), "GET /");
  CHECK(std::stod(res.header("X-Runtime")) >= 0.019);
}

TEST_CASE("runtime: the header's text is printf's %.6f for every magnitude") {
  auto printf_text = [](double v) {
    char buf[400];
    int n = std::snprintf(buf, sizeof buf, "%.6f", v);
    return std::string(buf, static_cast<std::size_t>(n));
  };
  // Exact ties at the sixth decimal (0.0078125 = 2^-7), values next to them, rounding carries, powers of ten.
  std::vector<double> values = {0.0,       0.0078125, 0.0234375, 0.5,        0.0000005,      0.0000015,
                                0.9999995, 9.9999995, 0.000001,  0.00000049, 123456.1234565, 1e-300,
                                1e9,       9.2e9,     1e15,      1e300};
  for (int e = -45; e <= 45; ++e) values.push_back(std::ldexp(1.0, e));  // around the exact path's limits
  for (double v : {0.0078125, 0.0000005, 0.9999995, std::ldexp(1.0, -40), std::ldexp(1.0, 41)}) {
    values.push_back(std::nextafter(v, 0.0));
    values.push_back(std::nextafter(v, 1.0));
  }
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    double mantissa = std::uniform_real_distribution<double>(1.0, 10.0)(rng);
    values.push_back(mantissa * std::pow(10.0, static_cast<int>(rng() % 21) - 10));  // 1e-10 .. 1e11
    values.push_back(static_cast<double>(rng() % 100000000000) * 1e-9);                // whole nanoseconds
  }
  for (double v : values) {
    INFO(v);
    REQUIRE(mw::runtime_text(v) == printf_text(v));
  }
}
