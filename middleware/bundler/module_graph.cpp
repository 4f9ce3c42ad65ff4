#include "csgi/middleware/bundler/detail/module_graph.hpp"

#include "csgi/middleware/bundler/detail/css.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <mutex>

namespace csgi::mw::bundler {

Stamp stamp_of(const std::string& abs_path) {
  struct stat st {};
  Stamp s;
  if (::stat(abs_path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.size = std::uint64_t(st.st_size);
  s.mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.ctime_ns = std::int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return s;
}

std::int64_t coarse_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// --- Watcher ---

namespace {
std::atomic<unsigned> forks{0};
void count_fork() noexcept { forks.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

unsigned fork_generation() {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(nullptr, nullptr, count_fork); });
  return forks.load(std::memory_order_relaxed);
}

Watcher::Watcher() {
  fd_generation_ = fork_generation();
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

void Watcher::stop() {
  std::lock_guard lock(start_mu_);
  unsigned running = running_in_.load();
  if (running == 0) return;
  if (running != fork_generation() + 1) {  // the parent's thread: not in this process, forget its handle
    ::new (static_cast<void*>(&thread_)) std::thread();
    running_in_.store(0);
    return;
  }
  if (thread_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  running_in_.store(0);
}

void Watcher::ensure_running() {
  unsigned want = fork_generation() + 1;
  if (running_in_.load(std::memory_order_acquire) == want) return;
  std::lock_guard lock(start_mu_);
  if (running_in_.load() == want || fd_ < 0) return;
  if (fd_generation_ != want - 1) adopt_after_fork();
  start_locked();
  running_in_.store(want, std::memory_order_release);
}

// In a forked child: the inotify instance is the parent's (shared with every sibling: whoever reads
// first takes the events), and a thread the parent ran does not exist here (its handle is forgotten,
// never joined). A new instance watches every directory again; what changed in between is unknown, so
// the graph is told once that everything may have changed.
void Watcher::adopt_after_fork() {
  if (running_in_.load() != 0) ::new (static_cast<void*>(&thread_)) std::thread();
  running_in_.store(0);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  stop_fd_ = -1;
  if (fd_ >= 0) ::close(fd_);
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  fd_generation_ = fork_generation();
  std::unordered_set<std::string> dirs;
  {
    std::lock_guard lock(mu_);
    dirs.swap(watched_);
    dirs_.clear();
  }
  for (const auto& d : dirs) watch(d);
  if (on_change_) {
    try {
      on_change_();
    } catch (...) {
    }
  }
}

Watcher::~Watcher() {
  stop();
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (fd_ >= 0) ::close(fd_);
}

void Watcher::start_locked() {
  if (fd_ < 0) return;
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) return;
  thread_ = std::thread([this, cb = on_change_, tick = on_tick_, every = tick_every_] {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    auto next_tick = std::chrono::steady_clock::now() + every;
    while (true) {
      int timeout = -1;
      if (tick) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - std::chrono::steady_clock::now());
        timeout = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 3600000));
      }
      int n = ::poll(fds, 2, timeout);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || (fds[1].revents & POLLIN)) return;
      if (n > 0 && drain() > 0) {
        try {
          cb();
        } catch (...) {
        }
      }
      if (tick && std::chrono::steady_clock::now() >= next_tick) {
        next_tick = std::chrono::steady_clock::now() + every;
        try {
          tick();
        } catch (...) {
        }
      }
    }
  });
}

void Watcher::watch(const std::string& abs_dir) {
  if (fd_ < 0) return;
  std::lock_guard lock(mu_);
  if (watched_.count(abs_dir)) return;
  int wd = inotify_add_watch(fd_, abs_dir.c_str(),
                             IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                 IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF);
  if (wd < 0) return;  // a vanished directory: its parent's watch reports the change
  watched_.insert(abs_dir);
  dirs_[wd] = abs_dir;
}

std::size_t Watcher::drain() {
  if (fd_ < 0) return 0;
  alignas(struct inotify_event) char buf[8192];
  std::size_t events = 0;
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      ++events;
      {
        std::lock_guard lock(mu_);
        auto it = dirs_.find(ev->wd);
        if (ev->len == 0 || it == dirs_.end() || changed_.size() >= 256 || (ev->mask & IN_Q_OVERFLOW))
          changed_unknown_ = true;
        else
          changed_.push_back(it->second + "/" + ev->name);
      }
      if (ev->mask & IN_IGNORED) {  // the watch is gone (directory removed): allow watching it again
        std::lock_guard lock(mu_);
        auto it = dirs_.find(ev->wd);
        if (it != dirs_.end()) {
          watched_.erase(it->second);
          dirs_.erase(it);
        }
      }
      p += sizeof(struct inotify_event) + ev->len;
    }
  }
  return events;
}

