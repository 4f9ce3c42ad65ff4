#include "csgi/adapters/standalone/detail/process/shared.hpp"

#include "csgi/adapters/standalone/detail/tls/tls.hpp"
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

}  // namespace csgi::standalone::detail
