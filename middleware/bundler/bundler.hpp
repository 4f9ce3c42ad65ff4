#pragma once
/// csgi::mw::Bundler — serves CommonJS and ES modules to browsers as dynamic bundles (docs/bundler.md).
///
/// The page loads `<mount>/require.js` (the client loader) and calls `require(path, cb)`; the loader asks
/// for `<mount>/<path>?e=<epoch>&have=<set>` and receives, as one JavaScript response, every module in the
/// transitive closure of `path`'s `require('literal')` calls and static imports that is not in the page's
/// loaded set. Each
/// module is a string the loader evaluates on its first require, naming it by its URL (`//# sourceURL=`).
///
/// URL forms under the mount (PATH_INFO relative to the mount):
///   /require.js            the loader (`?v=<hash>` form: cached immutably)
///   /<root-relative path>  a module by path, resolved as esbuild does for the browser (options platform,
///                          builtins; extensionless, index.js, package main, browser field, exports)
///   /~/<package[/sub]>     a module by package name, looked up in the root's node_modules/
///   /~live                 live_reload only: the Server-Sent Events stream of edits
///   /~css/<path>           a stylesheet's text (url() references rewritten), for live reload
///   /~asset/<path>         an image, font, audio or video file a stylesheet's url() names
///   /~map/<path>?c=<col>   source_maps only: the source map of a module's text in bundles
/// Query: `e` the epoch the ids belong to, `have` the loaded set as a base64url bitset over module ids,
/// `p` (tree shaking) the statements the page holds of modules it got in part: `id.units,id.units…`.
///
/// Status: 200 bundle; 304 (If-None-Match); 404 missing module (body: JS that fails the pending require
/// with the requirer chain), and any file but a module source (resolver.hpp module_source: dotfiles,
/// config) or a package manifest asked for as the entry; 403 a path leaving the root (`..`, encoded dots or slashes, symlinks out);
/// 422 a module the lexer cannot follow or an ES module the transform refuses; 400 a malformed `have`;
/// 405 other methods than GET/HEAD.
///
/// Reads:  REQUEST_METHOD, SCRIPT_NAME, PATH_INFO, QUERY_STRING, HTTP_IF_NONE_MATCH; csgi.errors.
/// Module sources are sent as written, but for `defines` (process.env.NODE_ENV…) replaced in place and
/// ES modules transformed for the loader (lines kept).
/// Writes: response headers Content-Type, ETag, Cache-Control, X-Bundle-Modules, X-Bundle-Unbundled
///         (debug: require(expr) and two-argument requires left out); nothing in the env.
/// Order:  anywhere; outside compression if bundles should be compressed (the body is shared bytes).
///
/// Thread-safe: one instance serves every thread; caches are shared and locked, nothing per request is
/// kept in members. Copies share the same caches.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct BundlerOptions {
  /// Middleware form only: the path prefix handled ("/bundle"); other requests go to the next app. The
  /// app form (no next app) handles all of PATH_INFO and ignores this.
  std::string mount = "/bundle";
  /// How edits, additions and removals under the root are noticed.
  ///   inotify: a watcher thread marks caches stale on any event in a directory the bundler has read or
  ///            probed; requests only compare a generation number. Linux only.
  ///   stat:    each cached bundle re-stats its files and directories on every request (costly).
  ///   none:    never (deploy mode: files are assumed immutable while serving).
  enum class Freshness { inotify, stat, none } freshness = Freshness::inotify;
  /// Scan every .js/.json file under the root at construction (ids then follow sorted paths and the
  /// epoch is a digest of them, so they survive restarts of an unchanged tree).
  bool prebuild = false;
  /// Cap on cached bundle bytes plus cached source bytes; least recently used entries go first.
  std::size_t cache_bytes = std::size_t{64} << 20;
  /// Answers (bundles and the loader) also in gzip and brotli, chosen by Accept-Encoding (q-values,
  /// identity), with `Vary: Accept-Encoding` and an ETag per coding. Each form is made once per cached
  /// answer, on its first request; errors are never compressed or cached.
  bool compress = true;
  int gzip_level = 6;      // 1…9 (zlib)
  int brotli_quality = 5;  // 0…11 (libbrotlienc; 11 is smallest and slowest)
  /// Cache-Control of bundle responses (their URL is not content-addressed: revalidate with the ETag).
  std::string cache_control = "no-cache";
  /// Adds X-Bundle-Modules and X-Bundle-Unbundled to bundle responses.
  bool debug_headers = true;
  /// Logs left-out requires (require(expr), two-argument) to csgi.errors when a bundle is built.
  bool log_unbundled = false;
  /// Module resolution. browser (as esbuild --platform=browser): the package.json "browser" field, and
  /// the conditions "browser", "module", "require"/"import", "default" in exports/imports. node: no
  /// browser field; conditions "node", "require"/"import", "default".
  enum class Platform { browser, node } platform = Platform::browser;
  /// Node builtins ("util", "events"; also required as "node:util") mapped to what the page gets
  /// instead: a package resolved from the root's node_modules ("util/" or "events"), a root-relative
  /// file ("./shims/util.js"), or "" for an empty module. An unmapped builtin that no node_modules
  /// holds is a 404 naming the builtin, the requiring file and line, and this option.
  std::map<std::string, std::string, std::less<>> builtins;
  /// The build mode: the default value of process.env.NODE_ENV ("development", as esbuild without
  /// --minify; "production").
  enum class Mode { development, production } mode = Mode::development;
  /// Compile-time replacements, as esbuild's --define: a free dotted name ("process.env.NODE_ENV",
  /// "__DEV__", "process.env.API") → the JavaScript expression put in its place (""production"",
  /// "false"). Outside strings, comments and regexes; not where the name is assigned to; the longest
  /// defined prefix of a chain wins. Values are one line (line numbers never change); the constructor
  /// throws std::invalid_argument otherwise. "process.env.NODE_ENV" defaults to the mode's name.
  std::map<std::string, std::string, std::less<>> defines;
  /// Modules see a free `process` (the page's own if it has one, else a small shim: env.NODE_ENV as
  /// defined, browser, nextTick, argv, versions {}, cwd()) and `global` (globalThis), as browserify
  /// gives them. Off: they are whatever the page has (esbuild's behaviour).
  bool process_shim = true;
  /// Production mode: an ES module's top-level statements that only declare (functions, classes, pure
  /// initializers) go out only when something the bundle runs refers to them, as esbuild's tree shaking
  /// drops them. Each such module then holds a hook that runs the statements a later bundle adds in its
  /// scope, so a later require of the page still finds every export. Development sends whole modules.
  bool tree_shake = true;
  /// Development: `<mount>/~live` is a Server-Sent Events stream that sends `event: change` after each
  /// batch of edits the inotify watcher sees (needs Freshness::inotify; the constructor throws
  /// std::invalid_argument otherwise), and the loader served at `<mount>/require.js` follows it and
  /// reloads the page (csgiRequire.live(fn) to do something else); a batch of edits to stylesheets only
  /// is `event: css` instead, and the loader replaces those <style> texts from `<mount>/~css/<path>`. Per process: under prefork each
  /// worker's watcher feeds the streams that worker holds, and a stream watches the whole tree but
  /// node_modules/ and dot-directories when it opens.
  bool live_reload = false;
  /// live_reload: a comment line goes to every stream this often, so a client that has gone is dropped
  /// (and a proxy does not take the stream for idle) without waiting for an edit.
  std::chrono::milliseconds live_reload_keepalive{15000};
  /// The esbuild executable (a name looked up in PATH, or a path) that turns .ts, .tsx, .jsx, .mts and
  /// .cts modules into JavaScript (its transform API, one child process per source not yet cached; the
  /// root's tsconfig.json goes to it as --tsconfig-raw for jsx, jsxImportSource and the like).
  std::string esbuild = "esbuild";
  /// Source maps, fetched only when asked for (devtools open): bundles tell the loader to end each module
  /// it evaluates with `//# sourceMappingURL=<mount>/~map/<path>?c=<column>`, and that URL answers the
  /// map of the module's text back to its file (the bundler's edits composed with esbuild's map for
  /// TypeScript/JSX; the file's text included). Never inlined. Off: no comment, and ~map is a 404.
  /// Unset: on in development, off in production (a production map would hand every source file,
  /// comments included, to whoever asks); set it to true to serve production maps too.
  std::optional<bool> source_maps;
};

