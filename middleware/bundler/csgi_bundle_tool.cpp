// csgi-bundle: the bundler middleware driven from the command line, in-process through
// csgi::testing::call (no sockets). Used by the tests (Node corpus checks, the browser test's fallback
// server) and by bench/suites/bundler.sh.
//
//   csgi-bundle [opts] ROOT TARGET...      print each response body (status and headers to stderr)
//   csgi-bundle [opts] --stdio ROOT        serve requests read from stdin, one per line:
//                                            "<target>\t<If-None-Match>\n"   (the tab part optional)
//                                          answered on stdout as
//                                            "<status> <body bytes> <header count>\n" + "Name: value\n"… + body;
//                                          the line "~stats" as "stats builds=N hits=N transpiles=N transpile_hits=N\n"
//   csgi-bundle [opts] --time ROOT TARGET  cold build (construct + first request) and hit timings, in µs
//   csgi-bundle --deps FILE...             the scanner's view of each file, one JSON object per line:
//                                          {"file":…,"deps":[…],"unbundled":N,"esm":bool,"error":…|null}
//                                          (ES modules also: esm_requests, esm_exports, esm_rewrites, esm_body or
//                                          esm_error, shake_units [begin, end, kind, names]; files reading process.env.NODE_ENV also "dead": for each mode,
//                                          the dead ranges [begin, end, form, hoists] and the production text with them
//                                          replaced)
// opts: --mount /prefix (middleware form; default: app form), --freshness inotify|stat|none, --prebuild,
//       --cache-bytes N, --platform browser|node, --builtin NAME=PACKAGE|./FILE|false (repeatable),
//       --mode development|production, --define NAME=EXPR (repeatable), --no-process-shim, --no-tree-shake,
//       --esbuild PROGRAM, --accept-encoding VALUE (sent with every request), --no-compress,
//       --source-maps on|off (default: on in development, off in production)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "csgi/middleware/bundler/detail/dead_code.hpp"
#include "csgi/middleware/bundler/detail/esm_transform.hpp"
#include "csgi/middleware/bundler/detail/tree_shake.hpp"

#include "csgi/core/request_env.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/middleware/bundler/bundler.hpp"
#include "csgi/middleware/bundler/detail/js_scan.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: csgi-bundle [--mount /p] [--freshness inotify|stat|none] [--prebuild] [--cache-bytes N]\n"
               "                   [--platform browser|node] [--builtin NAME=PACKAGE|./FILE|false]...\n"
               "                   [--mode development|production] [--define NAME=EXPR]... [--no-process-shim]\n"
               "                   [--no-tree-shake] [--source-maps on|off]\n"
               "                   [--accept-encoding VALUE] [--no-compress]\n"
               "                   (ROOT TARGET... | --stdio ROOT | --time ROOT TARGET)\n");
  return 2;
}

std::string accept_encoding;  // --accept-encoding

csgi::testing::TestResponse request(const csgi::App& app, const std::string& target, const std::string& inm = {}) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!accept_encoding.empty()) headers.emplace_back("Accept-Encoding", accept_encoding);
  if (!inm.empty()) headers.emplace_back("If-None-Match", inm);
  return csgi::testing::call(app, "GET " + target, headers);
}

// The ES module transform of `src`: its requests, export names, the byte ranges of rewritten references
// to imports, and the module text the loader runs (or the refusal).
void esm_details(const std::string& src, nlohmann::ordered_json& j) {
  std::vector<csgi::mw::bundler::Token> tokens;
  csgi::mw::bundler::ScanOptions o;
  o.tokens = &tokens;
  csgi::mw::bundler::scan(src, o);
  auto m = csgi::mw::bundler::transform_esm(src, tokens);
  if (m.error) {
    j["esm_error"] = *m.error;
    return;
  }
  nlohmann::ordered_json requests = nlohmann::ordered_json::array(), rewrites = nlohmann::ordered_json::array();
  for (const auto& d : m.requests) requests.push_back(d.spec);
  std::string body = m.prefix;
  std::size_t at = 0;
  for (const auto& e : m.edits) {
    if (e.text.starts_with("__csgi_i") || e.text.starts_with("(0, __csgi_i") || e.text.find(": __csgi_i") != std::string::npos)
      rewrites.push_back({e.begin, e.end});
    body.append(src, at, e.begin - at).append(e.text);
    at = e.end;
  }
  body.append(src, at);
  auto meta = nlohmann::ordered_json::parse(m.meta);
  nlohmann::ordered_json names = meta["x"];
  for (const auto& r : meta["r"]) names.push_back(r[0]);
  j["esm_requests"] = std::move(requests);
  j["esm_exports"] = std::move(names);
  j["esm_rewrites"] = std::move(rewrites);
  j["esm_body"] = std::move(body);
  // Tree shaking: the statements that may be left out (no defines: none of the module is dead here).
  if (auto table = csgi::mw::bundler::shake_table(src, tokens, m, {})) {
    nlohmann::ordered_json units = nlohmann::ordered_json::array();
    for (const auto& u : table->units) {
      const char* kind = u.kind == csgi::mw::bundler::ShakeUnit::function ? "function"
                         : u.kind == csgi::mw::bundler::ShakeUnit::klass  ? "class"
                                                                          : "declarators";
      units.push_back({u.begin, u.end, kind, u.names});
    }
    j["shake_units"] = std::move(units);
  }
}

