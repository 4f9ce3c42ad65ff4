#include "csgi/core/app_failure.hpp"

#include "csgi/core/http_error.hpp"
#include "csgi/core/json.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"

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

Response app_failure_response(const Env& env, std::exception_ptr e) {
  int status = 500;
  std::string detail;
  try {
    if (e) std::rethrow_exception(e);
  } catch (const HttpError& x) {
    if (x.status() >= 100 && x.status() <= 999) status = x.status();
    if (status < 500) detail = x.what();
  } catch (...) {
  }
  if (status >= 500) env.errors().write(app_exception_line(env, status, e));
  return error_response(env, status, detail);
}

}  // namespace csgi
