#include "csgi/middleware/metrics.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include "csgi/core/http_error.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/process.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/worker_board.hpp"

namespace csgi::mw {

namespace {

using U64 = std::atomic<std::uint64_t>;
// Shared between processes through a MAP_SHARED mapping: the atomics must work on the memory itself.
static_assert(U64::is_always_lock_free, "Metrics needs lock-free 64-bit atomics");
static_assert(std::is_trivially_destructible_v<U64>);

constexpr std::array<std::string_view, 8> method_names{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS",
                                                       "other"};
constexpr std::array<std::string_view, 6> class_names{"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
constexpr std::size_t bucket_count = std::size(Metrics::buckets) + 1;  // + Inf

std::size_t method_index(std::string_view m) noexcept {
  for (std::size_t i = 0; i + 1 < method_names.size(); ++i)
    if (m == method_names[i]) return i;
  return method_names.size() - 1;
}

std::size_t class_index(int status) noexcept {
  return status >= 100 && status <= 599 ? static_cast<std::size_t>(status / 100 - 1) : class_names.size() - 1;
}

std::size_t bucket_index(std::uint64_t ns) noexcept {
  std::size_t i = 0;
  while (i < std::size(Metrics::buckets) && static_cast<double>(ns) > Metrics::buckets[i] * 1e9) ++i;
  return i;
}

std::uint64_t content_length(std::string_view v) noexcept {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && end == v.data() + v.size() ? n : 0;
}

std::string number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t v) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(std::to_string(v)).append("\n");
}

std::string label_value(std::string_view v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out.push_back('\\');
    if (ch == '\n') {
      out.append("\\n");
      continue;
    }
    out.push_back(ch);
  }
  return out;
}

// The adapter's WorkerBoard: gauges summed over every worker process, restarts, accept queues.
void render_board(std::string& out, const WorkerBoard& board) {
  WorkerBoard::Totals t = board.totals();
  header(out, "csgi_workers", "gauge", "Server processes serving requests (prefork workers, or this one process).");
  sample(out, "csgi_workers", "", t.workers);
  header(out, "csgi_worker_restarts_total", "counter", "Workers replaced, by cause.");
  for (std::size_t i = 0; i < t.restarts.size(); ++i)
    sample(out, "csgi_worker_restarts_total", "cause=\"" + std::string(WorkerBoard::cause_names[i]) + "\"", t.restarts[i]);
  header(out, "csgi_connections_open", "gauge", "Client connections open, over all workers.");
  sample(out, "csgi_connections_open", "", t.connections_open);
  header(out, "csgi_connections_idle", "gauge", "Keep-alive connections waiting for their next request, over all workers.");
  sample(out, "csgi_connections_idle", "", t.connections_idle);
  header(out, "csgi_app_queue_length", "gauge", "Requests waiting for an app thread (--app-threads), over all workers.");
  sample(out, "csgi_app_queue_length", "", t.app_queued);
  header(out, "csgi_app_threads_busy", "gauge", "App threads running the app (--app-threads), over all workers.");
  sample(out, "csgi_app_threads_busy", "", t.app_busy);
  std::vector<WorkerBoard::Backlog> backlogs = board.backlogs();
  if (backlogs.empty()) return;
  header(out, "csgi_listen_queue_length", "gauge", "Connections in a listening socket's accept queue.");
  for (const auto& b : backlogs) sample(out, "csgi_listen_queue_length", "listener=\"" + label_value(b.listener) + "\"", b.queued);
  header(out, "csgi_listen_queue_limit", "gauge", "A listening socket's accept queue limit (its listen() backlog).");
  for (const auto& b : backlogs) sample(out, "csgi_listen_queue_limit", "listener=\"" + label_value(b.listener) + "\"", b.limit);
}

}  // namespace

// True while process `pid` exists (a worker that died, even by SIGKILL, leaves its count behind).
bool alive(int pid) noexcept { return pid > 0 && (pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM); }

struct Metrics::Counters {
  std::array<std::array<U64, class_names.size()>, method_names.size()> requests{};
  // Requests in the app, per process: a worker that ends with requests inside the app (a contained fault,
  // a request timeout, SIGKILL) takes its count with it. A process past the last free slot counts in
  // in_flight.
  struct alignas(64) InFlight {
    std::atomic<int> pid{0};
    U64 n{0};
  };
  std::array<InFlight, 256> in_flight_by_process{};
  alignas(64) U64 in_flight{0};
  alignas(64) U64 bytes_in{0};
  U64 bytes_out{0};
  std::array<U64, bucket_count> duration_buckets{};  // per bucket, not cumulative
  U64 duration_ns{0};

