// The csgi side of bench/suites/app_threads.sh: a mixed workload in one app library. /db blocks its thread
// for the given milliseconds (a database call; default 20, or the first --app-arg), /fast answers at once,
// anything else is 404. The same shape as the Python app the suite serves under gunicorn, uWSGI and
// csgi serve --wsgi.
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "csgi/core/app_library.hpp"
#include "csgi/core/keys.hpp"

namespace {
csgi::App make_app(const csgi::AppArgs& args) {
  const std::chrono::milliseconds db_time(args.empty() ? 20 : std::stoi(args.front()));
  return [db_time](csgi::Env& env) {
    const std::string_view path = env.get(csgi::keys::PATH_INFO);
    if (path == "/fast") return csgi::Response::text(200, "fast\n", "text/plain");
    if (path == "/db") {
      std::this_thread::sleep_for(db_time);
      return csgi::Response::text(200, "db\n", "text/plain");
    }
    return csgi::Response::text(404, "not found\n", "text/plain");
  };
}
}  // namespace

CSGI_APP(make_app)