// The ranges process.env.NODE_ENV makes dead in each mode, and the text with the replacements a production
// bundle makes (the dead ranges alone: no defines, comments or ES module transform).
void dead_details(const std::string& src, bool esm, nlohmann::ordered_json& j) {
  namespace b = csgi::mw::bundler;
  std::vector<b::Token> tokens;
  b::ScanOptions o;
  o.chain_roots = {"process"};
  o.tokens = &tokens;
  auto r = b::scan(src, o);
  if (r.error || r.chains.empty()) return;  // no process.env.NODE_ENV: nothing can be dead
  nlohmann::ordered_json dead = nlohmann::ordered_json::object();
  for (const char* mode : {"development", "production"}) {
    auto ranges =
        b::dead_ranges(src, tokens, r.chains, {{"process.env.NODE_ENV", std::string("\"") + mode + "\""}}, esm);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    std::string text;
    std::size_t at = 0;
    for (const auto& d : ranges) {
      const char* form = d.form == b::DeadRange::block       ? "block"
                         : d.form == b::DeadRange::statement ? "statement"
                                                             : "expression";
      list.push_back({d.begin, d.end, form, d.hoists});
      auto with = b::dead_replacement(src, d);
      if (!with || d.begin < at) continue;
      text.append(src, at, d.begin - at).append(*with);
      at = d.end;
    }
    text.append(src, at);
    dead[mode] = {{"ranges", std::move(list)}};
    if (at > 0) dead[mode]["text"] = std::move(text);  // only where something was replaced
  }
  j["dead"] = std::move(dead);
}

int print_deps(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto r = csgi::mw::bundler::scan(src);
    nlohmann::ordered_json deps = nlohmann::ordered_json::array();
    for (const auto& d : r.deps) deps.push_back(d.spec);
    nlohmann::ordered_json j = {{"file", f},
                                {"deps", std::move(deps)},
                                {"unbundled", r.unbundled.size()},
                                {"esm", static_cast<bool>(r.esm_line)},
                                {"error", r.error ? nlohmann::ordered_json(*r.error) : nullptr}};
    if (r.esm_line && !r.error) esm_details(src, j);
    if (!r.error) dead_details(src, static_cast<bool>(r.esm_line), j);
    std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return 0;
}

