#include "csgi/middleware/bundler/bundler.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <map>
#include <cstdio>
#include <random>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "csgi/core/keys.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/middleware/bundler/detail/compress.hpp"
#include "csgi/middleware/bundler/detail/css.hpp"
#include "csgi/middleware/bundler/detail/live_reload.hpp"
#include "csgi/middleware/bundler/detail/module_graph.hpp"
#include "csgi/middleware/bundler/detail/shake_plan.hpp"
#include "csgi/middleware/bundler/detail/source_map.hpp"
#include "csgi/middleware/static.hpp"

namespace csgi::mw {

namespace bundler {
std::string_view loader_text() noexcept;  // generated from require.js (loader_js.cpp)
std::string_view live_text() noexcept;    // generated from live.js: follows <mount>/~live
}

namespace {

using bundler::Closure;
using bundler::Coding;
using bundler::Graph;
using bundler::GraphError;
using bundler::Module;
using bundler::Resolved;
using bundler::Stamp;

std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
std::string hex(std::uint64_t v, int digits = 16) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf + 16 - digits);
}

/// Appends `s` as a double-quoted JavaScript string literal: quotes, backslashes, control characters and
/// the line terminators U+2028/U+2029 escaped; other bytes copied as they are.
void append_js_string(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t run = 0;
  auto flush = [&](std::size_t i) {
    out.append(s.data() + run, i - run);
    run = i + 1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f && c != 0xE2) continue;
    switch (c) {
      case '"': flush(i); out.append("\\\""); break;
      case '\\': flush(i); out.append("\\\\"); break;
      case '\n': flush(i); out.append("\\n"); break;
      case '\r': flush(i); out.append("\\r"); break;
      case '\t': flush(i); out.append("\\t"); break;
      case 0xE2:
        if (i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
            (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
          flush(i);
          out.append(static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029");
          run = i + 3;
          i += 2;
        }
        break;
      default: {
        flush(i);
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out.append(buf);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

using bundler::base64url_value;

bool etag_matches(std::string_view header, std::string_view etag) {
  std::string_view bare = etag;
  while (!header.empty()) {
    auto comma = header.find(',');
    std::string_view t = header.substr(0, comma);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (t.starts_with("W/")) t.remove_prefix(2);
    if (t == "*" || t == bare) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

bool dotted_name(std::string_view k) {
  if (k.empty() || k.front() == '.' || k.back() == '.' || k.find("..") != std::string_view::npos) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.')) return false;
  return !std::isdigit(static_cast<unsigned char>(k.front()));
}

/// The defines in force: process.env.NODE_ENV by mode, then the user's (checked: dotted names, one-line
/// values).
std::map<std::string, std::string, std::less<>> defines_of(const BundlerOptions& o) {
  std::map<std::string, std::string, std::less<>> d;
  d["process.env.NODE_ENV"] = o.mode == BundlerOptions::Mode::production ? "\"production\"" : "\"development\"";
  for (const auto& [k, v] : o.defines) {
    if (!dotted_name(k)) throw std::invalid_argument("bundler: define name is not a dotted identifier: " + k);
    if (v.empty() || v.find_first_of("\r\n") != std::string::npos || v.find("\xE2\x80\xA8") != std::string::npos ||
        v.find("\xE2\x80\xA9") != std::string::npos)
      throw std::invalid_argument("bundler: define value for " + k + " must be one non-empty line");
    d[k] = v;
  }
  return d;
}

std::vector<std::string> roots_of(const std::map<std::string, std::string, std::less<>>& defines) {
  std::vector<std::string> roots;
  for (const auto& [k, v] : defines) {
    std::string r = k.substr(0, k.find('.'));
    if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  }
  return roots;
}

/// The replacements for defines: each chain's longest defined prefix by its value, plus as many newlines
/// as the replaced text held (so every later line keeps its number).
std::vector<bundler::EsmEdit> define_edits(std::string_view src, const std::vector<bundler::MemberChain>& chains,
                                           const std::map<std::string, std::string, std::less<>>& defines) {
  std::vector<bundler::EsmEdit> edits;
  for (const auto& c : chains) {
    for (std::size_t n = c.ends.size(); n > 0; --n) {
      std::size_t cut = 0;
      for (std::size_t i = 0; i < n; ++i) cut = c.path.find('.', cut + (i ? 1 : 0));
      std::string_view name = std::string_view(c.path).substr(0, n == c.ends.size() ? c.path.size() : cut);
      auto it = defines.find(name);
      if (it == defines.end()) continue;
      std::string_view replaced = src.substr(c.begin, c.ends[n - 1] - c.begin);
      edits.push_back({std::uint32_t(c.begin), std::uint32_t(c.ends[n - 1]),
                       it->second + std::string(std::size_t(std::count(replaced.begin(), replaced.end(), '\n')), '\n')});
      break;
    }
  }
  return edits;
}

/// The comments to leave out (production): each stretch of comments becomes its line breaks, or one
/// space, so every line keeps its number. Kept: a legal comment (`/*!`, `@license`, `@preserve`), a
/// stretch holding a line terminator other than \n (\r alone, U+2028/U+2029), and a leading `#!` line.
void comment_edits(std::string_view src, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& comments,
                   std::vector<bundler::EsmEdit>& edits) {
  for (auto [b, e] : comments) {
    if (e > src.size()) break;
    std::string_view gap = src.substr(b, e - b);
    if (gap.find("/*!") != std::string_view::npos || gap.find("@license") != std::string_view::npos ||
        gap.find("@preserve") != std::string_view::npos || gap.find("\xE2\x80\xA8") != std::string_view::npos ||
        gap.find("\xE2\x80\xA9") != std::string_view::npos || (b == 0 && gap.starts_with("#!")))
      continue;
    std::string text;
    bool lone_cr = false;
    for (std::size_t i = 0; i < gap.size(); ++i) {
      if (gap[i] == '\n') text.push_back('\n');
      if (gap[i] == '\r' && (i + 1 == gap.size() || gap[i + 1] != '\n')) lone_cr = true;
    }
    if (lone_cr) continue;
    if (text.empty()) text = " ";
    edits.push_back({b, e, std::move(text)});
  }
}

/// The replacements of the dead ranges (production), put before `edits` (sorted by begin), whose edits
/// inside a replaced range then go. A range that another edit straddles stays as it is.
void dead_edits(std::string_view src, const std::vector<bundler::DeadRange>& dead,
                std::vector<bundler::EsmEdit>& edits) {
  std::vector<std::uint32_t> reach(edits.size());  // the furthest end of edits [0, i]
  for (std::size_t i = 0; i < edits.size(); ++i) reach[i] = std::max(edits[i].end, i ? reach[i - 1] : 0u);
  std::vector<bundler::EsmEdit> out;
  for (const auto& d : dead) {
    auto first = std::lower_bound(edits.begin(), edits.end(), d.begin,
                                  [](const bundler::EsmEdit& e, std::uint32_t at) { return e.begin < at; });
    if (first != edits.begin() && reach[std::size_t(first - edits.begin()) - 1] > d.begin) continue;
    bool straddled = false;
    for (auto e = first; e != edits.end() && e->begin < d.end && !straddled; ++e) straddled = e->end > d.end;
    if (straddled) continue;
    if (auto text = bundler::dead_replacement(src, d)) out.push_back({d.begin, d.end, std::move(*text)});
  }
  edits.insert(edits.begin(), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
}

/// The edits that make a module's text: the define replacements, the comment removals and dead code
/// replacements (`comments` and `dead`: production), an ES module's transform, and the placeholders of
/// the units left out (`left_out`, tree shaking), sorted by where they begin; an edit inside a range an
/// earlier edit rewrites is dropped when they are applied.
std::vector<bundler::EsmEdit> module_edits(std::string_view src, const std::vector<bundler::MemberChain>& chains,
                                           const std::map<std::string, std::string, std::less<>>& defines,
                                           const bundler::EsmModule* esm,
                                           const std::vector<std::pair<std::uint32_t, std::uint32_t>>* comments,
                                           const std::vector<bundler::DeadRange>* dead,
                                           const std::vector<const bundler::ShakeUnit*>& left_out = {}) {
  std::vector<bundler::EsmEdit> edits = define_edits(src, chains, defines);
  if (esm) edits.insert(edits.end(), esm->edits.begin(), esm->edits.end());
  if (comments) comment_edits(src, *comments, edits);
  const bool sort = esm || comments || (dead && !dead->empty());
  auto by_begin = [](const auto& a, const auto& b) { return a.begin < b.begin; };
  if (sort) std::stable_sort(edits.begin(), edits.end(), by_begin);
  if (dead && !dead->empty()) {
    dead_edits(src, *dead, edits);
    std::stable_sort(edits.begin(), edits.end(), by_begin);  // a replaced range before the edits it holds
  }
  if (!left_out.empty()) {
    std::vector<bundler::EsmEdit> holders;
    for (const auto* u : left_out) holders.push_back({u->begin, u->end, bundler::unit_placeholder(*u, src)});
    edits.insert(edits.begin(), std::make_move_iterator(holders.begin()), std::make_move_iterator(holders.end()));
    std::stable_sort(edits.begin(), edits.end(), by_begin);
  }
  return edits;
}

/// Appends src[from, to) with the edits inside that range applied.
void apply_edits(std::string& out, std::string_view src, const std::vector<bundler::EsmEdit>& edits,
                 std::size_t from = 0, std::size_t to = std::string_view::npos) {
  to = std::min(to, src.size());
  std::size_t at = from;
  auto first = std::lower_bound(edits.begin(), edits.end(), from,
                                [](const bundler::EsmEdit& e, std::size_t x) { return e.begin < x; });
  for (auto e = first; e != edits.end() && e->begin < to; ++e) {
    if (e->begin < at) continue;
    if (e->end > to) break;  // (the file changed since it was scanned: this answer is stale anyway)
    out.append(src.substr(at, e->begin - at)).append(e->text);
    at = e->end;
  }
  out.append(src.substr(at, to - at));
}

/// Appends `src` as the bundle sends it (module_edits), with an ES module's prefix in front.
void append_module(std::string& out, std::string_view src, const std::vector<bundler::MemberChain>& chains,
                   const std::map<std::string, std::string, std::less<>>& defines, const bundler::EsmModule* esm,
                   const std::vector<std::pair<std::uint32_t, std::uint32_t>>* comments,
                   const std::vector<bundler::DeadRange>* dead) {
  if (esm) out.append(esm->prefix);
  apply_edits(out, src, module_edits(src, chains, defines, esm, comments, dead));
}

bool exports_by_name(const bundler::EsmModule& esm, const std::string& name) {
  return std::find(esm.local_names.begin(), esm.local_names.end(), name) != esm.local_names.end() ||
         std::any_of(esm.reexports.begin(), esm.reexports.end(), [&](const auto& r) { return r[0] == name; });
}

/// Appends an ES module's table for the loader: the transform's, plus the link checks ("i": [request
/// index, name]) the loader has to make. Left out are those that cannot fail: a name the imported ES
/// module exports by name (its own or passed on), a name taken from a barrel view (it holds just the
/// names imported) and a name from a module that is not an ES module (the loader checks none there).
void append_esm_table(std::string& body, Graph& graph, const Module& m, const Closure& c) {
  const bundler::EsmModule& esm = *m.esm;
  body.append(esm.meta, 0, esm.meta.size() - 1);  // without its closing brace
  body += ",\"i\":[";
  bool first = true;
  for (const auto& [spec, name] : esm.imported) {
    std::size_t k = 0;
    while (k < m.edges.size() && m.edges[k].spec != spec) ++k;
    if (k == m.edges.size() || c.views.count({m.id, k})) continue;
    if (m.edges[k].status == Resolved::ok) {
      const Module& d = graph.at(m.edges[k].target);
      if (!d.esm || exports_by_name(*d.esm, name)) continue;
    }
    body += first ? "[" : ",[";
    first = false;
    body += std::to_string(k) + ',';
    append_js_string(body, name);
    body += ']';
  }
  body += "]}";
}

Response js_response(int status, std::string body) {
  Response r;
  r.status = status;
  r.headers.add("Content-Type", "application/javascript; charset=utf-8");
  r.headers.add("Cache-Control", "no-store");
  r.body = std::move(body);
  return r;
}

}  // namespace

class Bundler::Impl {
public:
  Impl(std::string root, BundlerOptions o)
      : opt(std::move(o)),
        graph(root, opt.freshness == BundlerOptions::Freshness::inotify,
              bundler::ResolverOptions{opt.platform == BundlerOptions::Platform::node ? bundler::Platform::node
                                                                                      : bundler::Platform::browser,
                                       opt.builtins},
              bundler::ScanOptions{roots_of(defines_of(opt)), nullptr, opt.mode == BundlerOptions::Mode::production},
              defines_of(opt), opt.mode == BundlerOptions::Mode::production && opt.tree_shake, opt.esbuild),
        defines(defines_of(opt)),
        assets(asset_options(graph.abs(""))) {
    if (opt.freshness == BundlerOptions::Freshness::inotify && !graph.watcher())
      throw std::runtime_error("bundler: inotify is not available; use Freshness::stat or none");
    if (opt.live_reload && opt.freshness != BundlerOptions::Freshness::inotify)
      throw std::invalid_argument("bundler: live_reload needs Freshness::inotify (its events feed the channel)");
    if (opt.live_reload) live = std::make_shared<bundler::LiveHub>();
    if (auto* w = graph.watcher()) {
      w->on_change([this] {
        graph.invalidate();
        ++invalidations;
        auto changed = graph.watcher()->take_changed();
        if (!live) return;
        if (auto css = stylesheets_only(changed)) live->broadcast_css(*css);
        else live->broadcast();
      });
      if (live) w->on_tick(opt.live_reload_keepalive, [hub = live] { hub->keep_alive(); });
    }
    if (opt.prebuild) {
      std::lock_guard lock(graph.mu);
      epoch = hex(graph.prebuild(stderr_stream()), 12);
    } else {
      std::random_device rd;
      std::uint64_t r = (std::uint64_t(rd()) << 32) ^ rd() ^
                        std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
      epoch = hex(r, 12);
    }
    if (opt.gzip_level < 1 || opt.gzip_level > 9) throw std::invalid_argument("bundler: gzip_level must be 1..9");
    if (opt.brotli_quality < 0 || opt.brotli_quality > 11)
      throw std::invalid_argument("bundler: brotli_quality must be 0..11");
    std::string l(bundler::loader_text());
    if (opt.live_reload) l += bundler::live_text();  // the page follows <mount>/~live
    loader_hash = hex(fnv1a(l), 16);
    loader = std::make_shared<Entry>();
    loader->body = std::make_shared<const std::string>(std::move(l));
    loader->etag = "\"" + loader_hash + "\"";
  }

  ~Impl() {
    if (auto* w = graph.watcher()) w->stop();
  }

  struct Entry {
    SharedBytes body;
    std::string etag;
    std::uint64_t gen = 0;
    std::size_t modules = 0;
    std::size_t parts = 0;     // rows adding units to modules the page holds
    std::size_t left_out = 0;  // units the new modules go without
    std::string unbundled;
    struct Check {
      std::string path;
      Stamp stamp;
      std::int64_t since;  // when what the stamp vouches for was read (see bundler::racy)
    };
    std::vector<Check> stamps;  // stat mode: files and directories to re-check
    std::atomic<std::uint64_t> last_used{0};
    // The gzip and brotli forms, each made once, on first demand (coded_body()).
    std::string key;  // the cache key ("" for the loader)
    std::once_flag once[2];
    SharedBytes coded[2];
    std::size_t coded_bytes = 0;  // counted in cached_bytes while cached (guarded by cmu)
    std::size_t bytes() const { return body->size() + key.size() + coded_bytes; }
  };

  static std::string etag_for(const std::string& etag, Coding c) {
    if (c == Coding::identity) return etag;
    std::string e = etag;
    e.insert(e.size() - 1, "-" + std::string(bundler::coding_name(c)));
    return e;
  }

  SharedBytes coded_body(Entry& en, Coding c) {
    int i = c == Coding::gzip ? 0 : 1;
    std::call_once(en.once[i], [&] {
      auto data = std::make_shared<const std::string>(c == Coding::gzip ? bundler::gzip(*en.body, opt.gzip_level)
                                                                        : bundler::brotli(*en.body, opt.brotli_quality));
      ++compressions;
      std::unique_lock lock(cmu);
      en.coded[i] = data;
      auto it = en.key.empty() ? cache.end() : cache.find(en.key);
      if (it != cache.end() && it->second.get() == &en) {
        en.coded_bytes += data->size();
        cached_bytes += data->size();
      }
    });
    return en.coded[i];
  }

  // Module ids are numbered per process in discovery order, so a process forked from this one (a
  // prefork worker) takes an epoch of its own: a loaded set made from another worker's ids is then
  // ignored rather than read against this table. Answers cached before the fork carry the old epoch
  // and go. (Prebuild numbers every file alike in all processes and keeps its epoch.) Runs first in
  // every request: other threads read `epoch` only after seeing the new generation (acquire).
  void own_epoch() {
    unsigned g = bundler::fork_generation();
    if (opt.prebuild || epoch_generation.load(std::memory_order_acquire) == g) return;
    std::lock_guard lock(epoch_mu);
    if (epoch_generation.load(std::memory_order_relaxed) == g) return;
    std::lock_guard glock(graph.mu);
    epoch = hex(fnv1a(epoch + ":" + std::to_string(::getpid()) + ":" + std::to_string(g)), 12);
    {
      std::unique_lock clock(cmu);
      cache.clear();
      cached_bytes = 0;
    }
    epoch_generation.store(g, std::memory_order_release);
  }

  Response handle(Env& env, std::string_view sub) {
    own_epoch();
    if (auto* w = graph.watcher()) w->ensure_running();
    ++requests;
    std::string_view method = env.get(keys::REQUEST_METHOD);
    if (method != "GET" && method != "HEAD") {
      Response r = Response::error(405);
      r.headers.set("Allow", "GET, HEAD");
      return r;
    }
    if (sub == "/require.js") return serve_loader(env);
    if (sub == "/~live") return serve_live();
    if (sub.starts_with("/~css/")) return serve_css(env, sub);
    if (sub.starts_with("/~asset/")) return serve_asset(env, sub);
    if (sub.starts_with("/~map/") && maps) return serve_map(env, sub);
    if (sub.empty() || sub == "/") return Response::error(404, "name a module: <mount>/<path> or <mount>/~/<package>");

    // Paths leaving the root, however they are spelled.
    if (bad_path(sub)) return fail(403, std::string(sub.substr(1)), "path is outside the bundle root", {});

    // Query: e=<epoch>&have=<bitset>
    std::string_view qs = env.get(keys::QUERY_STRING);
    std::string_view e, have, parts;
    while (!qs.empty()) {
      auto amp = qs.find('&');
      std::string_view kv = qs.substr(0, amp);
      auto eq = kv.find('=');
      std::string_view k = kv.substr(0, eq), v = eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1);
      if (k == "e") e = v;
      else if (k == "have") have = v;
      else if (k == "p") parts = v;
      if (amp == std::string_view::npos) break;
      qs.remove_prefix(amp + 1);
    }
    if (have.size() > (std::size_t{1} << 20)) return Response::error(400, "have: longer than any module table");
    for (char c : have)
      if (base64url_value(c) < 0) return Response::error(400, "have: not a base64url bitset");
    if (parts.size() > (std::size_t{1} << 20)) return Response::error(400, "p: longer than any module table");
    for (char c : parts)
      if (base64url_value(c) < 0 && c != '.' && c != ',') return Response::error(400, "p: not a list of id.units");
    bool epoch_ok = e == epoch;
    while (!have.empty() && have.back() == 'A') have.remove_suffix(1);
    if (!epoch_ok) have = parts = {};

    // A bundle does not depend on where the bundler is mounted (the loader names the paths): one entry
    // serves every mount.
    std::string key;
    key.reserve(sub.size() + have.size() + 1);
    key.append(sub).push_back('\n');
    key.append(have);
    if (!parts.empty()) key.append("\np=").append(parts);

    std::shared_ptr<Entry> hit = lookup(key);
    if (!hit) {
      std::lock_guard lock(graph.mu);
      hit = lookup(key);
      if (!hit) {
        std::string spec = sub.starts_with("/~/") ? std::string(sub.substr(3)) : std::string(sub);
        std::variant<std::shared_ptr<Entry>, Response> built = build(env, spec, have, parts);
        if (auto* r = std::get_if<Response>(&built)) return std::move(*r);
        hit = std::get<std::shared_ptr<Entry>>(built);
        store(key, hit);
      } else {
        ++hits;
      }
    } else {
      ++hits;
    }
    return answer(env, *hit, opt.cache_control, true);
  }

  /// The entry in the coding the client prefers, with its own ETag; 304 when that ETag matches.
  Response answer(Env& env, Entry& en, const std::string& cache_control, bool debug) {
    Coding c = opt.compress ? bundler::choose_coding(env.get(keys::HTTP_ACCEPT_ENCODING)) : Coding::identity;
    std::string etag = etag_for(en.etag, c);
    Response r;
    if (auto inm = env.get(keys::HTTP_IF_NONE_MATCH); !inm.empty() && etag_matches(inm, etag)) {
      r.status = 304;
      r.headers.add("ETag", etag);
      r.headers.add("Cache-Control", cache_control);
      if (opt.compress) r.headers.add("Vary", "Accept-Encoding");
      r.body = std::string();
      return r;
    }
    r.headers.add("Content-Type", "application/javascript; charset=utf-8");
    if (c != Coding::identity) r.headers.add("Content-Encoding", std::string(bundler::coding_name(c)));
    r.headers.add("ETag", etag);
    r.headers.add("Cache-Control", cache_control);
    if (opt.compress) r.headers.add("Vary", "Accept-Encoding");
    if (debug && opt.debug_headers) {
      r.headers.add("X-Bundle-Modules", std::to_string(en.modules));
      if (en.left_out || en.parts)
        r.headers.add("X-Bundle-Shaken", std::to_string(en.left_out) + " left out, " + std::to_string(en.parts) +
                                             " modules completed");
      if (!en.unbundled.empty()) r.headers.add("X-Bundle-Unbundled", en.unbundled);
    }
    r.body = c == Coding::identity ? en.body : coded_body(en, c);
    return r;
  }

  // The live-reload stream: Server-Sent Events, one `change` per batch of inotify events in this
  // process. The tree outside node_modules/ is watched first, as this process may have built nothing.
  Response serve_live() {
    if (!live) return Response::error(404, "live reload is off (BundlerOptions::live_reload)");
    if (auto* w = graph.watcher()) bundler::watch_tree(*w, graph.abs(""));
    return Response::delayed([hub = live](Responder r) {
      Headers h{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
      hub->add(r.start(200, std::move(h)));
    });
  }

  static StaticOptions asset_options(std::string root) {
    StaticOptions o;
    o.root = std::move(root);
    o.cache = false;
    return o;
  }

  // The mount's URL path: SCRIPT_NAME and the part of PATH_INFO before `sub` (a view into it).
  static std::string mount_url(Env& env, std::string_view sub) {
    std::string_view info = env.get(keys::PATH_INFO);
    std::string base(env.get(keys::SCRIPT_NAME));
    base.append(info.substr(0, info.size() - sub.size()));
    return percent_encode(base, uri::path);
  }

  // A stylesheet's text, for the live-reload follower to swap in place: <mount>/~css/<path>.
  Response serve_css(Env& env, std::string_view sub) {
    std::string_view path = sub.substr(5);
    if (bad_path(path)) return Response::error(403, "path is outside the bundle root");
    bundler::Resolved r;
    {
      std::lock_guard lock(graph.mu);
      r = graph.resolver().real(std::string(path.substr(1)));
    }
    if (r.status == bundler::Resolved::forbidden) return Response::error(403, r.detail);
    if (r.status != bundler::Resolved::ok || !r.path.ends_with(".css"))
      return Response::error(404, "no stylesheet " + std::string(path.substr(1)));
    std::string error;
    SharedBytes css;
    {
      std::lock_guard lock(graph.mu);
      css = graph.stylesheet(r.path, error);
    }
    if (!css) return Response::error(422, error);
    Response res;
    res.status = 200;
    res.headers.add("Content-Type", "text/css; charset=utf-8");
    res.headers.add("Cache-Control", "no-store");
    std::string text = bundler::css_imports(*css, r.path).css;
    if (bundler::is_css_module(r.path)) {
      bundler::ScopedCss scoped = bundler::scope_css(text, r.path);
      res.headers.add("X-Bundle-Css-Names", bundler::css_names(scoped.names));
      text = std::move(scoped.css);
    }
    res.body = bundler::split_urls(text, r.path).join(mount_url(env, sub));
    return res;
  }

  // The source map of the text a bundle sends for a module: <mount>/~map/<path>?c=<column of its first
  // line in the script the loader evaluates>. Its own edits, composed with esbuild's map for TypeScript
  // and JSX; the source is named csgi:///<path> and carried whole (sourcesContent).
  Response serve_map(Env& env, std::string_view sub) {
    std::string_view path = sub.substr(5);
    if (bad_path(path)) return Response::error(403, "path is outside the bundle root");
    std::uint32_t column = 0;
    std::string_view qs = env.get(keys::QUERY_STRING);
    if (qs.starts_with("c=")) {
      auto [end, ec] = std::from_chars(qs.data() + 2, qs.data() + qs.size(), column);
      if (ec != std::errc() || end != qs.data() + qs.size() || column > 100000)
        return Response::error(400, "c: not a column number");
    } else if (!qs.empty()) {
      return Response::error(400, "the query is c=<column>");
    }
    const bool production = opt.mode == BundlerOptions::Mode::production;
    std::string json;
    {
      std::lock_guard lock(graph.mu);
      Resolved r = graph.resolver().real(std::string(path.substr(1)));
      if (r.status == Resolved::forbidden) return Response::error(403, r.detail);
      const std::string_view loader = r.status == Resolved::ok ? bundler::esbuild_loader(r.path) : "";
      if (r.status != Resolved::ok || r.empty || loader == "css" || r.path.ends_with(".json"))
        return Response::error(404, "no module source " + std::string(path.substr(1)));
      Module& m = graph.at(graph.intern(r));
      if (!graph.refresh(m)) return Response::error(422, m.error.value_or("cannot read " + m.path));
      SharedBytes src = graph.source(m);
      if (!src || m.json) return Response::error(404, "no module source " + m.path);
      auto edits = module_edits(*src, m.chains, defines, m.esm ? &*m.esm : nullptr, production ? &m.comments : nullptr,
                                production ? &m.dead : nullptr);
      auto mappings = bundler::edit_mappings(*src, edits, m.esm ? std::string_view(m.esm->prefix) : "", column);
      std::string original;
      if (!loader.empty()) {
        bundler::TranspileResult t = graph.transpiled(m.path, original);
        auto inner = t.map ? bundler::mappings_of(*t.map) : std::nullopt;
        if (!inner) return Response::error(422, "no source map from esbuild for " + m.path);
        mappings = bundler::compose(mappings, *inner);
      }
      json = bundler::map_json(mappings, "csgi:///" + m.path, loader.empty() ? std::string_view(*src) : original);
    }
    Response res;
    res.status = 200;
    res.headers.add("Content-Type", "application/json");
    res.headers.add("Cache-Control", "no-store");
    res.body = std::move(json);
    return res;
  }

  // A file a stylesheet's url() names: <mount>/~asset/<path>, served by Static (conditional GET, ranges)
  // when its media type is an image, font, audio or video one. Never sniffed; an SVG opened as a
  // document runs no script and loads nothing (its own inline styles aside), though it is same-origin.
  Response serve_asset(Env& env, std::string_view sub) {
    std::string path(sub.substr(7));  // a copy: `sub` views PATH_INFO, which is set below
    const auto mime = MimeTypes::system();
    std::string_view type = mime->lookup(path, "");
    if (!(type.starts_with("image/") || type.starts_with("font/") || type.starts_with("audio/") ||
          type.starts_with("video/") || type == "application/vnd.ms-fontobject"))
      return Response::error(404, "not a stylesheet asset (image, font, audio or video): " + path.substr(1));
    std::string script(env.get(keys::SCRIPT_NAME)), info(env.get(keys::PATH_INFO));
    struct Restore {
      Env& env;
      std::string& script;
      std::string& info;
      ~Restore() {
        env.set(keys::SCRIPT_NAME, script);
        env.set(keys::PATH_INFO, info);
      }
    } restore{env, script, info};
    std::string_view mount = std::string_view(info).substr(0, info.size() - sub.size());
    env.set(keys::SCRIPT_NAME, script + std::string(mount) + "/~asset");
    env.set(keys::PATH_INFO, std::move(path));
    Response res = assets(env);
    res.headers.add("X-Content-Type-Options", "nosniff");
    if (type == "image/svg+xml") res.headers.add("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
    return res;
  }

  // The changed files when every one is a stylesheet the loader can swap in place (root-relative,
  // deduplicated); nullopt when the page must reload.
  std::optional<std::vector<std::string>> stylesheets_only(const std::optional<std::vector<std::string>>& changed) const {
    if (!changed || changed->empty()) return std::nullopt;
    const std::string prefix = graph.abs("") + "/";
    std::vector<std::string> out;
    for (const auto& a : *changed) {
      if (!a.starts_with(prefix) || !a.ends_with(".css")) return std::nullopt;
      std::string rel = a.substr(prefix.size());
      if (std::find(out.begin(), out.end(), rel) == out.end()) out.push_back(std::move(rel));
    }
    return out;
  }

  Response serve_loader(Env& env) {
    bool versioned = env.get(keys::QUERY_STRING) == "v=" + loader_hash;
    return answer(env, *loader, versioned ? "public, max-age=31536000, immutable" : "no-cache", false);
  }

  static bool bad_path(std::string_view p) {
    if (p.find('\\') != std::string_view::npos || p.find('\0') != std::string_view::npos) return true;
    // Encoded forms that survived one decoding (%2e%2e, %2f, %5c, %25…): never a real module name here.
    for (std::size_t i = 0; i + 2 < p.size(); ++i) {
      if (p[i] != '%') continue;
      char a = p[i + 1], b = char(p[i + 2] | 0x20);
      if ((a == '2' && (b == 'e' || b == 'f' || b == '5')) || (a == '5' && b == 'c') || (a == '0' && b == '0'))
        return true;
    }
    std::string out;
    std::string_view rel = p.starts_with("/~/") ? p.substr(3) : p.substr(1);
    if (p.starts_with("/~/")) {
      // A package path may not climb at all.
      for (std::size_t i = 0; i <= rel.size();) {
        auto j = rel.find('/', i);
        if (j == std::string_view::npos) j = rel.size();
        if (rel.substr(i, j - i) == "..") return true;
        i = j + 1;
      }
      return false;
    }
    return !bundler::Resolver::join("", rel, out);
  }


  std::shared_ptr<Entry> lookup(const std::string& key) {
    std::shared_ptr<Entry> en;
    {
      std::shared_lock lock(cmu);
      auto it = cache.find(key);
      if (it == cache.end()) return nullptr;
      en = it->second;
    }
    if (en->gen != graph.generation()) return nullptr;
    if (opt.freshness == BundlerOptions::Freshness::stat) {
      for (auto& [path, st, since] : en->stamps) {
        if (!(bundler::stamp_of(path) == st) || bundler::racy(st, since)) {
          graph.invalidate();
          ++invalidations;
          return nullptr;
        }
      }
    }
    en->last_used.store(graph.tick(), std::memory_order_relaxed);
    return en;
  }

  void store(const std::string& key, const std::shared_ptr<Entry>& en) {
    en->key = key;
    std::size_t sz = en->bytes();
    if (sz > opt.cache_bytes) return;  // served, not cached
    std::unique_lock lock(cmu);
    auto [it, inserted] = cache.try_emplace(key, en);
    if (!inserted) {
      cached_bytes -= it->second->bytes();
      it->second = en;
    }
    cached_bytes += sz;
    // Memory cap over bundles and sources: evict the least recently used first (graph.mu is held).
    while (cached_bytes + graph.source_bytes > opt.cache_bytes) {
      std::uint64_t best = ~std::uint64_t{0};
      auto best_b = cache.end();
      Module* best_m = nullptr;
      for (auto i = cache.begin(); i != cache.end(); ++i) {
        auto t = i->second->last_used.load(std::memory_order_relaxed);
        if (i->second != en && t < best) {
          best = t;
          best_b = i;
        }
      }
      for (std::size_t id = 0; id < graph.size(); ++id) {
        Module& m = graph.at(std::uint32_t(id));
        if (m.source && !m.empty && m.last_used < best) {
          best = m.last_used;
          best_m = &m;
          best_b = cache.end();
        }
      }
      if (best_m) {
        graph.source_bytes -= best_m->source->size();
        best_m->source = nullptr;
      } else if (best_b != cache.end()) {
        cached_bytes -= best_b->second->bytes();
        cache.erase(best_b);
      } else {
        break;
      }
      ++evictions;
    }
  }

  Response fail(int status, const std::string& spec, const std::string& message, const std::vector<std::string>& chain) {
    std::string body = "csgiRequire.fail({\"status\":" + std::to_string(status) + ",\"module\":";
    append_js_string(body, spec);
    body += ",\"message\":";
    append_js_string(body, message);
    body += ",\"chain\":[";
    for (std::size_t i = 0; i < chain.size(); ++i) {
      if (i) body += ',';
      append_js_string(body, chain[i]);
    }
    body += "]});\n";
    return js_response(status, std::move(body));
  }

  // The closure's modules, each after the modules it imports or requires (a cycle: as the walk met it).
  std::vector<std::uint32_t> post_order(const Closure& c, std::uint32_t entry) {
    std::vector<std::uint32_t> out;
    if (c.order.empty()) return out;
    std::unordered_set<std::uint32_t> in(c.order.begin(), c.order.end()), seen{entry};
    std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> stack;
    auto next_of = [&](std::uint32_t id) {
      std::vector<std::uint32_t> next;
      Module& m = graph.at(id);
      for (std::size_t k = 0; k < m.edges.size(); ++k) {
        auto view = c.views.find({id, k});
        if (view != c.views.end()) {
          for (const auto& t : view->second) next.push_back(t.id);
        } else if (m.edges[k].status == Resolved::ok) {
          next.push_back(m.edges[k].target);
        }
      }
      std::reverse(next.begin(), next.end());
      return next;
    };
    stack.push_back({entry, next_of(entry)});
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      if (next.empty()) {
        out.push_back(id);
        stack.pop_back();
        continue;
      }
      std::uint32_t n = next.back();
      next.pop_back();
      if (in.count(n) && seen.insert(n).second) stack.push_back({n, next_of(n)});
    }
    return out;
  }

  std::variant<std::shared_ptr<Entry>, Response> build(Env& env, const std::string& spec, std::string_view have,
                                                       std::string_view parts) {
    std::string shown = spec.starts_with('/') ? spec.substr(1) : spec;
    const std::uint64_t gen0 = graph.generation();  // a change during the build makes the result stale
    const std::int64_t started_at = bundler::coarse_now_ns();  // directory listings are as of then
    Resolved r = graph.resolve_entry(spec);
    if (r.status == Resolved::forbidden) return fail(403, shown, "module '" + shown + "' is outside the bundle root", {});
    if (r.status != Resolved::ok) return fail(404, shown, "cannot find module '" + shown + "': " + r.detail, {});
    // A package's manifest steers resolution: a page gets it only through a module that requires it.
    if (!r.empty && (r.path == "package.json" || r.path.ends_with("/package.json") ||
                     r.path == "package-lock.json" || r.path.ends_with("/package-lock.json")))
      return fail(404, shown, "cannot find module '" + shown + "': a package manifest is not an entry point", {});
    std::uint32_t entry = graph.intern(r);

    // The loaded set, as bits over module ids.
    std::vector<bool> loaded;
    loaded.reserve(have.size() * 6);
    for (char c : have) {
      int v = base64url_value(c);
      for (int b = 0; b < 6; ++b) loaded.push_back((v >> b) & 1);
    }
    auto is_loaded = [&](std::uint32_t id) { return id < loaded.size() && loaded[id]; };

    // Tree shaking: the statements the page holds of the modules it got in part (`p`: id.units,…).
    const bool production = opt.mode == BundlerOptions::Mode::production;
    const bool shaking = production && opt.tree_shake;
    std::unordered_map<std::uint32_t, bundler::UnitSet> held;
    std::vector<std::pair<std::uint32_t, std::string_view>> held_text;
    for (std::string_view rest = parts; !rest.empty();) {
      auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      auto dot = item.find('.');
      std::uint32_t id = 0;
      auto [end, ec] = std::from_chars(item.data(), item.data() + std::min(dot, item.size()), id);
      if (dot == std::string_view::npos || ec != std::errc() || end != item.data() + dot)
        return Response::error(400, "p: not a list of id.units");
      held_text.push_back({id, item.substr(dot + 1)});
    }

    auto en = std::make_shared<Entry>();
    std::string body;
    std::vector<std::uint32_t> members;
    Closure c;
    // The page already holding the entry (whole) gets an empty bundle at once.
    if (!is_loaded(entry) || (shaking && !held_text.empty())) {
      if (auto err = graph.closure(entry, c)) {
        if (err->status == 422) env.errors().write("bundler: " + err->message);
        return fail(err->status, err->spec.empty() ? shown : err->spec, err->message, err->chain);
      }
      for (auto id : c.order)
        if (!is_loaded(id)) members.push_back(id);
    }
    bundler::ShakePlan plan;
    if (shaking && !c.order.empty()) {
      for (auto [id, text] : held_text) {  // against the tables the closure has just made current
        if (!is_loaded(id) || id >= graph.size()) continue;
        Module& m = graph.at(id);
        if (!m.esm || !m.shake) continue;
        auto units = bundler::decode_units(text, m.shake->units.size());
        if (!units) return Response::error(400, "p: not a base64url unit set");
        held[id] = std::move(*units);
      }
      plan = bundler::plan_shake(graph, c, entry, is_loaded, held);
    }
    auto left_out_of = [&](const Module& m) {  // the units a new module goes without
      std::vector<const bundler::ShakeUnit*> out;
      auto k = plan.kept.find(m.id);
      if (k == plan.kept.end() || !m.shake) return out;
      for (std::size_t u = 1; u < k->second.size(); ++u)
        if (!k->second[u]) out.push_back(&m.shake->units[u - 1]);
      return out;
    };
    std::size_t left_out_count = 0;

    std::string unbundled;
    body.reserve(4096);
    body += "csgiRequire.define(\"" + epoch + "\"," + std::to_string(entry) + ",[\n";
    for (std::size_t i = 0; i < members.size(); ++i) {
      Module& m = graph.at(members[i]);
      SharedBytes src = graph.source(m);
      if (!src) return fail(404, m.path, "cannot read module " + m.path, {});
      if (i) body += ",\n";
      body += '[' + std::to_string(m.id) + ',';
      append_js_string(body, m.path);
      body += ",[";
      for (std::size_t k = 0; k < m.edges.size(); ++k) {
        body += k ? ",[" : "[";
        append_js_string(body, m.edges[k].spec);
        body += ',';
        auto view = c.views.find({m.id, k});
        if (view == c.views.end()) {
          body += std::to_string(m.edges[k].target) + ']';
          continue;
        }
        body += '[';  // a barrel left out: [name, defining module, its name there] for each name imported
        for (std::size_t j = 0; j < view->second.size(); ++j) {
          const auto& t = view->second[j];
          if (j) body += ',';
          body += '[';
          append_js_string(body, t.name);
          body += ',' + std::to_string(t.id) + ',';
          append_js_string(body, t.imported);
          body += ']';
        }
        body += "]]";
      }
      body += "],";
      if (m.json || m.empty) {
        append_js_string(body, *src);
      } else {
        std::string text;
        text.reserve(src->size() + 64);
        auto left_out = left_out_of(m);
        left_out_count += left_out.size();
        if (left_out.empty()) {
          append_module(text, *src, m.chains, defines, m.esm ? &*m.esm : nullptr,
                        production ? &m.comments : nullptr, production ? &m.dead : nullptr);
        } else {  // the hook that runs what a later bundle adds, in the module's scope, goes before its yield
          const std::string& prefix = m.esm->prefix;
          const std::string strict = "'use strict';";
          text.append(strict).append("__csgi.x=s=>eval(s);").append(prefix, strict.size());
          apply_edits(text, *src,
                      module_edits(*src, m.chains, defines, &*m.esm, &m.comments, &m.dead, left_out));
        }
        append_js_string(body, text);
        if (m.esm) {
          body += ',';
          append_esm_table(body, graph, m, c);
          if (!left_out.empty()) {  // the units it holds
            body.back() = ',';
            body += "\"k\":\"" + bundler::encode_units(plan.kept.at(m.id)) + "\"}";
          }
        }
      }
      body += ']';
      for (auto& u : m.unbundled) {
        if (unbundled.size() > 2000) break;
        if (!unbundled.empty()) unbundled += "; ";
        unbundled += m.path + ":" + std::to_string(u.line) + " " + u.what;
      }
      if (opt.log_unbundled)
        for (auto& u : m.unbundled)
          env.errors().write("bundler: not bundled: " + m.path + ":" + std::to_string(u.line) + " " + u.what);
    }
    // Units a module the page holds must add: [id, null, units held after, [[unit, line, code], …]], each
    // module after the modules it imports (their units may be used as it runs these).
    for (auto id : post_order(c, entry)) {
      auto k = plan.kept.find(id);
      if (k == plan.kept.end() || !is_loaded(id)) continue;
      Module& m = graph.at(id);
      auto h = held.find(id);
      std::vector<std::size_t> add;
      for (std::size_t u = 1; u < k->second.size(); ++u)
        if (k->second[u] && h != held.end() && !h->second[u]) add.push_back(u);
      if (add.empty()) continue;
      std::stable_partition(add.begin(), add.end(), [&](std::size_t u) {  // functions are hoisted: first
        return m.shake->units[u - 1].kind == bundler::ShakeUnit::function;
      });
      SharedBytes src = graph.source(m);
      if (!src) return fail(404, m.path, "cannot read module " + m.path, {});
      auto edits = module_edits(*src, m.chains, defines, &*m.esm, &m.comments, &m.dead);
      body += body.back() == '[' || body.back() == '\n' ? "" : ",\n";
      const bool whole = std::all_of(k->second.begin(), k->second.end(), [](bool b) { return b; });
      body += '[' + std::to_string(id) + (whole ? ",null,null,[" : ",null,\"" + bundler::encode_units(k->second) + "\",[");
      for (std::size_t j = 0; j < add.size(); ++j) {
        const auto& unit = m.shake->units[add[j] - 1];
        std::string code;
        apply_edits(code, *src, edits, unit.begin, unit.end);
        body += j ? ",[" : "[";
        body += std::to_string(add[j]) + ',' + std::to_string(unit.line) + ',';
        append_js_string(body, bundler::unit_assignment(unit, code));
        body += ']';
      }
      body += "]]";
      ++en->parts;
    }
    body += "\n]";
    std::string opts;
    if (opt.process_shim) opts = "\"shim\":1,\"env\":{\"NODE_ENV\":" + defines.at("process.env.NODE_ENV") + "}";
    if (maps) opts += opts.empty() ? "\"maps\":1" : ",\"maps\":1";
    if (!opts.empty()) body += ",{" + opts + "}";
    body += ");\n";
    // A header value: one line of visible ASCII (module names may hold anything).
    for (char& ch : unbundled)
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';

    en->etag = "\"" + hex(fnv1a(body)) + hex(body.size(), 8) + "\"";
    en->gen = gen0;
    en->modules = members.size();
    en->left_out = left_out_count;
    en->unbundled = std::move(unbundled);
    if (opt.freshness == BundlerOptions::Freshness::stat) {
      std::vector<std::uint32_t> files = c.order;
      files.insert(files.end(), c.consulted.begin(), c.consulted.end());
      for (auto id : files) {
        Module& m = graph.at(id);
        if (m.empty) continue;
        en->stamps.push_back({graph.abs(m.path), m.stamp, m.read_at_ns});
      }
      for (auto& d : c.dirs) en->stamps.push_back({graph.abs(d), bundler::stamp_of(graph.abs(d)), started_at});
      // The package.json files that may have decided a resolution (main, browser, exports, imports): those
      // of every directory holding a module and of its parents. A rewrite leaves the directory's stamp alone.
      std::unordered_set<std::string> pkgs;
      for (auto& d : c.dirs) {
        for (std::string a = d;; a = a.substr(0, a.rfind('/') == std::string::npos ? 0 : a.rfind('/'))) {
          if (!pkgs.insert(a).second) break;
          if (a.empty()) break;
        }
      }
      for (auto& a : pkgs) {
        std::string f = graph.abs(a.empty() ? std::string("package.json") : a + "/package.json");
        en->stamps.push_back({f, bundler::stamp_of(f), started_at});
      }
    }
    en->body = std::make_shared<const std::string>(std::move(body));
    en->last_used.store(graph.tick(), std::memory_order_relaxed);
    ++builds;
    return en;
  }

  BundlerOptions opt;
  bool maps = opt.source_maps.value_or(opt.mode == BundlerOptions::Mode::development);
  Graph graph;
  std::map<std::string, std::string, std::less<>> defines;
  Static assets;  // <mount>/~asset/: the files stylesheets name
  std::string epoch;
  std::atomic<unsigned> epoch_generation{bundler::fork_generation()};  // the process `epoch` belongs to
  std::mutex epoch_mu;
  std::shared_ptr<bundler::LiveHub> live;  // live_reload: this process's event streams
  std::shared_ptr<Entry> loader;
  std::string loader_hash;

  std::shared_mutex cmu;
  std::unordered_map<std::string, std::shared_ptr<Entry>> cache;
  std::size_t cached_bytes = 0;

  std::atomic<std::uint64_t> requests{0}, builds{0}, hits{0}, invalidations{0}, evictions{0}, compressions{0};
};

Bundler::Bundler(std::string root, BundlerOptions options)
    : impl_(std::make_shared<Impl>(std::move(root), std::move(options))) {}

Bundler::Bundler(App next, std::string root, BundlerOptions options)
    : impl_(std::make_shared<Impl>(std::move(root), std::move(options))), next_(std::move(next)) {
  auto& m = impl_->opt.mount;
  while (!m.empty() && m.back() == '/') m.pop_back();
  if (m.empty() || m.front() != '/') throw std::invalid_argument("bundler: mount must be \"/path\"");
}

Response Bundler::operator()(Env& env) const {
  std::string_view path = env.get(keys::PATH_INFO);
  if (!next_) return impl_->handle(env, path);
  const std::string& mount = impl_->opt.mount;
  if (!(path.starts_with(mount) && (path.size() == mount.size() || path[mount.size()] == '/'))) return next_(env);
  return impl_->handle(env, path.substr(mount.size()));
}

Bundler::Stats Bundler::stats() const {
  Stats s;
  s.requests = impl_->requests;
  s.builds = impl_->builds;
  s.hits = impl_->hits;
  s.invalidations = impl_->invalidations;
  s.evictions = impl_->evictions;
  s.compressions = impl_->compressions;
  {
    std::lock_guard lock(impl_->graph.mu);
    s.scans = impl_->graph.scans;
    s.modules = impl_->graph.size();
    s.transpiles = impl_->graph.transpiler.misses;
    s.transpile_hits = impl_->graph.transpiler.hits;
    std::shared_lock l2(impl_->cmu);
    s.cached_bytes = impl_->cached_bytes + impl_->graph.source_bytes;
  }
  return s;
}

std::string_view Bundler::loader_source() noexcept { return bundler::loader_text(); }

}  // namespace csgi::mw