  void record(std::size_t method, int status, std::chrono::steady_clock::time_point start) noexcept {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    std::uint64_t d = ns > 0 ? static_cast<std::uint64_t>(ns) : 0;
    requests[method][class_index(status)].fetch_add(1, std::memory_order_relaxed);
    duration_buckets[bucket_index(d)].fetch_add(1, std::memory_order_relaxed);
    duration_ns.fetch_add(d, std::memory_order_relaxed);
  }

  // This process's in-flight count: found once per process and thread (fork_generation tells a forked
  // child), claimed from a free slot or one whose process is gone.
  U64& in_flight_here() noexcept {
    struct Cache {
      const Counters* counters = nullptr;
      unsigned generation = 0;
      U64* n = nullptr;
    };
    thread_local Cache cache;
    unsigned gen = fork_generation();
    if (cache.counters == this && cache.generation == gen) return *cache.n;
    int me = ::getpid();
    U64* found = &in_flight;
    for (InFlight& f : in_flight_by_process)
      if (f.pid.load(std::memory_order_acquire) == me) found = &f.n;
    for (std::size_t i = 0; found == &in_flight && i < in_flight_by_process.size(); ++i) {
      InFlight& f = in_flight_by_process[i];
      int owner = f.pid.load(std::memory_order_acquire);
      if (owner == -1 || (owner > 0 && alive(owner))) continue;    // being claimed, or in use
      if (!f.pid.compare_exchange_strong(owner, -1)) continue;     // free, or a gone process's: claimed
      f.n.store(0, std::memory_order_relaxed);
      f.pid.store(me, std::memory_order_release);
      found = &f.n;
    }
    cache = {this, gen, found};
    return *found;
  }

  std::uint64_t in_flight_now() const noexcept {
    std::uint64_t sum = in_flight.load(std::memory_order_relaxed);
    for (const InFlight& f : in_flight_by_process) {
      int owner = f.pid.load(std::memory_order_acquire);
      if (owner > 0 && alive(owner)) sum += f.n.load(std::memory_order_relaxed);
    }
    return sum;
  }
};
// Released with munmap alone: no destructor to run.
static_assert(std::is_trivially_destructible_v<Metrics::Counters>);

namespace {

// The counters in an anonymous shared mapping: children forked after this share them.
std::shared_ptr<Metrics::Counters> shared_counters() {
  std::size_t size = sizeof(Metrics::Counters);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "Metrics: mmap");
  auto* c = new (p) Metrics::Counters();
  return std::shared_ptr<Metrics::Counters>(c, [size](Metrics::Counters* q) { ::munmap(q, size); });
}

Response metrics_answer(int status, std::string body, std::string content_type = "text/plain; charset=utf-8") {
  Response r = Response::text(status, std::move(body), std::move(content_type));
  r.headers.set("Cache-Control", "no-store");
  return r;
}

bool forwarded(const Env& env) {
  return env.find(keys::HTTP_FORWARDED) || env.find(keys::HTTP_X_FORWARDED_FOR) || env.find(keys::HTTP_X_REAL_IP);
}

// Whether `authorization` is "Bearer <token>" (the scheme in any case), the token compared in constant time.
bool bearer_matches(std::string_view authorization, const std::string& token) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() != scheme.size() + token.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return false;
  // Every byte is compared whatever the first difference (libcrypto's CRYPTO_memcmp would map libcrypto
  // into every csgi process for this one call).
  unsigned char difference = 0;
  for (std::size_t i = 0; i < token.size(); ++i)
    difference |= static_cast<unsigned char>(authorization[scheme.size() + i] ^ token[i]);
  return difference == 0;
}

}  // namespace

Metrics::Metrics(App next, MetricsOptions options)
    : next_(std::move(next)), options_(std::move(options)), allow_(options_.allow_from) {
  if (!next_) throw std::invalid_argument("Metrics: no next app");
  if (options_.path.empty() || options_.path.front() != '/')
    throw std::invalid_argument("Metrics: the path starts with '/': " + options_.path);
  counters_ = shared_counters();
}