double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  csgi::mw::BundlerOptions opt;
  bool middleware = false, stdio = false, timing = false, deps = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mount" && i + 1 < argc) {
      opt.mount = argv[++i];
      middleware = true;
    } else if (a == "--freshness" && i + 1 < argc) {
      std::string f = argv[++i];
      if (f == "inotify") opt.freshness = csgi::mw::BundlerOptions::Freshness::inotify;
      else if (f == "stat") opt.freshness = csgi::mw::BundlerOptions::Freshness::stat;
      else if (f == "none") opt.freshness = csgi::mw::BundlerOptions::Freshness::none;
      else return usage();
    } else if (a == "--platform" && i + 1 < argc) {
      std::string p = argv[++i];
      if (p == "browser") opt.platform = csgi::mw::BundlerOptions::Platform::browser;
      else if (p == "node") opt.platform = csgi::mw::BundlerOptions::Platform::node;
      else return usage();
    } else if (a == "--builtin" && i + 1 < argc) {
      std::string m = argv[++i];
      auto eq = m.find('=');
      if (eq == std::string::npos || eq == 0) return usage();
      std::string to = m.substr(eq + 1);
      opt.builtins[m.substr(0, eq)] = to == "false" ? std::string() : to;
    } else if (a == "--mode" && i + 1 < argc) {
      std::string m = argv[++i];
      if (m == "development") opt.mode = csgi::mw::BundlerOptions::Mode::development;
      else if (m == "production") opt.mode = csgi::mw::BundlerOptions::Mode::production;
      else return usage();
    } else if (a == "--define" && i + 1 < argc) {
      std::string m = argv[++i];
      auto eq = m.find('=');
      if (eq == std::string::npos || eq == 0) return usage();
      opt.defines[m.substr(0, eq)] = m.substr(eq + 1);
    } else if (a == "--accept-encoding" && i + 1 < argc) {
      accept_encoding = argv[++i];
    } else if (a == "--no-compress") {
      opt.compress = false;
    } else if (a == "--source-maps" && i + 1 < argc) {
      std::string m = argv[++i];
      if (m == "on") opt.source_maps = true;
      else if (m == "off") opt.source_maps = false;
      else return usage();
    } else if (a == "--no-tree-shake") {
      opt.tree_shake = false;
    } else if (a == "--esbuild" && i + 1 < argc) {
      opt.esbuild = argv[++i];
    } else if (a == "--no-process-shim") {
      opt.process_shim = false;
    } else if (a == "--prebuild") {
      opt.prebuild = true;
    } else if (a == "--cache-bytes" && i + 1 < argc) {
      opt.cache_bytes = std::stoull(argv[++i]);
    } else if (a == "--stdio") {
      stdio = true;
    } else if (a == "--time") {
      timing = true;
    } else if (a == "--deps") {
      deps = true;
    } else if (a.starts_with("--")) {
      return usage();
    } else {
      args.push_back(a);
    }
  }
  if (deps) return print_deps(args);
  if (args.empty() || (!stdio && args.size() < 2)) return usage();

  try {
    auto t0 = std::chrono::steady_clock::now();
    auto b = middleware ? std::make_shared<csgi::mw::Bundler>([](csgi::Env&) { return csgi::Response::error(404); },
                                                               args[0], opt)
                        : std::make_shared<csgi::mw::Bundler>(args[0], opt);
    csgi::App app = [b](csgi::Env& env) { return (*b)(env); };

    if (timing) {
      auto res = request(app, args[1]);
      double cold = micros_since(t0);
      if (res.status != 200) {
        std::fprintf(stderr, "status %d\n%s\n", res.status, res.body.c_str());
        return 1;
      }
      // Hits: the whole request path (freshness check, cache lookup, headers) per call, in-process, with
      // the env built as an adapter builds it and the shared body not copied.
      const int n = 20000;
      csgi::Env env;
      csgi::RequestHead head{"GET", args[1]};
      csgi::ConnectionInfo conn;
      std::size_t shared = 0;
      auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        env.clear();
        csgi::populate_env(env, head, conn);
        csgi::Response r = app(env);
        shared += std::holds_alternative<csgi::SharedBytes>(r.body);
      }
      double hit = micros_since(t1) / n;
      if (shared != std::size_t(n)) std::fprintf(stderr, "warning: %zu of %d hits were not shared bytes\n", n - shared, n);
      std::printf("cold_us %.0f\nhit_us %.2f\nbytes %zu\nmodules %s\n", cold, hit, res.body.size(),
                  res.header("X-Bundle-Modules").c_str());
      return 0;
    }

    if (stdio) {
      std::string line;
      while (std::getline(std::cin, line)) {
        if (line == "~stats") {
          auto st = b->stats();
          std::cout << "stats builds=" << st.builds << " hits=" << st.hits << " transpiles=" << st.transpiles
                    << " transpile_hits=" << st.transpile_hits << '\n' << std::flush;
          continue;
        }
        std::string target = line, inm;
        if (auto tab = line.find('\t'); tab != std::string::npos) {
          target = line.substr(0, tab);
          inm = line.substr(tab + 1);
        }
        csgi::testing::TestResponse res;
        try {
          res = request(app, target, inm);
        } catch (const std::exception& e) {
          res = {};
          res.status = 500;
          res.body = std::string("500 Internal Server Error\n") + e.what() + "\n";
        }
        std::cout << res.status << ' ' << res.body.size() << ' ' << res.headers.size() << '\n';
        for (auto& h : res.headers) std::cout << h.name << ": " << h.value << '\n';
        std::cout << res.body;
        std::cout.flush();
      }
      return 0;
    }

    int rc = 0;
    for (std::size_t i = 1; i < args.size(); ++i) {
      auto res = request(app, args[i]);
      std::fprintf(stderr, "%s -> %d\n", args[i].c_str(), res.status);
      for (auto& h : res.headers) std::fprintf(stderr, "  %s: %s\n", h.name.c_str(), h.value.c_str());
      std::fwrite(res.body.data(), 1, res.body.size(), stdout);
      if (res.status >= 400) rc = 1;
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csgi-bundle: %s\n", e.what());
    return 1;
  }
}
