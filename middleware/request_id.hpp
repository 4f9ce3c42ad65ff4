#pragma once
/// RequestId: gives every request an id, taken from the incoming `X-Request-Id` header when it is
/// valid (1–200 characters of [A-Za-z0-9-_.:+/=@]) and trusted, generated otherwise (32 random hex
/// digits), and echoes it in the response.
/// Reads:  HTTP_X_REQUEST_ID (or the configured header).
/// Writes: env `request_id.id` (text) and HTTP_X_REQUEST_ID (replaced with the id in use, so apps and
///         access_log's %{X-Request-Id}i see the same value); response header X-Request-Id.
/// Order:  outside access_log and anything that logs, so they see the id.
#include <functional>
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct RequestIdOptions {
  std::string header = "X-Request-Id";
  /// Use a valid incoming id (false: always generate; for edges facing untrusted clients).
  bool trust_incoming = true;
  /// Makes a new id; the default gives 32 random hex digits. Its result is validated like an incoming id.
  std::function<std::string()> generate;
};

class RequestId {
public:
  static constexpr std::string_view env_key = "request_id.id";

  /// Throws std::invalid_argument for an empty or malformed header name.
  explicit RequestId(App next, RequestIdOptions options = {});
  Response operator()(Env& env);

  /// True when `id` may be used as a request id.
  static bool valid(std::string_view id) noexcept;
  /// 32 hex digits from a per-thread generator seeded from the OS.
  static std::string random_id();

private:
  App next_;
  RequestIdOptions options_;
  std::string env_header_;  // HTTP_X_REQUEST_ID
};

}  // namespace csgi::mw
