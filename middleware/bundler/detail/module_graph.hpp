#pragma once
/// The bundler's module graph: module ids, file contents, scanned dependencies and resolved edges, with
/// the change detection that keeps them true to the disk (inotify or stat stamps).
///
/// Not thread-safe by itself: the owner (Bundler::Impl) holds `mu` around every call except
/// Watcher::drain(), which may run concurrently.
#include <chrono>
#include <atomic>
#include <functional>
#include <map>
#include <thread>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "csgi/core/io.hpp"
#include "csgi/core/response.hpp"
#include "csgi/middleware/bundler/detail/dead_code.hpp"
#include "csgi/middleware/bundler/detail/esbuild.hpp"
#include "csgi/middleware/bundler/detail/esm_transform.hpp"
#include "csgi/middleware/bundler/detail/js_scan.hpp"
#include "csgi/middleware/bundler/detail/resolver.hpp"
#include "csgi/middleware/bundler/detail/tree_shake.hpp"

namespace csgi::mw::bundler {

/// What a stat(2) says about a path; equal stamps mean "unchanged" (size, mtime, ctime, inode).
struct Stamp {
  bool exists = false;
  std::uint64_t dev = 0, ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const Stamp&) const = default;
};
Stamp stamp_of(const std::string& abs_path);

/// The coarse wall clock the kernel takes file times from (CLOCK_REALTIME_COARSE), in nanoseconds.
std::int64_t coarse_now_ns() noexcept;

/// "Racily clean", as git calls it: the file changed (ctime) in the clock tick that was current at
/// `since` or later. A write in that same tick would leave the stamp unchanged (same size, same times),
/// so an equal stamp proves nothing and the file must be read again. ctime, not mtime: a write always
/// sets it to the current time, and it cannot be set to the future.
inline bool racy(const Stamp& s, std::int64_t since) noexcept { return s.exists && s.ctime_ns >= since; }

/// How many times this process's ancestors forked since the first call (in this process or a parent):
/// changes in a forked child, so per-process state can tell that it was inherited.
unsigned fork_generation();

/// inotify on the directories the graph has looked at. A thread blocks on the descriptor and calls
/// `on_change` after each batch of events, so requests pay nothing to notice edits (an edit shows up as
/// soon as the thread has woken: microseconds).
///
/// The thread and the descriptor belong to one process. ensure_running() starts them in the process that
/// serves: a prefork master that only built the stack starts nothing, and a process forked after they ran
/// (where the thread does not exist and the inotify instance is shared with the parent, which would take
/// the events) gets a descriptor of its own with every directory watched again, a thread of its own, and
/// one `on_change` call for what changed before it watched.
class Watcher {
public:
  Watcher();
  ~Watcher();
  /// What to call after a batch of events; set before the first ensure_running().
  void on_change(std::function<void()> fn) { on_change_ = std::move(fn); }
  /// The absolute paths of the files named by the events since the last call; nullopt when some event
  /// named no file (a directory's own event, an overflow) or there were too many to list.
  std::optional<std::vector<std::string>> take_changed();
  /// What to call at least every `every` on the same thread, events or not; set before the first
  /// ensure_running().
  void on_tick(std::chrono::milliseconds every, std::function<void()> fn) {
    tick_every_ = every;
    on_tick_ = std::move(fn);
  }
  /// Starts (or, in a forked process, restarts) the thread. Cheap when it runs: one atomic load.
  void ensure_running();
  /// Stops the thread (also done by the destructor).
  void stop();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  bool ok() const noexcept { return fd_ >= 0; }
  /// Watches `abs_dir` (once). Thread-safe.
  void watch(const std::string& abs_dir);
  /// Reads pending events without blocking; returns how many arrived. Thread-safe.
  std::size_t drain();

private:
  void start_locked();
  void adopt_after_fork();

