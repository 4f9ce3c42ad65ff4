#include "front_checks.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "harness.hpp"

namespace csgi::test {

namespace {
using namespace std::chrono_literals;

CaseResult expect(bool ok, std::string detail) { return ok ? CaseResult{} : CaseResult{CaseResult::fail, std::move(detail)}; }

std::string show(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "<absent>" : "'" + it->second + "'";
}

std::string expected_file() {
  std::string s(300000, '\0');
  for (int i = 0; i < 300000; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>('a' + (i * 7 + i / 1000) % 26);
  return s;
}
}  // namespace

Column run_front_checks(const Front& f) {
  Column col{f.name, {}};
  const std::string p = f.prefix;
  auto add = [&](const std::string& name, const std::function<CaseResult()>& fn) {
    CaseResult r;
    auto t0 = std::chrono::steady_clock::now();
    try {
      r = fn();
    } catch (const std::exception& e) {
      r = {CaseResult::fail, std::string("exception: ") + e.what()};
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    if (std::getenv("CSGI_TEST_VERBOSE")) std::fprintf(stderr, "[%s] %s: %lld ms\n", f.name.c_str(), name.c_str(), static_cast<long long>(ms));
    col.cases.emplace_back(name, r);
  };

  add("SCRIPT_NAME = mount, PATH_INFO decoded once", [&] {
    auto r = http(f.port, "GET", p + "/env/a%2cb/%252c/x%20y?q=1&r=%20");
    auto env = parse_env(r.body);
    bool ok = r.status == 200 && env["SCRIPT_NAME"] == p && env["PATH_INFO"] == "/env/a,b/%2c/x y";
    return expect(ok, "status " + std::to_string(r.status) + " SCRIPT_NAME " + show(env, "SCRIPT_NAME") + " PATH_INFO " +
                          show(env, "PATH_INFO"));
  });
  add("REQUEST_URI raw, QUERY_STRING", [&] {
    auto r = http(f.port, "GET", p + "/env/bar%20baz%73?x=a&y=%20");
    auto env = parse_env(r.body);
    return expect(env["REQUEST_URI"] == p + "/env/bar%20baz%73?x=a&y=%20" && env["QUERY_STRING"] == "x=a&y=%20",
                  "REQUEST_URI " + show(env, "REQUEST_URI") + " QUERY_STRING " + show(env, "QUERY_STRING"));
  });
  add("repeated slashes kept in PATH_INFO", [&] {
    auto r = http(f.port, "GET", p + "/env//foo///bar");
    auto env = parse_env(r.body);
    return expect(env["PATH_INFO"] == "/env//foo///bar", "PATH_INFO " + show(env, "PATH_INFO"));
  });
  add("no HTTP_CONTENT_*, HTTP_PROXY; GET: no/0 CONTENT_LENGTH", [&] {
    auto r = http(f.port, "GET", p + "/env", "", {{"Proxy", "http://evil:1"}, {"X-Foo", "bar"}});
    auto env = parse_env(r.body);
    bool ok = r.status == 200 && !env.count("HTTP_PROXY") && !env.count("HTTP_CONTENT_TYPE") &&
              !env.count("HTTP_CONTENT_LENGTH") && (!env.count("CONTENT_LENGTH") || env["CONTENT_LENGTH"] == "0") && env["HTTP_X_FOO"] == "bar" &&
              env["REQUEST_METHOD"] == "GET" && env["csgi.version"] == "1.0" && !env["SERVER_NAME"].empty() &&
              !env["SERVER_PORT"].empty() && env["csgi.url_scheme"] == "http";
    return expect(ok, "status " + std::to_string(r.status) + " HTTP_PROXY " + show(env, "HTTP_PROXY") + " CONTENT_LENGTH " +
                          show(env, "CONTENT_LENGTH") + " HTTP_CONTENT_LENGTH " + show(env, "HTTP_CONTENT_LENGTH"));
  });
  add("POST body 100000 bytes, rewindable", [&] {
    std::string body(100000, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('A' + (i * 13) % 50);
    body.replace(500, 12, "Foo: Bar\r\n\r\n");
    auto r = http(f.port, "POST", p + "/echo", body, {{"Content-Type", "application/x-test"}});
    return expect(r.status == 200 && r.body == body && r.header("X-Rewind-Ok") == "yes" &&
                      r.header("Content-Type") == "application/x-test",
                  "status " + std::to_string(r.status) + " got " + std::to_string(r.body.size()) + " bytes, rewind " +
                      r.header("X-Rewind-Ok"));
  });
  add("file body", [&] {
    auto r = http(f.port, "GET", p + "/file");
    return expect(r.status == 200 && r.body == expected_file(), "status " + std::to_string(r.status) + ", " +
                                                                    std::to_string(r.body.size()) + " bytes");
  });
  add("pull stream body", [&] {
    auto r = http(f.port, "GET", p + "/pull");
    return expect(r.status == 200 && r.body == "pull 0\npull 1\npull 2\n", "body '" + r.body + "'");
  });
  add("streaming writer flushed per write", [&]() -> CaseResult {
    if (!f.no_stream_reason.empty()) return {CaseResult::skip, f.no_stream_reason};
    // The app writes "first", then waits (≤ 5 s) for our release before "second". A front server that
    // holds the response until it ends shows either nothing within 5 s or "first" and "second" together:
    // both fail. The token keeps this column's release from finishing another column's /stream.
    static std::atomic<int> seq{0};
    std::string id = std::to_string(f.port) + "-" + std::to_string(++seq);
    Connection c(f.port);
    c.send("GET " + p + "/stream?id=" + id + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string got = c.read_until("first\n", 5s);
    bool first_before_release = got.find("first\n") != std::string::npos && got.find("second\n") == std::string::npos;
    http(f.port, "GET", p + "/release?id=" + id);
    got = c.read_until("second\n", 8s);
    return expect(first_before_release && got.find("second\n") != std::string::npos,
                  first_before_release ? "second chunk missing" : "first chunk not delivered before the app finished");
  });
  add("app exception → 500, logged to csgi.errors", [&] {
    auto r = http(f.port, "GET", p + "/throw");
    bool logged = false;
    for (int i = 0; i < 50 && !logged; ++i) {
      for (const auto& log : f.logs) logged = logged || read_file(log).find("deliberate failure") != std::string::npos;
      if (!logged) std::this_thread::sleep_for(20ms);
    }
    return expect(r.status == 500 && logged, "status " + std::to_string(r.status) + (logged ? "" : ", not in the logs"));
  });
  add("HttpError status", [&] {
    auto r = http(f.port, "GET", p + "/http-error");
    return expect(r.status == 418, "status " + std::to_string(r.status));
  });
  add("WebSocket upgrade → 501, no csgix.websocket (EXT-8)", [&] {
    auto r = http(f.port, "GET", p + "/websocket", {},
                  {{"Upgrade", "websocket"}, {"Connection", "Upgrade"}, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                   {"Sec-WebSocket-Version", "13"}},
                  std::chrono::seconds(5));
    return expect(r.status == 501 && r.body.find("csgix.websocket") != std::string::npos,
                  "status " + std::to_string(r.status) + " body '" + r.body.substr(0, 80) + "'");
  });
  add("HEAD: headers, no body", [&] {
    auto r = http(f.port, "HEAD", p + "/pull");
    return expect(r.status == 200 && r.body.empty(), "status " + std::to_string(r.status));
  });
  add("304 without Content-Type", [&] {
    auto r = http(f.port, "GET", p + "/status?code=304");
    return expect(r.status == 304 && r.header("Content-Type").empty() && r.body.empty(),
                  "status " + std::to_string(r.status) + " Content-Type '" + r.header("Content-Type") + "'");
  });
  add("repeated response header", [&] {
    auto r = http(f.port, "GET", p + "/headers");
    auto all = r.all("Set-Cookie");
    return expect(all.size() == 2, std::to_string(all.size()) + " Set-Cookie fields");
  });
  add("client gone → writer.write() false", [&]() -> CaseResult {
    if (!f.no_gone_reason.empty()) return {CaseResult::skip, f.no_gone_reason};
    int before = std::atoi(http(f.port, "GET", p + "/gone-count").body.c_str());
    {
      Connection c(f.port);
      c.send("GET " + p + "/gone HTTP/1.1\r\nHost: x\r\n\r\n");
      c.read_until("ggg", 5s);
      c.close(true);
    }
    int after = before;
    for (int i = 0; i < 100 && after == before; ++i) {
      std::this_thread::sleep_for(50ms);
      after = std::atoi(http(f.port, "GET", p + "/gone-count").body.c_str());
    }
    return expect(after > before, "the writer never saw the client leave");
  });
  return col;
}

void print_table(const std::vector<Column>& columns) {
  if (columns.empty()) return;
  std::size_t w = 0;
  for (const auto& [name, r] : columns.front().cases) w = std::max(w, name.size());
  std::printf("\n%-*s", static_cast<int>(w), "case");
  for (const auto& c : columns) std::printf(" | %s", c.front.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < columns.front().cases.size(); ++i) {
    std::printf("%-*s", static_cast<int>(w), columns.front().cases[i].first.c_str());
    for (const auto& c : columns) {
      const char* mark = "-";
      if (i < c.cases.size()) mark = c.cases[i].second.state == CaseResult::pass ? "pass" : c.cases[i].second.state == CaseResult::skip ? "skip" : "FAIL";
      std::printf(" | %-*s", static_cast<int>(c.front.size()), mark);
    }
    std::printf("\n");
  }
  for (const auto& c : columns)
    for (const auto& [name, r] : c.cases)
      if (r.state != CaseResult::pass)
        std::printf("  %s [%s] %s: %s\n", r.state == CaseResult::skip ? "skip" : "FAIL", c.front.c_str(), name.c_str(), r.detail.c_str());
  std::fflush(stdout);
}

void require_all(const std::vector<Column>& columns) {
  for (const auto& c : columns)
    for (const auto& [name, r] : c.cases) {
      INFO(c.front << " / " << name << ": " << r.detail);
      CHECK(r.state != CaseResult::fail);
    }
}

}  // namespace csgi::test
