#pragma once
/// Runtime (Plack::Middleware::Runtime): adds `X-Runtime: <seconds>` — the time from the request
/// entering this layer to the response's status and headers being ready (for a delayed response, when
/// it answers), with microsecond precision ("0.000123").
/// Reads:  nothing from the env.
/// Writes: response header X-Runtime (or the configured name), replacing one set further in.
/// Order:  innermost to time the app alone; outermost to time the whole stack.
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct RuntimeOptions {
  std::string header = "X-Runtime";
};

/// The header's text for a duration: seconds with six decimals, as printf's "%.6f" writes them ("0.000123").
std::string runtime_text(double seconds);

class Runtime {
public:
  /// Throws std::invalid_argument for an empty header name.
  explicit Runtime(App next, RuntimeOptions options = {});
  Response operator()(Env& env);

private:
  App next_;
  RuntimeOptions options_;
};

}  // namespace csgi::mw