  int fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::function<void()> on_change_;
  std::chrono::milliseconds tick_every_{0};
  std::function<void()> on_tick_;
  std::mutex start_mu_;
  std::atomic<unsigned> running_in_{0};  // fork generation + 1 of the process whose thread runs; 0: none
  unsigned fd_generation_ = 0;           // fork generation of the process that made fd_
  std::mutex mu_;
  std::unordered_map<int, std::string> dirs_;
  std::unordered_set<std::string> watched_;
  std::vector<std::string> changed_;  // guarded by mu_
  bool changed_unknown_ = false;      // guarded by mu_
};

struct Edge {
  std::string spec;
  std::uint32_t line = 0;
  Resolved::Status status = Resolved::not_found;
  std::uint32_t target = 0;
  std::string detail;
  bool import = false;  // an ES import/export … from (else a require())
};

struct Module {
  std::string path;  // root-relative real path
  std::uint32_t id = 0;
  bool json = false;
  bool empty = false;  // a module with no file and no source (a `false` mapping): path is its label
  Stamp stamp;
  std::int64_t read_at_ns = 0;  // coarse_now_ns() just before the source was read (see racy())
  SharedBytes source;  // null until read, or after eviction
  std::uint64_t last_used = 0;
  bool scanned = false;
  std::vector<Dependency> deps;  // unique specs, source order
  std::vector<Unbundled> unbundled;
  std::vector<MemberChain> chains;  // uses of define roots (Graph's ScanOptions)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> comments;  // with ScanOptions::comments
  std::vector<DeadRange> dead;                 // code the defines make dead (dead_code.hpp), source order
  std::uint64_t pure_gen = ~std::uint64_t{0};  // the generation `pure` was found in
  bool pure = false;                           // its package declares it free of side effects
  std::optional<std::uint32_t> esm_line;
  std::optional<EsmModule> esm;      // an ES module: its transform (deps are its import requests)
  std::optional<ShakeTable> shake;   // an ES module with statements that may be left out (Graph's `shake`)
  std::optional<std::string> error;  // unreadable or unlexable: the message
  std::uint64_t checked_gen = ~std::uint64_t{0};
  std::vector<Edge> edges;
  std::uint64_t edges_gen = ~std::uint64_t{0};
};

/// Why a closure could not be built.
struct GraphError {
  int status = 404;          // 404 missing, 403 forbidden, 422 unlexable or an ES module the transform refuses
  std::string message;
  std::string spec;          // the require() argument that failed ("" for 422)
  std::vector<std::string> chain;  // entry … the module where it failed
};

/// One name an ES import takes from a barrel, resolved to the module that defines it.
struct ViewTarget {
  std::string name;      // the name imported from the barrel
  std::uint32_t id = 0;  // the module that defines it
  std::string imported;  // its name there ("*": that module's namespace)
};

struct Closure {
  std::vector<std::uint32_t> order;  // DFS pre-order from the entry, each module once
  std::vector<std::string> dirs;     // root-relative directories whose listing decided resolutions
  /// (module id, edge index) → the defining modules of the names that import takes from a barrel of a
  /// side-effect-free package, which is left out (Graph::barrel_view).
  std::map<std::pair<std::uint32_t, std::size_t>, std::vector<ViewTarget>> views;
  std::vector<std::uint32_t> consulted;  // modules read to resolve views but not in `order`
};

class Graph {
public:
  /// `defines` decide which branches are dead (Module::dead): a `require` in one is not followed.
  /// `shake`: ES modules get their tree-shaking table (Module::shake).
  Graph(const std::string& root, bool use_inotify, ResolverOptions resolver_options = {}, ScanOptions scan_options = {},
        Defines defines = {}, bool shake = false, std::string esbuild = "esbuild");

  std::mutex mu;
  const Resolver& resolver() const noexcept { return resolver_; }
  Watcher* watcher() noexcept { return use_inotify_ && watcher_.ok() ? &watcher_ : nullptr; }

