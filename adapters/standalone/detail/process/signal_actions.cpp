#include "csgi/adapters/standalone/detail/process/signal_actions.hpp"

#include <string.h>

#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/core/log_files.hpp"

namespace csgi::standalone::detail {

void reopen_logs(Shared& sh) {
  for (const std::string& e : log_files::reopen_all()) sh.errors.write("csgi: " + e);
}

void reload_tls(Shared& sh) {
  if (!sh.tls) return;
  std::string err = sh.tls->reload();
  if (!err.empty()) sh.errors.write("csgi: TLS certificates not reloaded, the previous ones stay: " + err);
  else if (std::string notes = sh.tls->notes(); !notes.empty()) sh.errors.write("csgi: " + notes);
}

void log_signal(Shared& sh, int sig, const std::string& what) {
  const char* name = ::sigabbrev_np(sig);
  sh.errors.write("csgi: SIG" + std::string(name ? name : std::to_string(sig)) + ": " + what);
}

std::string seconds_text(std::chrono::milliseconds d) {
  std::string n = std::to_string(d.count() / 1000);
  if (d.count() % 1000) n += "." + std::to_string(d.count() % 1000 + 1000).substr(1);
  return n + " s";
}

}  // namespace csgi::standalone::detail
