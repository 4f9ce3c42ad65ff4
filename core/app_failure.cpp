#include "csgi/core/app_failure.hpp"

#include "csgi/core/keys.hpp"

namespace csgi {

std::string app_failure_line(const Env& env, int status, std::string_view what) {
  std::string line = status ? "csgi: " + std::to_string(status) + " for \"" : std::string("csgi: response cut short for \"");
  line += env.get(keys::REQUEST_METHOD);
  line += ' ';
  line += env.get(keys::REQUEST_URI);
  if (std::string_view protocol = env.get(keys::SERVER_PROTOCOL); !protocol.empty()) {
    line += ' ';
    line += protocol;
  }
  line += "\": ";
  line += what;
  return line;
}

std::string app_exception_line(const Env& env, int status, std::exception_ptr e) {
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return app_failure_line(env, status, std::string("the app raised: ") + x.what());
  } catch (...) {
  }
  return app_failure_line(env, status, "the app raised a non-standard exception");
}

}  // namespace csgi
