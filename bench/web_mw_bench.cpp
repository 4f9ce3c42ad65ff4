// Per-request cost of sessions, CSRF, CORS and the rate limit (in-process, no sockets), and the broadcast
// hub's fan-out: each request benchmark builds the env of a typical browser request (9 headers and the
// session cookie), runs hello through the layer, and drains the response. Subtract BM_Bare for the layer's
// own cost. With CSGI_BENCH_REDIS=redis://host:port the Redis session store and rate limit are measured
// too (the CPU of this thread; Redis's own is not counted). Suite: bench/suites/web_mw.sh.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "csgi/core/on_response.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/middleware/broadcast.hpp"
#include "csgi/middleware/cors.hpp"
#include "csgi/middleware/csrf.hpp"
#include "csgi/middleware/rate_limit.hpp"
#include "csgi/middleware/sessions.hpp"
#ifdef CSGI_BENCH_HAVE_REDIS
#include "csgi/middleware/redis/rate_limit_redis.hpp"
#include "csgi/middleware/redis/session_store_redis.hpp"
#endif

using namespace csgi;

namespace {

struct Request {
  std::string_view method = "GET";
  std::string cookie;  // the whole Cookie field
  std::string csrf_token;
  std::string origin;
};

void build(Env& env, StringInput& in, StringErrorStream& err, const Request& r) {
  env.clear();
  populate_env(env, RequestHead{r.method, "/app/items?page=2", "HTTP/1.1"},
               ConnectionInfo{"localhost", "8080", "127.0.0.1", "40000", "http", ""});
  static const std::pair<std::string_view, std::string_view> headers[] = {
      {"Host", "localhost:8080"},
      {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) bench"},
      {"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
      {"Accept-Language", "en-US,en;q=0.5"},
      {"Accept-Encoding", "gzip, deflate, br"},
      {"Connection", "keep-alive"},
      {"Sec-Fetch-Site", "same-origin"},
      {"X-Request-Id", "req-0123456789abcdef"},
      {"Cache-Control", "no-cache"}};
  for (auto [n, v] : headers) add_header(env, n, v);
  if (!r.cookie.empty()) add_header(env, "Cookie", r.cookie);  // env values are views: r outlives the request
  if (!r.csrf_token.empty()) add_header(env, "X-CSRF-Token", r.csrf_token);
  if (!r.origin.empty()) add_header(env, "Origin", r.origin);
  env.set_object<Input>(keys::input, &in);
  env.set_object<ErrorStream>(keys::errors, &err);
}

std::size_t drain(Response r) {
  if (auto* s = std::get_if<std::string>(&r.body)) return s->size();
  StreamPtr st = body_stream(std::move(r.body));
  std::size_t n = 0;
  std::string chunk;
  while (st && st->next(chunk)) n += chunk.size();
  if (st) st->close();
  return n;
}

/// hello, which reads the session's "user" when there is a session.
App hello() {
  return [](Env& env) {
    Session* s = mw::Sessions::of(env);
    if (s && env.get(keys::QUERY_STRING) == "login") {
      s->data["user"] = "ann";
      return Response::text(200, mw::Csrf::token(env));
    }
    return Response::text(200, s && s->data.count("user") ? "Hello, ann!\n" : "Hello, World!\n");
  };
}

void run(benchmark::State& state, const App& app, const Request& r) {
  Env env;
  StringInput in;
  StringErrorStream err;
  for (auto _ : state) {
    build(env, in, err, r);
    benchmark::DoNotOptimize(drain(app(env)));
  }
}

/// The session cookie (and a CSRF token) of a logged-in client of `app`.
Request logged_in(const App& app) {
  Env env;
  StringInput in;
  StringErrorStream err;
  build(env, in, err, {});
  env.set(keys::QUERY_STRING, "login");
  Response res = app(env);
  Request r;
  std::string sc(res.headers.get("Set-Cookie").value_or(""));
  r.cookie = "theme=dark; " + sc.substr(0, sc.find(';'));
  if (auto* body = std::get_if<std::string>(&res.body)) r.csrf_token = *body;
  return r;
}

#ifdef CSGI_BENCH_HAVE_REDIS
std::shared_ptr<mw::RedisClient> redis_client() {
  const char* url = std::getenv("CSGI_BENCH_REDIS");
  return url ? std::make_shared<mw::RedisClient>(mw::RedisOptions::from_url(url)) : nullptr;
}
#endif

App with_sessions(App next, std::shared_ptr<mw::SessionStore> store) {
  mw::SessionsOptions o;
  o.store = std::move(store);
  return wrap<mw::Sessions>(std::move(next), o);
}

std::shared_ptr<mw::SessionStore> cookie_store(bool encrypt) {
  mw::CookieSessionStoreOptions o;
  o.secrets = {std::string(32, 'k')};
  o.encrypt = encrypt;
  return std::make_shared<mw::CookieSessionStore>(o);
}

void BM_Bare(benchmark::State& s) { run(s, hello(), {}); }
void BM_SessionsCookieSigned(benchmark::State& s) {
  App app = with_sessions(hello(), cookie_store(false));
  run(s, app, logged_in(app));
}
void BM_SessionsCookieEncrypted(benchmark::State& s) {
  App app = with_sessions(hello(), cookie_store(true));
  run(s, app, logged_in(app));
}
void BM_SessionsMemory(benchmark::State& s) {
  App app = with_sessions(hello(), std::make_shared<mw::MemorySessionStore>());
  run(s, app, logged_in(app));
}
void BM_SessionsNone(benchmark::State& s) {  // no cookie: an empty session, nothing stored
  run(s, with_sessions(hello(), std::make_shared<mw::MemorySessionStore>()), {});
}
#ifdef CSGI_BENCH_HAVE_REDIS
void BM_SessionsRedis(benchmark::State& s) {
  auto redis = redis_client();
  if (!redis) return s.SkipWithError("CSGI_BENCH_REDIS not set");
  App app = with_sessions(hello(), std::make_shared<mw::RedisSessionStore>(redis));
  run(s, app, logged_in(app));
}
#endif
void BM_CsrfPost(benchmark::State& s) {  // sessions (memory) + csrf, a POST with a masked token
  App app = with_sessions(wrap<mw::Csrf>(hello()), std::make_shared<mw::MemorySessionStore>());
  Request r = logged_in(app);
  r.method = "POST";
  run(s, app, r);
}
void BM_CorsSimple(benchmark::State& s) {
  mw::CorsOptions o;
  o.origins = {"https://app.example"};
  o.credentials = true;
  Request r;
  r.origin = "https://app.example";
  run(s, wrap<mw::Cors>(hello(), o), r);
}
void BM_RateLimitMemory(benchmark::State& s) {
  mw::RateLimitOptions o;
  o.policy = {1000000000, std::chrono::seconds(1)};
  run(s, wrap<mw::RateLimit>(hello(), o), {});
}
#ifdef CSGI_BENCH_HAVE_REDIS
void BM_RateLimitRedis(benchmark::State& s) {
  auto redis = redis_client();
  if (!redis) return s.SkipWithError("CSGI_BENCH_REDIS not set");
  mw::RateLimitOptions o;
  o.policy = {1000000000, std::chrono::seconds(1)};
  o.backend = std::make_shared<mw::RedisRateLimit>(redis);
  run(s, wrap<mw::RateLimit>(hello(), o), {});
}
#endif

/// One message published to N subscribers of the in-process hub, timed until every one has it.
void BM_BroadcastFanout(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  mw::LocalBroadcast hub;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t got = 0;
  std::vector<mw::Subscription> subs;
  for (std::size_t i = 0; i < n; ++i) {
    mw::Subscriber sub;
    sub.deliver = [&](const mw::BroadcastMessage&, std::uint64_t) {
      std::lock_guard lock(mu);
      if (++got % n == 0) cv.notify_one();
      return true;
    };
    subs.push_back(hub.subscribe("room", std::move(sub)));
  }
  std::size_t want = 0;
  for (auto _ : state) {
    want += n;
    hub.publish("room", R"({"from":"ann","text":"hello"})");
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return got >= want; });
  }
}

}  // namespace

BENCHMARK(BM_Bare);
BENCHMARK(BM_SessionsNone);
BENCHMARK(BM_SessionsCookieSigned);
BENCHMARK(BM_SessionsCookieEncrypted);
BENCHMARK(BM_SessionsMemory);
#ifdef CSGI_BENCH_HAVE_REDIS
BENCHMARK(BM_SessionsRedis)->UseRealTime();
#endif
BENCHMARK(BM_CsrfPost);
BENCHMARK(BM_CorsSimple);
BENCHMARK(BM_RateLimitMemory);
#ifdef CSGI_BENCH_HAVE_REDIS
BENCHMARK(BM_RateLimitRedis)->UseRealTime();
#endif
BENCHMARK(BM_BroadcastFanout)->Arg(1000)->UseRealTime();
BENCHMARK_MAIN();
