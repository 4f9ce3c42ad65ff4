// Per-request cost of the access/auth/proxy/id/status/metrics/cgi middleware (in-process, no sockets): each
// benchmark builds the env of a typical request (12 headers), runs hello through one layer, and drains
// the response. Subtract BM_Bare for the layer's own cost. Suite: bench/suites/mw_misc.sh.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "csgi/core/on_response.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/middleware/access.hpp"
#include "csgi/middleware/auth_basic.hpp"
#include "csgi/middleware/cascade.hpp"
#include "csgi/middleware/cgi_bin.hpp"
#include "csgi/middleware/error_document.hpp"
#include "csgi/middleware/http_exceptions.hpp"
#include "csgi/middleware/metrics.hpp"
#include "csgi/middleware/request_id.hpp"
#include "csgi/middleware/reverse_proxy.hpp"
#include "csgi/middleware/runtime.hpp"
#include "csgi/middleware/server_status.hpp"
#include "csgi/middleware/url_map.hpp"

namespace fs = std::filesystem;
using namespace csgi;

namespace {

App hello() {
  return [](Env&) { return Response::text(200, "Hello, World!\n"); };
}

void build(Env& env, StringInput& in, StringErrorStream& err, std::string_view target = "/app/items?page=2") {
  env.clear();
  populate_env(env, RequestHead{"GET", target, "HTTP/1.1"},
               ConnectionInfo{"localhost", "8080", "127.0.0.1", "40000", "http", ""});
  static const std::pair<std::string_view, std::string_view> headers[] = {
      {"Host", "localhost:8080"},
      {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) bench"},
      {"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
      {"Accept-Language", "en-US,en;q=0.5"},
      {"Accept-Encoding", "gzip, deflate, br"},
      {"Connection", "keep-alive"},
      {"Cookie", "session=abc123; theme=dark"},
      {"X-Forwarded-For", "203.0.113.7, 10.0.0.2"},
      {"X-Forwarded-Proto", "https"},
      {"X-Request-Id", "req-0123456789abcdef"},
      {"Authorization", "Basic dTpw"},  // u:p
      {"Cache-Control", "no-cache"}};
  for (auto [n, v] : headers) add_header(env, n, v);
  env.set_object<Input>(keys::input, &in);
  env.set_object<ErrorStream>(keys::errors, &err);
  env.set_bool(keys::streaming, true);
}

std::size_t drain(Response r) {
  if (auto* s = std::get_if<std::string>(&r.body)) return s->size();
  if (r.is_delayed()) return 0;
  StreamPtr st = body_stream(std::move(r.body));
  std::size_t n = 0;
  std::string chunk;
  while (st && st->next(chunk)) n += chunk.size();
  if (st) st->close();
  return n;
}

void run(benchmark::State& state, const App& app, std::string_view target = "/app/items?page=2") {
  Env env;
  StringInput in;
  StringErrorStream err;
  for (auto _ : state) {
    build(env, in, err, target);
    benchmark::DoNotOptimize(drain(app(env)));
  }
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "csgi-mwbench-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

void BM_Bare(benchmark::State& s) { run(s, hello()); }
void BM_Runtime(benchmark::State& s) { run(s, wrap<mw::Runtime>(hello())); }
void BM_RequestIdIncoming(benchmark::State& s) { run(s, wrap<mw::RequestId>(hello())); }
void BM_RequestIdGenerated(benchmark::State& s) {
  mw::RequestIdOptions o;
  o.trust_incoming = false;
  run(s, wrap<mw::RequestId>(hello(), o));
}
void BM_ReverseProxy(benchmark::State& s) {
  mw::ReverseProxyOptions o;
  o.trusted = {"127.0.0.0/8", "10.0.0.0/8"};
  run(s, wrap<mw::ReverseProxy>(hello(), o));
}
void BM_Access3Rules(benchmark::State& s) {
  using mw::AccessRule;
  mw::AccessOptions o;
  o.rules = {AccessRule::deny_from({}, {"DELETE"}), AccessRule::allow_from({"10.0.0.0/8", "::1"}, {}, "/admin"),
             AccessRule::deny_from({}, {}, "/admin")};
  run(s, wrap<mw::Access>(hello(), o));
}
void BM_HttpExceptions(benchmark::State& s) { run(s, wrap<mw::HttpExceptions>(hello())); }
void BM_ServerStatusRecording(benchmark::State& s) {
  static ServerStats stats;
  mw::ServerStatusOptions o;
  o.stats = &stats;
  run(s, wrap<mw::ServerStatus>(hello(), o));
}
void BM_Metrics(benchmark::State& s) { run(s, wrap<mw::Metrics>(hello())); }
void BM_ErrorDocumentPass(benchmark::State& s) {
  mw::ErrorDocumentOptions o;
  o.subrequests[404] = "/404";
  run(s, wrap<mw::ErrorDocument>(hello(), o));
}
void BM_Cascade404Then200(benchmark::State& s) {
  run(s, mw::Cascade{[](Env&) { return Response::error(404); }, hello()});
}
void BM_UrlMap3(benchmark::State& s) {
  run(s, mw::UrlMap{{"/", hello()}, {"/app", hello()}, {"/app/admin", hello()}});
}
void BM_AuthBasicCallback(benchmark::State& s) {
  mw::AuthBasicOptions o;
  o.authenticator = [](std::string_view u, std::string_view p, Env&) { return u == "u" && p == "p"; };
  run(s, wrap<mw::AuthBasic>(hello(), o));
}
void auth_file(benchmark::State& s, const char* flags) {
  TempDir d;
  std::string file = (d.path / "users").string();
  std::string cmd = std::string("htpasswd -cb") + flags + " " + file + " u p 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    s.SkipWithError("htpasswd (apache2-utils) not installed");
    return;
  }
  mw::AuthBasicOptions o;
  o.htpasswd_file = file;
  run(s, wrap<mw::AuthBasic>(hello(), o));
}
void BM_AuthBasicSha1(benchmark::State& s) { auth_file(s, "s"); }
void BM_AuthBasicSha512Crypt(benchmark::State& s) { auth_file(s, "5"); }
void BM_AuthBasicBcrypt5(benchmark::State& s) { auth_file(s, "B -C 5"); }
void BM_CgiBinShell(benchmark::State& s) {
  TempDir d;
  std::ofstream(d.path / "hello.sh") << "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nHello, World!\\n'\n";
  mw::CgiBinOptions o;
  o.root = d.path.string();
  o.async = false;  // run() drains on this thread; a delayed answer would not be waited for
  run(s, mw::CgiBin(o), "/hello.sh");
}
void BM_StackOfSeven(benchmark::State& s) {
  static ServerStats stats;
  mw::ServerStatusOptions st;
  st.stats = &stats;
  mw::ReverseProxyOptions rp;
  rp.trusted = {"127.0.0.0/8", "10.0.0.0/8"};
  mw::AccessOptions ac;
  ac.rules = {mw::AccessRule::deny_from({}, {}, "/admin")};
  mw::ErrorDocumentOptions ed;
  ed.subrequests[404] = "/404";
  App app = wrap<mw::ReverseProxy>(
      wrap<mw::ServerStatus>(
          wrap<mw::RequestId>(wrap<mw::Runtime>(wrap<mw::Access>(
              wrap<mw::HttpExceptions>(wrap<mw::ErrorDocument>(hello(), ed)), ac))),
          st),
      rp);
  run(s, app);
}

}  // namespace

BENCHMARK(BM_Bare);
BENCHMARK(BM_Runtime);
BENCHMARK(BM_RequestIdIncoming);
BENCHMARK(BM_RequestIdGenerated);
BENCHMARK(BM_ReverseProxy);
BENCHMARK(BM_Access3Rules);
BENCHMARK(BM_HttpExceptions);
BENCHMARK(BM_ServerStatusRecording);
BENCHMARK(BM_Metrics);
BENCHMARK(BM_ErrorDocumentPass);
BENCHMARK(BM_Cascade404Then200);
BENCHMARK(BM_UrlMap3);
BENCHMARK(BM_AuthBasicCallback);
BENCHMARK(BM_AuthBasicSha1);
BENCHMARK(BM_AuthBasicSha512Crypt);
BENCHMARK(BM_AuthBasicBcrypt5);
BENCHMARK(BM_CgiBinShell)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StackOfSeven);
BENCHMARK_MAIN();