std::optional<std::vector<std::string>> Watcher::take_changed() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.swap(changed_);
  const bool unknown = changed_unknown_;
  changed_unknown_ = false;
  if (unknown) return std::nullopt;
  return out;
}

// --- Graph ---

Graph::Graph(const std::string& root, bool use_inotify, ResolverOptions resolver_options, ScanOptions scan_options,
             Defines defines, bool shake, std::string esbuild)
    : transpiler(std::move(esbuild)),
      resolver_(root, std::move(resolver_options)),
      scan_options_(std::move(scan_options)),
      defines_(std::move(defines)),
      shake_(shake),
      use_inotify_(use_inotify) {}

std::uint32_t Graph::intern(const std::string& path) {
  auto it = ids_.find(path);
  if (it != ids_.end()) return it->second;
  auto id = std::uint32_t(modules_.size());
  auto m = std::make_unique<Module>();
  m->path = path;
  m->id = id;
  m->json = path.ends_with(".json");
  modules_.push_back(std::move(m));
  ids_.emplace(path, id);
  return id;
}

std::uint32_t Graph::intern_empty(const std::string& label) {
  std::string key;
  key.push_back('\0');  // never a file's path
  key.append(label);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  auto id = std::uint32_t(modules_.size());
  auto m = std::make_unique<Module>();
  m->path = label;
  m->id = id;
  m->empty = true;
  m->scanned = true;
  m->source = std::make_shared<const std::string>();
  modules_.push_back(std::move(m));
  ids_.emplace(std::move(key), id);
  return id;
}

Resolved Graph::resolve_entry(const std::string& spec) {
  auto g = generation();
  auto it = entries_.find(spec);
  if (it != entries_.end() && it->second.gen == g) return it->second.r;
  std::vector<std::string> probed;
  Resolved r = resolver_.resolve("", spec, &probed);
  if (use_inotify_ && watcher_.ok())
    for (auto& d : probed) watcher_.watch(abs(d));
  if (r.status == Resolved::ok) {  // errors are never cached
    if (entries_.size() > 4096) entries_.clear();
    entries_[spec] = {g, r};
  }
  return r;
}

