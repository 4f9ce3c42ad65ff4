#pragma once
/// Builds a csgi::Response step by step (Plack::Response).
///
///   csgi::ResponseBuilder rb;
///   rb.content_type("text/html; charset=utf-8").body("<p>hi</p>");
///   csgi::SetCookie sid("sid", id);
///   sid.path = "/";
///   sid.http_only = true;
///   rb.cookie(sid);
///   return rb.finalize();
///
///   return csgi::ResponseBuilder().redirect("/login", 303).finalize();
///
/// Header names and values are checked when set: a name that is not an RFC 9110 token or a value holding
/// CR, LF or NUL throws std::invalid_argument (no header injection through user data). Each cookie()
/// adds one Set-Cookie field. finalize() adds Content-Type "text/plain; charset=utf-8" when the status
/// allows a body and none was set (spec: Content-Type is required except for 1xx/204/304).
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/cookie.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

class ResponseBuilder {
public:
  explicit ResponseBuilder(int status = 200);

  /// Sets the status; throws std::invalid_argument outside 100–999.
  ResponseBuilder& status(int code);
  int status() const noexcept { return status_; }

  /// Adds a header field (repeats kept).
  ResponseBuilder& header(std::string_view name, std::string_view value);
  /// Replaces every field named `name`.
  ResponseBuilder& set_header(std::string_view name, std::string_view value);
  ResponseBuilder& remove_header(std::string_view name);
  const Headers& headers() const noexcept { return headers_; }

  ResponseBuilder& content_type(std::string_view value) { return set_header("Content-Type", value); }
  ResponseBuilder& content_length(std::uint64_t n) { return set_header("Content-Length", std::to_string(n)); }
  ResponseBuilder& location(std::string_view url) { return set_header("Location", url); }

  /// Replaces the body (any body kind).
  ResponseBuilder& body(Body b);
  ResponseBuilder& body(std::string text) { return body(Body(std::move(text))); }
  ResponseBuilder& body(std::string_view text) { return body(Body(std::string(text))); }
  ResponseBuilder& body(const char* text) { return body(std::string_view(text)); }
  /// Appends to a text body (turning an empty body into text); throws std::logic_error on other kinds.
  ResponseBuilder& write(std::string_view text);

  /// Adds a Set-Cookie (validated now: see SetCookie::to_string()).
  ResponseBuilder& cookie(const SetCookie& c);
  ResponseBuilder& cookie(std::string name, std::string value);
  /// Removes cookie `name` in the browser (Max-Age=0).
  ResponseBuilder& expire_cookie(std::string name, std::string path = "/", std::string domain = {});

  /// Redirects to `url` (absolute or relative) with 301, 302, 303, 307 or 308; any other status throws
  /// std::invalid_argument, as does a URL holding CR, LF, NUL or spaces.
  ResponseBuilder& redirect(std::string_view url, int code = 302);

  /// The response; the builder is left empty (200, no headers, empty body).
  Response finalize();

private:
  int status_;
  Headers headers_;
  Body body_;
};

}  // namespace csgi
