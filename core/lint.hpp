#pragma once
/// Lint: checks that the adapter, the middleware and the app around it keep to spec/csgi.md (Rack::Lint,
/// Plack::Middleware::Lint, wsgiref.validate).
///
/// On the way in it checks the env (ENV-*, CORE-*, EXT-1), and replaces csgi.input and
/// csgix.informational with checking wrappers that forward to the originals (INPUT-1, EXT-5). On the way
/// out it checks that SCRIPT_NAME/PATH_INFO were restored (MW-3) and that nothing was added under the
/// reserved namespaces (MW-5), then the response: status and header list of every kind (RES-1…RES-14), the
/// trailer fields of streams and writers (RES-15), complete and file bodies at once, stream bodies chunk by
/// chunk (through csgi::on_response), delayed responses through a checking Responder and Writer (respond
/// twice, write after close, close twice, Content-Length against the bytes written).
///
/// A violation throws csgi::LintError, whose message starts with the rule ID:
///   [ENV-3] SCRIPT_NAME must be empty or start with '/', got "foo"
///
/// Reads:  every env key; the whole response.
/// Writes: csgi.input, csgix.informational (checking wrappers, left in place for the rest of the request).
/// Order:  anywhere, as often as wanted. Right inside the adapter it checks the adapter's env; around the
///         app it checks the app's response; middleware tests put one on each side of the middleware.
///         It holds no per-request state in members: one instance serves concurrent requests.
/// Cost:   a few allocations per request; meant for tests and development stacks.
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "csgi/core/app.hpp"

namespace csgi {

/// A breach of spec/csgi.md found by Lint. what() is "[RULE-ID] explanation".
class LintError : public std::logic_error {
public:
  LintError(std::string_view rule, std::string_view detail);
  /// The rule ID, e.g. "ENV-3".
  const std::string& rule() const noexcept { return rule_; }

private:
  std::string rule_;
};

class Lint {
public:
  /// Throws std::invalid_argument when `next` is empty (MW-4).
  explicit Lint(App next);
  Response operator()(Env& env) const;

  /// The IDs of the spec rules Lint enforces, grouped by area.
  static std::span<const std::string_view> rules() noexcept;

  /// The checks Lint makes on an env on the way in (without wrapping anything). Throws LintError.
  static void check_env(const Env& env);
  /// The checks Lint makes on a final response's status and headers. Throws LintError.
  static void check_head(int status, const Headers& headers);

private:
  App next_;
};

}  // namespace csgi
