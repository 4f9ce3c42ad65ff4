#pragma once
/// A read-only view of a request (Plack::Request): accessors over the env, and lazily parsed query,
/// form, multipart, cookies and body.
///
///   csgi::Response app(csgi::Env& env) {
///     csgi::Request req(env);
///     auto name = req.param("name").value_or("world");
///     if (const csgi::Upload* f = req.upload("avatar")) f->save_as("/srv/avatars/x");
///     ...
///   }
///
/// Nothing is parsed until asked for. What is parsed is cached in the env under the `csgi.request.*` keys
/// below, so several Request objects (in several middleware and the app) on one request parse once; the
/// references returned live until the env is cleared. The query and cookie caches are rebuilt when a
/// middleware replaces QUERY_STRING or HTTP_COOKIE.
///
/// Body parsing: application/x-www-form-urlencoded bodies are read (up to `max_form_size`) and parsed;
/// multipart/form-data bodies are streamed through csgi::MultipartParser, files above the memory
/// threshold landing in temp files that are removed when the env is cleared; other bodies give no
/// parameters. The `csgix.body_limit` env key, when set, caps every read. Malformed input throws
/// csgi::BadRequest, oversized input csgi::PayloadTooLarge (adapters answer 400/413). docs/request.md
/// shows it all with examples.
/// Reads: the CGI keys, HTTP_*, csgi.url_scheme, csgi.input, csgix.body_limit.
/// Writes: csgi.request.query, csgi.request.body, csgi.request.params, csgi.request.cookies,
///         csgi.request.content.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/env.hpp"
#include "csgi/core/multipart.hpp"
#include "csgi/core/query.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

namespace request_keys {
inline constexpr std::string_view query = "csgi.request.query";      // object csgi::ParsedQuery
inline constexpr std::string_view body = "csgi.request.body";        // object csgi::FormData
inline constexpr std::string_view params = "csgi.request.params";    // object csgi::ParsedQuery (merged)
inline constexpr std::string_view cookies = "csgi.request.cookies";  // object csgi::ParsedQuery
inline constexpr std::string_view content = "csgi.request.content";  // object std::string
}  // namespace request_keys

struct RequestLimits {
  QueryLimits query;
  MultipartLimits multipart;
  /// Bytes of an application/x-www-form-urlencoded body.
  std::size_t max_form_size = 8 * 1024 * 1024;
  /// Bytes content() reads.
  std::size_t max_content_size = 64 * 1024 * 1024;
};

/// Parameters cached in the env together with the text they were parsed from.
struct ParsedQuery {
  std::string_view source;  // the env value parsed (identity, not a copy)
  const void* from = nullptr;
  Params params;
};

class Request {
public:
  explicit Request(Env& env) noexcept;
  /// `limits` must outlive the Request.
  Request(Env& env, const RequestLimits& limits) noexcept : env_(env), limits_(&limits) {}
  Request(Env& env, RequestLimits&&) = delete;

  Env& env() const noexcept { return env_; }

  std::string_view method() const noexcept { return env_.get(keys::REQUEST_METHOD); }
  std::string_view protocol() const noexcept { return env_.get(keys::SERVER_PROTOCOL); }
  std::string_view script_name() const noexcept { return env_.get(keys::SCRIPT_NAME); }
  std::string_view path_info() const noexcept { return env_.get(keys::PATH_INFO); }
  /// PATH_INFO, or "/" when it is empty.
  std::string_view path() const noexcept;
  std::string_view request_uri() const noexcept { return env_.get(keys::REQUEST_URI); }
  std::string_view query_string() const noexcept { return env_.get(keys::QUERY_STRING); }
  /// "http" or "https".
  std::string_view scheme() const noexcept { return env_.get(keys::url_scheme, "http"); }
  bool secure() const noexcept { return scheme() == "https"; }
  /// The Host header, else SERVER_NAME (with ":SERVER_PORT" unless it is the scheme's default).
  std::string host() const;
  std::string_view server_name() const noexcept { return env_.get(keys::SERVER_NAME); }
  std::string_view port() const noexcept { return env_.get(keys::SERVER_PORT); }
  std::string_view remote_addr() const noexcept { return env_.get(keys::REMOTE_ADDR); }
  std::string_view remote_port() const noexcept { return env_.get(keys::REMOTE_PORT); }
  std::string_view user() const noexcept { return env_.get(keys::REMOTE_USER); }
  std::string_view user_agent() const noexcept { return env_.get(keys::HTTP_USER_AGENT); }
  std::string_view referer() const noexcept { return env_.get(keys::HTTP_REFERER); }

  /// CONTENT_TYPE as sent ("text/html; charset=utf-8").
  std::string_view content_type() const noexcept { return env_.get(keys::CONTENT_TYPE); }
  /// The media type of CONTENT_TYPE without parameters ("text/html"), as sent (compare case-insensitively).
  std::string_view media_type() const noexcept;
  /// CONTENT_LENGTH, when present and a number.
  std::optional<std::uint64_t> content_length() const noexcept;

  /// One request header by its HTTP name ("User-Agent"); repeated fields come joined with ", " (Cookie:
  /// "; ").
  std::optional<std::string_view> header(std::string_view name) const noexcept;
  /// Every request header, rebuilt from CONTENT_* and HTTP_* ("HTTP_X_FOO" → "X-Foo").
  Headers headers() const;

  /// scheme://host + SCRIPT_NAME (or "/"): the application's root.
  std::string base() const;
  /// The full request URI rebuilt from the env (path re-encoded, query as sent).
  std::string uri() const;

  /// QUERY_STRING parameters.
  const Params& query_parameters() const;
  /// Form body parameters (urlencoded or multipart text fields); empty for other bodies.
  const Params& body_parameters() const;
  /// Query then body parameters.
  const Params& parameters() const;
  /// The first value of `name` in parameters().
  std::optional<std::string_view> param(std::string_view name) const { return parameters().get(name); }
  /// Files of a multipart/form-data body.
  const Uploads& uploads() const;
  const Upload* upload(std::string_view name) const { return uploads().get(name); }
  /// Cookies of the Cookie header (csgi::parse_cookies).
  const Params& cookies() const;
  std::optional<std::string_view> cookie(std::string_view name) const { return cookies().get(name); }
  /// The whole request body, read once and cached (rewinding csgi.input when it is seekable). Throws
  /// std::logic_error when a multipart body was already streamed from an input that cannot rewind.
  std::string_view content() const;

private:
  const FormData& form() const;
  std::size_t body_limit(std::size_t own) const noexcept;
  Env& env_;
  const RequestLimits* limits_;
};

}  // namespace csgi
