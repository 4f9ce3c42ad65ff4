#include "csgi/adapters/standalone/detail/process/shared.hpp"

#include <cstdlib>
#include "csgi/adapters/standalone/detail/tls/tls.hpp"

#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"
#include "csgi/core/response.hpp"

namespace csgi::standalone::detail {

Shared::~Shared() { errors_owner->detach(); }

void Shared::init_status_lines() {
  for (int s = 100; s < 600; ++s) {
    std::string_view reason = reason_phrase(s);
    if (reason == "Unknown") reason = "";
    status_lines[s] = "HTTP/1.1 " + std::to_string(s) + " " + std::string(reason) + "\r\n";
  }
}

void Shared::configure(App a, const ServerOptions& o, ServerStats& s) {
  app = std::move(a);
  opt = o;
  body_memory = std::make_unique<BodyMemory>(opt.body_memory_bytes);
  body_limits.memory_bytes = opt.body_buffer_bytes;
  body_limits.memory = body_memory.get();
  if (!opt.body_temp_dir.empty())
    body_limits.temp_dir = opt.body_temp_dir;
  else if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp)
    body_limits.temp_dir = tmp;
  ws_budget = std::make_shared<ByteBudget>(opt.ws_process_buffer_bytes);
  proxy = ProxyTrust(opt.proxy_protocol, opt.trusted_proxies);
  init_status_lines();
  multithread = opt.threads > 1 || opt.app_threads > 0;
  multiprocess = opt.workers > 0;
  stats = &s;
}

}  // namespace csgi::standalone::detail