class Bundler {
public:
  /// App form: serves `root` for every request (mount it with Builder::mount or UrlMap). Throws
  /// std::invalid_argument when `root` is not a directory.
  explicit Bundler(std::string root, BundlerOptions options = {});
  /// Middleware form: handles `options.mount` and passes everything else to `next`.
  Bundler(App next, std::string root, BundlerOptions options = {});

  Response operator()(Env& env) const;

  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t builds = 0;        // bundles built (cache misses that produced a bundle)
    std::uint64_t hits = 0;          // answered from the bundle cache (200 or 304)
    std::uint64_t scans = 0;         // files read and lexed
    std::uint64_t invalidations = 0; // change signals seen (inotify events or stat mismatches)
    std::uint64_t evictions = 0;
    std::uint64_t compressions = 0;  // gzip/brotli forms made (at most one per coding per cached answer)
    std::size_t cached_bytes = 0;
    std::size_t modules = 0;         // modules known (ids assigned)
    std::uint64_t transpiles = 0;    // TypeScript/JSX sources esbuild transformed (transform cache misses)
    std::uint64_t transpile_hits = 0;  // … answered from the transform cache
  };
  Stats stats() const;
  /// The client loader's source.
  static std::string_view loader_source() noexcept;

  class Impl;

private:
  std::shared_ptr<Impl> impl_;
  App next_;
};

}  // namespace csgi::mw