  std::uint64_t generation() const noexcept { return gen_.load(std::memory_order_acquire); }
  /// Marks everything for revalidation (each module re-stats once per generation).
  void invalidate() noexcept { gen_.fetch_add(1, std::memory_order_acq_rel); }

  std::uint32_t intern(const std::string& path);
  /// The module a resolution names: a file, or an empty module by its label.
  std::uint32_t intern(const Resolved& r) { return r.empty ? intern_empty(r.path) : intern(r.path); }
  std::uint32_t intern_empty(const std::string& label);
  Module& at(std::uint32_t id) { return *modules_[id]; }
  std::size_t size() const noexcept { return modules_.size(); }

  /// Resolves a module named by a request (cached per generation).
  Resolved resolve_entry(const std::string& spec);
  /// Makes `m` current (stat; re-read and re-scan when changed). False when it cannot be used; the
  /// reason is in m.error.
  bool refresh(Module& m);
  /// The module's source, reading it again when it was evicted. Null when unreadable.
  SharedBytes source(Module& m);
  /// The closure of `entry` (refreshing every module in it).
  std::optional<GraphError> closure(std::uint32_t entry, Closure& out);
  /// Reads and scans every .js/.json file under the root in sorted order; returns a digest of the paths.
  std::uint64_t prebuild(ErrorStream& log);

  std::string abs(const std::string& rel) const { return rel.empty() ? resolver_.root() : resolver_.root() + "/" + rel; }

  std::uint64_t tick() noexcept { return tick_.fetch_add(1, std::memory_order_relaxed) + 1; }
  std::size_t source_bytes = 0;
  std::uint64_t scans = 0;
  Transpiler transpiler;
  /// The stylesheet at root-relative real path `rel` as esbuild's CSS loader leaves it (what its module
  /// adds to the page). Null when unreadable or refused (the reason in `error`).
  SharedBytes stylesheet(const std::string& rel, std::string& error);
  /// esbuild's output for the TypeScript/JSX file at root-relative `rel` (from the transform cache when
  /// its text is unchanged), with its source map; `original` gets the file's text.
  TranspileResult transpiled(const std::string& rel, std::string& original);

private:
  /// The file's text as the lexer sees it: esbuild's output for TypeScript and JSX. Null when unreadable
  /// or when esbuild refuses it (the reason in `error`).
  SharedBytes load(const std::string& path, Stamp& stamp, std::string& error);
  void resolve_edges(Module& m);
  struct Export {
    enum Status { found, absent, unknown } status = unknown;
    std::uint32_t id = 0;
    std::string name;
  };
  /// Barrel optimization (webpack's sideEffects, Next.js's optimizePackageImports): the names an ES
  /// import takes from a module of a side-effect-free package that only passes them on, resolved to the
  /// modules that define them; nullopt when the import needs the module itself (a namespace import,
  /// `export *` of it, a name it defines, anything uncertain).
  std::optional<std::vector<ViewTarget>> barrel_view(Module& importer, const Edge& edge, Closure& out);
  Export find_export(std::uint32_t id, const std::string& name, int depth, Closure& out);
  bool side_effect_free(Module& m);

  Resolver resolver_;
  ScanOptions scan_options_;
  Defines defines_;
  bool shake_ = false;
  Watcher watcher_;
  bool use_inotify_;
  std::atomic<std::uint64_t> gen_{0};
  std::atomic<std::uint64_t> tick_{0};
  std::vector<std::unique_ptr<Module>> modules_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  struct EntryCache {
    std::uint64_t gen;
    Resolved r;
  };
  std::unordered_map<std::string, EntryCache> entries_;
  // Resolutions of (directory, spec) in the current generation: many modules share them.
  std::unordered_map<std::string, Resolved> resolutions_;
  std::uint64_t resolutions_gen_ = ~std::uint64_t{0};
};

}  // namespace csgi::mw::bundler