namespace {
std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

SharedBytes read_file(const std::string& abs_path, Stamp& stamp) {
  int fd = ::open(abs_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  auto data = std::make_shared<std::string>();
  data->resize(std::size_t(st.st_size));
  std::size_t got = 0;
  while (true) {
    if (got == data->size()) data->resize(data->size() + 4096);
    ssize_t n = ::read(fd, data->data() + got, data->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += std::size_t(n);
  }
  data->resize(got);
  ::close(fd);
  stamp = stamp_of(abs_path);
  return data;
}
}  // namespace

SharedBytes Graph::load(const std::string& path, Stamp& stamp, std::string& error) {
  SharedBytes src = read_file(abs(path), stamp);
  const std::string_view loader = src ? esbuild_loader(path) : std::string_view();
  if (loader.empty()) return src;
  Stamp ts;
  SharedBytes tsconfig = read_file(abs("tsconfig.json"), ts);
  TranspileResult r = transpiler.run(path, *src, tsconfig ? std::string_view(*tsconfig) : std::string_view());
  if (!r.code) error = std::move(r.error);
  if (r.code && loader == "css") {
    CssImports css = css_imports(*r.code, path);
    if (!is_css_module(path)) return std::make_shared<const std::string>(css_module(path, split_urls(css.css, path), nullptr, css.imports));
    ScopedCss scoped = scope_css(css.css, path);
    css.imports.insert(css.imports.end(), scoped.imports.begin(), scoped.imports.end());
    return std::make_shared<const std::string>(css_module(path, split_urls(scoped.css, path), &scoped.names, css.imports));
  }
  return r.code;
}

SharedBytes Graph::stylesheet(const std::string& rel, std::string& error) {
  Stamp st;
  SharedBytes src = read_file(abs(rel), st);
  if (!src) {
    error = "cannot read " + rel;
    return nullptr;
  }
  Stamp ts;
  SharedBytes tsconfig = read_file(abs("tsconfig.json"), ts);
  TranspileResult r = transpiler.run(rel, *src, tsconfig ? std::string_view(*tsconfig) : std::string_view());
  if (!r.code) error = std::move(r.error);
  return r.code;
}

TranspileResult Graph::transpiled(const std::string& rel, std::string& original) {
  Stamp st, ts;
  SharedBytes src = read_file(abs(rel), st);
  if (!src) return {nullptr, nullptr, "cannot read " + rel};
  original = *src;
  SharedBytes tsconfig = read_file(abs("tsconfig.json"), ts);
  return transpiler.run(rel, *src, tsconfig ? std::string_view(*tsconfig) : std::string_view());
}

bool Graph::refresh(Module& m) {
  auto g = generation();
  m.last_used = tick();
  if (m.empty) return true;
  if (m.checked_gen == g && m.scanned) return !m.error;
  std::string a = abs(m.path);
  if (use_inotify_ && watcher_.ok()) watcher_.watch(abs(parent_dir(m.path)));  // before reading: no lost edit
  Stamp now = stamp_of(a);
  if (m.scanned && now == m.stamp && now.exists && !racy(m.stamp, m.read_at_ns)) {
    m.checked_gen = g;
    return !m.error;
  }
  // Changed, new or gone: read and scan again.
  if (m.source) source_bytes -= m.source->size();
  m.source = nullptr;
  m.scanned = true;
  m.deps.clear();
  m.unbundled.clear();
  m.chains.clear();
  m.comments.clear();
  m.dead.clear();
  m.esm_line.reset();
  m.esm.reset();
  m.shake.reset();
  m.error.reset();
  m.edges.clear();
  m.edges_gen = ~std::uint64_t{0};
  m.checked_gen = g;
  Stamp st;
  m.read_at_ns = coarse_now_ns();
  std::string failure;
  SharedBytes src = load(m.path, st, failure);
  if (!src) {
    m.stamp = failure.empty() ? now : st;
    m.error = failure.empty() ? "cannot read " + m.path : failure;
    return false;
  }
  m.stamp = st;
  m.source = src;
  source_bytes += src->size();
  ++scans;
  if (m.json) return true;
  ScanResult r = scan(*src, scan_options_);
  if (r.error) {
    m.error = m.path + ": " + *r.error;
    return false;
  }
  auto defined = [&](const std::vector<MemberChain>& chains) {
    return std::any_of(chains.begin(), chains.end(), [&](const MemberChain& c) { return defines_.count(c.path) > 0; });
  };
  std::unordered_set<std::string> seen;
  if (r.esm_line) {
    m.esm_line = r.esm_line;
    std::vector<Token> tokens;
    ScanOptions with_tokens = scan_options_;
    with_tokens.tokens = &tokens;
    r = scan(*src, with_tokens);
    EsmModule t = transform_esm(*src, tokens);
    if (t.error) {
      m.error = m.path + ": " + *t.error + " (ES module not supported by the bundler's transform)";
      return false;
    }
    m.deps = std::move(t.requests);
    m.esm = std::move(t);
    if (defined(r.chains)) m.dead = dead_ranges(*src, tokens, r.chains, defines_, true);
    if (shake_) m.shake = shake_table(*src, tokens, *m.esm, m.dead);
    m.unbundled = std::move(r.unbundled);
    m.chains = std::move(r.chains);
    m.comments = std::move(r.comments);
    return true;
  }
  // A require in a branch the defines make dead is not followed (as esbuild drops it).
  if (defined(r.chains)) {
    std::vector<Token> tokens;
    ScanOptions with_tokens = scan_options_;
    with_tokens.tokens = &tokens;
    with_tokens.comments = false;
    ScanResult again = scan(*src, with_tokens);
    m.dead = dead_ranges(*src, tokens, again.chains, defines_);
  }
  auto is_dead = [&](std::uint32_t at) {
    for (const auto& d : m.dead) {
      if (d.begin > at) break;
      if (at < d.end) return true;
    }
    return false;
  };
  for (auto& d : r.deps)
    if (!is_dead(d.offset) && seen.insert(d.spec).second) m.deps.push_back(std::move(d));
  m.unbundled = std::move(r.unbundled);
  m.chains = std::move(r.chains);
  m.comments = std::move(r.comments);
  return true;
}

SharedBytes Graph::source(Module& m) {
  if (m.empty && !m.source) m.source = std::make_shared<const std::string>();
  if (m.source) return m.source;
  Stamp st;
  std::int64_t at = coarse_now_ns();
  std::string failure;
  SharedBytes src = load(m.path, st, failure);
  if (!src) return nullptr;
  m.read_at_ns = at;
  if (!(st == m.stamp)) {
    // Changed behind our back (stat mode between checks): make the next refresh re-scan it.
    m.stamp = Stamp{};
    m.checked_gen = ~std::uint64_t{0};
    invalidate();
  }
  m.source = src;
  source_bytes += src->size();
  return src;
}

void Graph::resolve_edges(Module& m) {
  auto g = generation();
  if (m.edges_gen == g) return;
  m.edges.clear();
  std::string dir = parent_dir(m.path);
  std::vector<std::string> probed;
  if (resolutions_gen_ != g) {
    resolutions_.clear();
    resolutions_gen_ = g;
  }
  std::string key;
  for (auto& d : m.deps) {
    Edge e;
    e.spec = d.spec;
    e.line = d.line;
    e.import = d.import;
    key.assign(dir).push_back(d.import ? '\1' : '\0');
    key.append(d.spec);
    auto cached = resolutions_.find(key);
    Resolved r = cached != resolutions_.end()
                     ? cached->second
                     : resolver_.resolve(dir, d.spec, &probed, d.import ? ImportKind::import : ImportKind::require);
    if (cached == resolutions_.end() && r.status == Resolved::ok) resolutions_.emplace(key, r);
    e.status = r.status;
    e.detail = r.detail;
    if (r.status == Resolved::ok) e.target = intern(r);
    m.edges.push_back(std::move(e));
  }
  if (use_inotify_ && watcher_.ok()) {
    std::sort(probed.begin(), probed.end());
    probed.erase(std::unique(probed.begin(), probed.end()), probed.end());
    for (auto& p : probed) watcher_.watch(abs(p));
  }
  m.edges_gen = g;
}

std::optional<GraphError> Graph::closure(std::uint32_t entry, Closure& out) {
  out.order.clear();
  out.dirs.clear();
  std::vector<bool> seen(modules_.size(), false);
  struct Frame {
    std::uint32_t id;
    std::size_t next_edge;
  };
  std::vector<Frame> stack;
  auto chain = [&]() {
    std::vector<std::string> c;
    for (auto& f : stack) c.push_back(modules_[f.id]->path);
    return c;
  };
  auto enter = [&](std::uint32_t id) -> std::optional<GraphError> {
    if (id >= seen.size()) seen.resize(modules_.size(), false);
    seen[id] = true;
    Module& m = *modules_[id];
    stack.push_back({id, 0});
    if (!refresh(m)) {
      m.checked_gen = ~std::uint64_t{0};  // errors are not kept: the next request looks at the file again
      GraphError e;
      e.status = m.stamp.exists ? 422 : 404;
      e.message = *m.error;
      e.chain = chain();
      return e;
    }
    resolve_edges(m);
    out.order.push_back(id);
    if (!m.empty) out.dirs.push_back(parent_dir(m.path));
    return std::nullopt;
  };
  if (auto e = enter(entry)) return e;
  while (!stack.empty()) {
    Frame& f = stack.back();
    Module& m = *modules_[f.id];
    if (f.next_edge >= m.edges.size()) {
      stack.pop_back();
      continue;
    }
    const std::size_t edge_index = f.next_edge++;
    const Edge edge = m.edges[edge_index];  // a copy: resolving a barrel view may re-read m (a cycle)
    if (edge.status != Resolved::ok) {
      m.edges_gen = ~std::uint64_t{0};  // resolve again next time: the file may have appeared
      GraphError e;
      e.status = edge.status == Resolved::forbidden ? 403 : 404;
      e.spec = edge.spec;
      const char* how = edge.import ? "' imported from " : "' required from ";
      e.message = "cannot find module '" + edge.spec + how + m.path + ":" + std::to_string(edge.line) +
                  (edge.detail.empty() ? "" : " (" + edge.detail + ")");
      if (edge.status == Resolved::forbidden) e.message = "module '" + edge.spec + how + m.path + " is outside the root";
      e.chain = chain();
      return e;
    }
    if (m.esm && edge.import) {
      const std::uint32_t from = m.id;
      if (auto view = barrel_view(m, edge, out)) {
        for (auto it = view->rbegin(); it != view->rend(); ++it)
          if (!(it->id < seen.size() && seen[it->id]))
            if (auto e = enter(it->id)) return e;
        out.views[{from, edge_index}] = std::move(*view);
        continue;
      }
    }
    if (edge.target < seen.size() && seen[edge.target]) continue;
    if (auto e = enter(edge.target)) return e;
  }
  std::sort(out.consulted.begin(), out.consulted.end());
  out.consulted.erase(std::unique(out.consulted.begin(), out.consulted.end()), out.consulted.end());
  std::vector<bool> in_order(modules_.size(), false);
  for (auto id : out.order) in_order[id] = true;
  std::erase_if(out.consulted, [&](std::uint32_t id) { return id < in_order.size() && in_order[id]; });
  std::sort(out.dirs.begin(), out.dirs.end());
  out.dirs.erase(std::unique(out.dirs.begin(), out.dirs.end()), out.dirs.end());
  return std::nullopt;
}

bool Graph::side_effect_free(Module& m) {
  auto g = generation();
  if (m.pure_gen != g) {
    m.pure = !m.empty && resolver_.side_effect_free(m.path);
    m.pure_gen = g;
  }
  return m.pure;
}

std::optional<std::vector<ViewTarget>> Graph::barrel_view(Module& importer, const Edge& edge, Closure& out) {
  const EsmModule& esm = *importer.esm;
  if (std::find(esm.whole.begin(), esm.whole.end(), edge.spec) != esm.whole.end()) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& [spec, name] : esm.imported)
    if (spec == edge.spec && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  if (names.empty()) return std::nullopt;  // `import 'x'`: the module itself
  Module& barrel = at(edge.target);
  if (!refresh(barrel) || !barrel.esm || !side_effect_free(barrel)) return std::nullopt;
  std::vector<ViewTarget> view;
  for (const auto& n : names) {
    Export x = find_export(edge.target, n, 0, out);
    if (x.status != Export::found || x.id == edge.target) return std::nullopt;
    view.push_back({n, x.id, x.name});
  }
  return view;
}

Graph::Export Graph::find_export(std::uint32_t id, const std::string& name, int depth, Closure& out) {
  Module& m = at(id);
  if (depth > 32 || !refresh(m) || !m.esm) return {};
  out.consulted.push_back(id);
  const auto& locals = m.esm->local_names;
  if (std::find(locals.begin(), locals.end(), name) != locals.end()) return {Export::found, id, name};
  // Copies: the recursion below may re-read this module (a cycle, after an edit).
  const auto reexports = m.esm->reexports;
  const auto stars = m.esm->stars;
  // Past this point the module is only passed through, so left out: it must be free of side effects.
  if (!side_effect_free(m)) return {};
  resolve_edges(m);
  auto target = [&](const std::string& spec) -> std::optional<std::uint32_t> {
    for (const auto& e : m.edges)
      if (e.spec == spec) return e.status == Resolved::ok ? std::optional(e.target) : std::nullopt;
    return std::nullopt;
  };
  for (const auto& r : reexports) {
    if (r[0] != name) continue;
    auto t = target(r[1]);
    if (!t) return {};
    if (r[2] == "*") return {Export::found, *t, "*"};
    Export x = find_export(*t, r[2], depth + 1, out);
    return x.status == Export::found ? x : Export{};
  }
  if (name == "default") return {Export::absent, 0, {}};
  Export found{Export::absent, 0, {}};
  for (const auto& s : stars) {
    auto t = target(s);
    if (!t) return {};
    Export x = find_export(*t, name, depth + 1, out);
    if (x.status == Export::unknown) return {};
    if (x.status == Export::absent) continue;
    if (found.status == Export::found && (found.id != x.id || found.name != x.name)) return {};  // ambiguous
    found = x;
  }
  return found;
}

std::uint64_t Graph::prebuild(ErrorStream& log) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  const std::string& root = resolver_.root();
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    auto ext = p.extension();
    if ((ext == ".js" || ext == ".cjs" || ext == ".mjs" || ext == ".json") && it->is_regular_file(ec)) {
      std::string rel = p.string().substr(root.size() + 1);
      Resolved r = resolver_.real(rel);  // real path, inside the root
      if (r.status == Resolved::ok && r.path == rel) files.push_back(rel);
    }
  }
  std::sort(files.begin(), files.end());
  std::uint64_t digest = 1469598103934665603ull;
  for (auto& f : files) {
    for (unsigned char c : f) digest = (digest ^ c) * 1099511628211ull;
    digest = (digest ^ 0xff) * 1099511628211ull;
    intern(f);  // ids in sorted order, before any resolution assigns others
  }
  std::size_t failed = 0;
  std::string first;
  for (auto& f : files) {
    Module& m = at(ids_.at(f));
    if (!refresh(m)) {
      if (!f.ends_with(".json") && failed++ < 3) first += "\n  " + *m.error;
      continue;
    }
    resolve_edges(m);
  }
  if (failed)
    log.write("bundler: prebuild: " + std::to_string(failed) + " of " + std::to_string(files.size()) +
              " files cannot be bundled (requests for them will answer with the error), e.g.:" + first);
  return digest;
}

}  // namespace csgi::mw::bundler