Response Metrics::operator()(Env& env) {
  auto start = std::chrono::steady_clock::now();
  std::string_view method = env.get(keys::REQUEST_METHOD);
  std::size_t m = method_index(method);
  Counters& c = *counters_;
  if (std::string_view cl = env.get(keys::CONTENT_LENGTH); !cl.empty())
    c.bytes_in.fetch_add(content_length(cl), std::memory_order_relaxed);
  U64& here = c.in_flight_here();
  here.fetch_add(1, std::memory_order_relaxed);
  struct InFlight {
    U64& n;
    ~InFlight() { n.fetch_sub(1, std::memory_order_relaxed); }
  } in_flight{here};
  Response res;
  try {
    if (env.get(keys::PATH_INFO) != options_.path) {
      res = next_(env);
    } else if (!allow_.empty() && !allow_.contains(env.get(keys::REMOTE_ADDR))) {
      res = metrics_answer(403, "403 Forbidden\n");
    } else if (!options_.bearer_token.empty() &&
               !bearer_matches(env.get(keys::HTTP_AUTHORIZATION), options_.bearer_token)) {
      res = metrics_answer(401, "401 Unauthorized: send Authorization: Bearer <token>\n");
      res.headers.set("WWW-Authenticate", "Bearer realm=\"metrics\"");
    } else if (options_.bearer_token.empty() && !options_.trust_forwarded && forwarded(env)) {
      res = metrics_answer(403, "403 Forbidden: a forwarded request (a proxy's client) may not scrape without a token\n");
    } else if (method != "GET" && method != "HEAD") {
      res = metrics_answer(405, "405 Method Not Allowed\n");
      res.headers.add("Allow", "GET, HEAD");
    } else {
      res = metrics_answer(200, render(env), "text/plain; version=0.0.4; charset=utf-8");
    }
  } catch (const HttpError& e) {
    c.record(m, e.status(), start);
    throw;
  } catch (...) {
    c.record(m, 500, start);
    throw;
  }
  if (res.is_delayed()) {
    auto counters = counters_;
    return on_headers(std::move(res), [counters, m, start](Response& r) { counters->record(m, r.status, start); });
  }
  c.record(m, res.status, start);
  if (m != 1 && !status_has_no_body(res.status))
    if (auto n = res.known_length()) c.bytes_out.fetch_add(*n, std::memory_order_relaxed);
  return res;
}

std::string Metrics::render() const {
  Env env;
  return render(env);
}

std::string Metrics::render(const Env& env) const {
  const Counters& c = *counters_;
  auto ld = [](const U64& a) { return a.load(std::memory_order_relaxed); };
  std::string out;
  out.reserve(4096);
  header(out, "csgi_http_requests_total", "counter", "HTTP requests answered, by method and status class.");
  for (std::size_t m = 0; m < method_names.size(); ++m)
    for (std::size_t k = 0; k < class_names.size(); ++k)
      if (std::uint64_t v = ld(c.requests[m][k]); v || (m == 0 && k == 1))
        sample(out, "csgi_http_requests_total",
               "method=\"" + std::string(method_names[m]) + "\",code=\"" + std::string(class_names[k]) + "\"", v);
  header(out, "csgi_http_requests_in_flight", "gauge", "HTTP requests inside the app now.");
  sample(out, "csgi_http_requests_in_flight", "", c.in_flight_now());
  header(out, "csgi_http_request_body_bytes_total", "counter", "Request body bytes, by Content-Length.");
  sample(out, "csgi_http_request_body_bytes_total", "", ld(c.bytes_in));
  header(out, "csgi_http_response_body_bytes_total", "counter", "Response body bytes of bodies of known length.");
  sample(out, "csgi_http_response_body_bytes_total", "", ld(c.bytes_out));
  header(out, "csgi_http_request_duration_seconds", "histogram", "Time until the response status and headers were known.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    cumulative += ld(c.duration_buckets[i]);
    std::string le = i < std::size(buckets) ? number(buckets[i]) : "+Inf";
    sample(out, "csgi_http_request_duration_seconds_bucket", "le=\"" + le + "\"", cumulative);
  }
  out.append("csgi_http_request_duration_seconds_sum ").append(number(static_cast<double>(ld(c.duration_ns)) / 1e9)).append("\n");
  sample(out, "csgi_http_request_duration_seconds_count", "", cumulative);
  if (const auto* stats = env.object<ServerStats>(keys::x::server_stats); stats && stats->adapter_attached()) {
    ServerStats::Snapshot s = stats->snapshot();
    std::string pid = "pid=\"" + std::to_string(::getpid()) + "\"";
    header(out, "csgi_worker_connections_open", "gauge", "Connections open in this worker process.");
    sample(out, "csgi_worker_connections_open", pid, s.connections_open);
    header(out, "csgi_worker_connections_total", "counter", "Connections accepted by this worker process.");
    sample(out, "csgi_worker_connections_total", pid, s.connections_total);
    header(out, "csgi_worker_requests_busy", "gauge", "Requests in progress in this worker process.");
    sample(out, "csgi_worker_requests_busy", pid, s.workers_busy);
    if (const WorkerBoard* board = stats->board()) render_board(out, *board);
  }
  return out;
}

}  // namespace csgi::mw
