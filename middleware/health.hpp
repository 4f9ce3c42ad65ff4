#pragma once
/// Health — answers a load balancer's or an orchestrator's health checks (HAProxy `option httpchk`,
/// Kubernetes readiness and liveness probes) without calling the app.
///
/// Readiness (`ready_path`, default "/readyz"): 200 "ready" while the server takes new work; 503
/// "draining" from the moment the adapter begins a graceful stop (ServerStats::draining() of
/// csgix.server_stats), so the balancer stops sending here while requests in flight finish, and 503
/// "not ready" while the optional `ready` check returns false (a database pool not connected yet).
/// Liveness (`live_path`, default "/livez"): 200 "alive" whenever the process answers, also while it
/// drains (restarting a draining process would only lose its requests). An empty path turns a check off.
/// GET and HEAD only (405 with Allow otherwise); every answer says Cache-Control: no-store.
///
/// Reads:  PATH_INFO (compared whole, under the stack's SCRIPT_NAME), REQUEST_METHOD,
///         csgix.server_stats (absent: readiness follows `ready` alone).
/// Writes: nothing in the env; the check's response.
/// Order:  outermost, or just inside access_log when probes should be logged: no other layer (auth,
///         access rules, rewriting) should stand between the balancer and its check.
#include <functional>
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct HealthOptions {
  std::string ready_path = "/readyz";
  std::string live_path = "/livez";
  /// Extra readiness condition, called per readiness check from any thread (must be thread-safe).
  std::function<bool()> ready;
};

class Health {
public:
  Health(App next, HealthOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  HealthOptions options_;
};

}  // namespace csgi::mw
