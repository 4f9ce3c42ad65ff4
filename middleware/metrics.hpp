#pragma once
/// Metrics — the server's request counters in the Prometheus text exposition format (0.0.4), at GET
/// `path` (default "/metrics"), for a Prometheus server to scrape.
///
/// Counted by this layer, for every request that passes through it (the scrapes included):
///   csgi_http_requests_total{method,code}        by method (GET HEAD POST PUT DELETE PATCH OPTIONS, else
///                                                 "other") and status class ("1xx" … "5xx", "other")
///   csgi_http_requests_in_flight                 requests inside the app right now
///   csgi_http_request_body_bytes_total           request bodies by CONTENT_LENGTH
///   csgi_http_response_body_bytes_total          response bodies of known length (string, bytes, file;
///                                                 not streams; nothing for HEAD or a bodiless status)
///   csgi_http_request_duration_seconds           histogram of the time until the status and headers are
///                                                 known (for a delayed response: until it answers)
/// The counters live in an anonymous MAP_SHARED mapping made when the layer is built: `csgi serve
/// --workers N` builds the app in the master before it forks, so every worker adds into the same
/// counters and a scrape of any worker reports the sum over all of them.
/// From csgix.server_stats (when the adapter provides it), this worker's own gauges, labelled with its
/// pid: csgi_worker_connections_open, csgi_worker_requests_busy, csgi_worker_connections_total.
/// From the adapter's WorkerBoard (ServerStats::board(): the standalone server keeps one, in shared memory,
/// for all its workers), summed over every worker process:
///   csgi_workers                                 processes serving
///   csgi_worker_restarts_total{cause}            workers replaced: crash, timeout (--request-timeout),
///                                                 max_requests, memory (--max-worker-memory)
///   csgi_connections_open, csgi_connections_idle  connections open; keep-alive ones waiting for a request
///   csgi_app_queue_length, csgi_app_threads_busy  the app executor (--app-threads): waiting requests, busy threads
///   csgi_listen_queue_length{listener}, csgi_listen_queue_limit{listener}
///                                                 each TCP listening socket's accept queue (Linux TCP_INFO)
///
/// Scrapes are answered only to clients whose REMOTE_ADDR is in `allow_from` (default loopback; empty
/// list: any client); others get 403. A reverse proxy on the same host connects from loopback for every
/// client it forwards, so a request that carries a forwarding header (Forwarded, X-Forwarded-For,
/// X-Real-IP) is refused too (403) unless `trust_forwarded` (set it when a reverse_proxy layer in front
/// has put the client's address in REMOTE_ADDR). With `bearer_token` set, a scrape must also carry
/// `Authorization: Bearer <token>` (compared in constant time; 401 with WWW-Authenticate otherwise), and
/// then a forwarded one is accepted. GET and HEAD only (405 with Allow otherwise).
/// Reads:  PATH_INFO (compared whole), REQUEST_METHOD, REMOTE_ADDR, HTTP_AUTHORIZATION, HTTP_FORWARDED,
///         HTTP_X_FORWARDED_FOR, HTTP_X_REAL_IP, CONTENT_LENGTH, csgix.server_stats (and its board).
/// Writes: nothing in the env; the scrape's response.
/// Order:  outermost (or just inside access_log), so that it counts what every other layer answers.
#include <memory>
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/cidr.hpp"

namespace csgi::mw {

struct MetricsOptions {
  std::string path = "/metrics";
  /// Client addresses (CIDR blocks) that may scrape; empty: any client.
  std::vector<std::string> allow_from = {"127.0.0.0/8", "::1"};
  /// Non-empty: a scrape needs `Authorization: Bearer <bearer_token>` as well.
  std::string bearer_token;
  /// A request with a forwarding header may scrape without the token (REMOTE_ADDR is the client's).
  bool trust_forwarded = false;
};

class Metrics {
public:
  /// Upper bounds (seconds) of the duration histogram's buckets; +Inf follows.
  static constexpr double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                       0.1,    0.25,  0.5,    1,     2.5,   5,     10};
  struct Counters;

  /// Throws std::invalid_argument for a path without a leading '/' or a malformed allow_from entry,
  /// std::system_error when the shared mapping cannot be made.
  Metrics(App next, MetricsOptions options = {});
  Response operator()(Env& env);
  /// The exposition text as a scrape would show it (without the per-worker gauges).
  std::string render() const;

private:
  std::string render(const Env& env) const;

  App next_;
  MetricsOptions options_;
  CidrSet allow_;
  std::shared_ptr<Counters> counters_;  // in the shared mapping
};

}  // namespace csgi::mw
