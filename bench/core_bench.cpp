// Core hot paths: building an env from a parsed request, calling an app through a 5-middleware stack, and
// Request's query parsing. Heap allocations are counted with a replaced global operator new and reported
// per iteration as the "allocs" counter (benchmarks here are single-threaded).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/core/builder.hpp"
#include "csgi/core/multipart.hpp"
#include "csgi/core/query.hpp"
#include "csgi/core/request.hpp"
#include "csgi/core/request_env.hpp"

// ---- allocation counting ----

namespace {
std::uint64_t g_allocs = 0;

void* counted_alloc(std::size_t n) {
  ++g_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* counted_aligned(std::size_t n, std::align_val_t al) {
  ++g_allocs;
  std::size_t a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocs;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocs;
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t al) { return counted_aligned(n, al); }
void* operator new[](std::size_t n, std::align_val_t al) { return counted_aligned(n, al); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

// Reports heap allocations per iteration since construction.
class AllocCounter {
public:
  explicit AllocCounter(benchmark::State& state) : state_(state), start_(g_allocs) {}
  ~AllocCounter() {
    state_.counters["allocs"] =
        benchmark::Counter(static_cast<double>(g_allocs - start_), benchmark::Counter::kAvgIterations);
  }

private:
  benchmark::State& state_;
  std::uint64_t start_;
};

// ---- a parsed request, as an HTTP parser would hand it over (views into its receive buffer) ----

struct ParsedRequest {
  csgi::RequestHead head{"GET", "/api/v1/items/42?sort=desc&page=2", "HTTP/1.1"};
  csgi::ConnectionInfo conn{"localhost", "8080", "127.0.0.1", "51234", "http", ""};
  std::vector<std::pair<std::string_view, std::string_view>> headers{
      {"Host", "localhost:8080"},
      {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},
      {"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
      {"Accept-Language", "en-US,en;q=0.5"},
      {"Accept-Encoding", "gzip, deflate, br, zstd"},
      {"Connection", "keep-alive"},
      {"Cookie", "sid=3f2a9c0e7b; theme=dark; consent=yes"},
      {"Referer", "http://localhost:8080/api/v1/items"},
      {"Cache-Control", "max-age=0"},
      {"Upgrade-Insecure-Requests", "1"},
      {"Sec-Fetch-Mode", "navigate"},
      {"X-Forwarded-For", "203.0.113.7, 10.0.0.1"},
  };
};

const ParsedRequest& request() {
  static const ParsedRequest r;
  return r;
}

csgi::StringInput g_input;
csgi::FdErrorStream g_errors(2);

// What an adapter does per request on a reused Env.
void build_env(csgi::Env& env, const ParsedRequest& r) {
  env.clear();
  csgi::populate_env(env, r.head, r.conn);
  for (const auto& [name, value] : r.headers) csgi::add_header(env, name, value);
  csgi::set_server_from_host(env);
  env.set_object<csgi::Input>(csgi::keys::input, &g_input);
  env.set_object<csgi::ErrorStream>(csgi::keys::errors, &g_errors);
  csgi::set_server_flags(env, {});
}

// ---- five small pass-through middlewares ----

/// Records when the request started. Writes env bench.start (integer, ns since the steady epoch).
class StartTime {
public:
  explicit StartTime(csgi::App next) : next_(std::move(next)) {}
  csgi::Response operator()(csgi::Env& env) {
    env.set_int("bench.start", std::chrono::steady_clock::now().time_since_epoch().count());
    return next_(env);
  }

private:
  csgi::App next_;
};

/// Trusts the first X-Forwarded-For address. Reads HTTP_X_FORWARDED_FOR; writes REMOTE_ADDR.
class ForwardedFor {
public:
  explicit ForwardedFor(csgi::App next) : next_(std::move(next)) {}
  csgi::Response operator()(csgi::Env& env) {
    std::string_view xff = env.get("HTTP_X_FORWARDED_FOR");
    if (!xff.empty()) {
      std::string_view first = xff.substr(0, xff.find(','));
      while (!first.empty() && first.back() == ' ') first.remove_suffix(1);
      env.set_view(csgi::keys::REMOTE_ADDR, first);
    }
    return next_(env);
  }

private:
  csgi::App next_;
};

/// POST with X-HTTP-Method-Override: rewrites REQUEST_METHOD. Reads REQUEST_METHOD,
/// HTTP_X_HTTP_METHOD_OVERRIDE; writes REQUEST_METHOD.
class MethodOverride {
public:
  explicit MethodOverride(csgi::App next) : next_(std::move(next)) {}
  csgi::Response operator()(csgi::Env& env) {
    if (env.get(csgi::keys::REQUEST_METHOD) == "POST") {
      std::string_view o = env.get("HTTP_X_HTTP_METHOD_OVERRIDE");
      if (o == "PUT" || o == "DELETE" || o == "PATCH") env.set_view(csgi::keys::REQUEST_METHOD, o);
    }
    return next_(env);
  }

private:
  csgi::App next_;
};

/// Adds X-Content-Type-Options: nosniff to every response.
class NoSniff {
public:
  explicit NoSniff(csgi::App next) : next_(std::move(next)) {}
  csgi::Response operator()(csgi::Env& env) {
    csgi::Response r = next_(env);
    r.headers.add("X-Content-Type-Options", "nosniff");
    return r;
  }

private:
  csgi::App next_;
};

/// Adds a Server header unless the app set one.
class ServerHeader {
public:
  explicit ServerHeader(csgi::App next) : next_(std::move(next)) {}
  csgi::Response operator()(csgi::Env& env) {
    csgi::Response r = next_(env);
    if (!r.headers.has("Server")) r.headers.add("Server", "csgi");
    return r;
  }

private:
  csgi::App next_;
};

csgi::Response hello(csgi::Env&) {
  csgi::Response r;
  r.headers.reserve(4);
  r.headers.add("Content-Type", "text/plain");
  r.body = std::string("Hello, World!");
  return r;
}

csgi::App stack() {
  return csgi::Builder()
      .use<ServerHeader>()
      .use<NoSniff>()
      .use<ForwardedFor>()
      .use<MethodOverride>()
      .use<StartTime>()
      .run(hello)
      .build();
}

// ---- benchmarks ----

void BM_EnvBuild12Headers(benchmark::State& state) {
  const ParsedRequest& r = request();
  csgi::Env env;
  build_env(env, r);  // warm the env's storage, as a connection's second request would find it
  AllocCounter count(state);
  for (auto _ : state) {
    build_env(env, r);
    benchmark::DoNotOptimize(env.entries().data());
  }
}
BENCHMARK(BM_EnvBuild12Headers);

void BM_EnvBuildAndStack5(benchmark::State& state) {
  const ParsedRequest& r = request();
  csgi::App app = stack();
  csgi::Env env;
  build_env(env, r);
  { csgi::Response warm = app(env); }
  AllocCounter count(state);
  for (auto _ : state) {
    build_env(env, r);
    csgi::Response res = app(env);
    benchmark::DoNotOptimize(res.status);
  }
}
BENCHMARK(BM_EnvBuildAndStack5);

// The stack alone, on an env built once (what the middleware and app cost).
void BM_Stack5Only(benchmark::State& state) {
  csgi::App app = stack();
  csgi::Env env;
  build_env(env, request());
  AllocCounter count(state);
  for (auto _ : state) {
    csgi::Response res = app(env);
    benchmark::DoNotOptimize(res.status);
  }
}
BENCHMARK(BM_Stack5Only);

constexpr std::string_view query10 =
    "q=csgi+benchmark&page=2&per_page=50&sort=created_at&order=desc&lang=en-US&filter=status%3Aopen"
    "&tag=c%2B%2B&tag=http&utm_source=newsletter";

void BM_ParseQuery10(benchmark::State& state) {
  AllocCounter count(state);
  for (auto _ : state) {
    csgi::Params p = csgi::parse_query(query10);
    benchmark::DoNotOptimize(p.size());
  }
}
BENCHMARK(BM_ParseQuery10);

// Request::query_parameters() from cold: parse plus caching in the env (the cache key is dropped each time).
void BM_RequestQueryParameters10(benchmark::State& state) {
  ParsedRequest r = request();
  std::string target = "/search?" + std::string(query10);
  r.head.target = target;
  csgi::Env env;
  build_env(env, r);
  AllocCounter count(state);
  for (auto _ : state) {
    env.erase(csgi::request_keys::query);
    csgi::Request req(env);
    const csgi::Params& p = req.query_parameters();
    benchmark::DoNotOptimize(p.get("utm_source"));
  }
}
BENCHMARK(BM_RequestQueryParameters10);

// A second Request on the same env: the cached parameters are found, not parsed again.
void BM_RequestQueryParametersCached(benchmark::State& state) {
  ParsedRequest r = request();
  std::string target = "/search?" + std::string(query10);
  r.head.target = target;
  csgi::Env env;
  build_env(env, r);
  csgi::Request(env).query_parameters();
  AllocCounter count(state);
  for (auto _ : state) {
    csgi::Request req(env);
    benchmark::DoNotOptimize(req.param("page"));
  }
}
BENCHMARK(BM_RequestQueryParametersCached);

void BM_ParseCookies(benchmark::State& state) {
  csgi::Env env;
  build_env(env, request());
  AllocCounter count(state);
  for (auto _ : state) {
    env.erase(csgi::request_keys::cookies);
    benchmark::DoNotOptimize(csgi::Request(env).cookie("sid"));
  }
}
BENCHMARK(BM_ParseCookies);

// Multipart: one text field and a file of state.range(0) bytes; files above 64 KiB go to a temp file.
void BM_Multipart(benchmark::State& state) {
  const std::string boundary = "----csgiBench0123456789";
  std::string body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nholiday\r\n";
  body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"p.jpg\"\r\n";
  body += "Content-Type: image/jpeg\r\n\r\n";
  for (std::int64_t i = 0; i < state.range(0); ++i) body.push_back(static_cast<char>("\r\n-abcdefgh"[i % 11]));
  body += "\r\n--" + boundary + "--\r\n";
  AllocCounter count(state);
  for (auto _ : state) {
    csgi::StringInput in(body);
    csgi::FormData f = csgi::parse_multipart(in, boundary);
    benchmark::DoNotOptimize(f.uploads.size());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_Multipart)->Arg(16 * 1024)->Arg(1024 * 1024);

}  // namespace

BENCHMARK_MAIN();
