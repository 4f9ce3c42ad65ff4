#pragma once
/// Cors: Cross-Origin Resource Sharing (Fetch standard §3.2), as rack-cors and Starlette's CORSMiddleware do.
/// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here without calling the
/// app: 200 with the allowed method, headers and Access-Control-Max-Age, or 400 with the reason and no CORS
/// headers when the origin, method or a header is not allowed. Other requests go to the app; when their
/// Origin is allowed the response gets Access-Control-Allow-Origin (and -Credentials, -Expose-Headers). A
/// disallowed origin gets no CORS headers at all.
/// Reads:  REQUEST_METHOD, HTTP_ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD, HTTP_ACCESS_CONTROL_REQUEST_HEADERS.
/// Writes: response headers Access-Control-*, Vary (adds Origin unless every origin gets "*").
/// Order:  outside session and csrf, so that a preflight needs neither; inside reverse_proxy.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct CorsOptions {
  /// Allowed origins: exact ("https://app.example.com"), "*" for any, or one '*' standing for one or more
  /// DNS labels ("https://*.example.com" matches "https://a.b.example.com", not "https://example.com").
  std::vector<std::string> origins;
  /// Also allowed when it returns true for the Origin header's value (may be empty: origins only).
  std::function<bool(std::string_view origin)> allow_origin;
  /// Methods a preflight may ask for; "*" for any.
  std::vector<std::string> methods = {"GET", "HEAD", "POST"};
  /// Request headers a preflight may ask for (case-insensitive); "*" for any. The CORS-safelisted Accept,
  /// Accept-Language, Content-Language and Content-Type are always allowed.
  std::vector<std::string> headers;
  /// Response headers the browser may show the page (Access-Control-Expose-Headers).
  std::vector<std::string> expose_headers;
  /// Access-Control-Allow-Credentials: true (cookies, HTTP auth). The origin is then always echoed, never "*".
  bool credentials = false;
  /// Access-Control-Max-Age of a preflight answer, seconds; negative: not sent.
  std::int64_t max_age = 600;
};

class Cors {
public:
  /// Throws std::invalid_argument for an origin pattern with more than one '*', a method or header name
  /// that is not a token.
  explicit Cors(App next, CorsOptions options);
  Response operator()(Env& env);

  /// True when `origin` is allowed.
  bool allowed_origin(std::string_view origin) const;

private:
  Response preflight(std::string_view origin, std::string_view method, std::string_view headers) const;
  void add_origin_headers(Headers& h, std::string_view origin) const;

  App next_;
  CorsOptions options_;
  bool any_origin_ = false;
  bool any_method_ = false;
  bool any_header_ = false;
  std::string allow_methods_;  // the Access-Control-Allow-Methods value
  std::string allow_headers_;  // the Access-Control-Allow-Headers value (when not "*")
  std::string expose_;         // the Access-Control-Expose-Headers value
};

}  // namespace csgi::mw
