#pragma once
/// Builds the CGI part of an env from a parsed HTTP request: the one place where adapters turn a request
/// line and header fields into REQUEST_METHOD, SCRIPT_NAME, PATH_INFO, REQUEST_URI, QUERY_STRING,
/// SERVER_*, CONTENT_*, HTTP_* (spec rules ENV-1…ENV-12). Values point into the request buffer where
/// they can (set_view), otherwise into the env's arena: no heap allocation.
#include <string_view>

#include "csgi/core/env.hpp"

namespace csgi {

struct RequestHead {
  std::string_view method;
  std::string_view target;                    // origin-form "/path?query" or absolute-form
  std::string_view protocol = "HTTP/1.1";
};

/// What the connection a request came on says about it: the server address it reached, the peer, the
/// scheme and the mount prefix (SERVER_*, REMOTE_*, csgi.url_scheme, SCRIPT_NAME).
struct ConnectionInfo {
  std::string_view server_name = "localhost";
  std::string_view server_port = "80";
  std::string_view remote_addr;
  std::string_view remote_port;
  std::string_view url_scheme = "http";
  std::string_view script_name;  // mount prefix, "" or "/prefix"
};

/// Fills method, URI, path and server keys, and csgi.version/csgi.url_scheme. SCRIPT_NAME/PATH_INFO come
/// from canonical_path, so no app sees a dot segment. Throws csgi::BadRequest for a target that is not
/// origin- or absolute-form, a malformed %-escape or %00 in the path, or a ".." canonical_path refuses.
/// All views must outlive the request.
void populate_env(Env& env, const RequestHead& head, const ConnectionInfo& conn);

/// The request path as every app sees it (ENV-5): `raw` (a target's path, "" or starting with '/')
/// percent-decoded once, then its dot segments removed (remove_dot_segments). Returns `raw` itself when
/// nothing changes, else a view into the env's arena. Throws csgi::BadRequest for a malformed escape, a
/// NUL, or a ".." that climbs above the root or follows an empty segment.
std::string_view canonical_path(Env& env, std::string_view raw);

/// The same for a path that arrives already decoded (a front server's SCRIPT_NAME or PATH_INFO, a WSGI
/// host's environ): only its dot segments are removed, and a ".." climbs no higher than its own root.
std::string_view without_dot_segments(Env& env, std::string_view decoded);

/// A SCRIPT_NAME that arrives decoded (from a front server or a WSGI host) as ENV-3 and ENV-5 want it:
/// without_dot_segments, then without trailing '/' ("/app/.." → "", "/app/." → "/app").
std::string_view canonical_script_name(Env& env, std::string_view decoded);

/// The env key of request header field `name`, the one header-to-env rule of every adapter and bridge:
/// Content-Type/Content-Length become CONTENT_TYPE/CONTENT_LENGTH (ENV-11); other names become
/// HTTP_<UPPER_WITH_UNDERSCORES> (ENV-9), written into the env's arena. "" for a name that gets no key: empty,
/// over 256 bytes, holding a byte other than a letter, a digit or '-' ('_' among them), or `Proxy`
/// (httpoxy) (ENV-10).
std::string_view header_key(Env& env, std::string_view name);

/// The same rule for a header that arrives as a CGI meta-variable already named (a front server's
/// FastCGI/CGI params, a WSGI host's environ), where the field's own name is no longer known: true for
/// HTTP_ + [A-Z0-9_]+, other than HTTP_CONTENT_TYPE, HTTP_CONTENT_LENGTH (ENV-11) and HTTP_PROXY (ENV-10).
bool header_meta_variable(std::string_view key) noexcept;

/// Adds one request header field under header_key(); a repeated field is joined with ", " ("; " for
/// Cookie) (ENV-9). Returns false when the field was dropped.
bool add_header(Env& env, std::string_view name, std::string_view value);

/// True when `host` is a syntactically valid Host field value (RFC 9110 §7.2: uri-host [":" port]): a
/// reg-name, IPv4 address or bracketed IP literal, and an all-digit port. Empty is invalid for http(s).
bool valid_host(std::string_view host) noexcept;

/// The authority of an absolute-form request target ("http://a.example:8080/x" → "a.example:8080"), or
/// "" for any other form. RFC 9112 §3.2.2: it replaces the Host field.
std::string_view target_authority(std::string_view target) noexcept;

/// Sets SERVER_NAME from Host when present (without the port; an IPv6 literal keeps its brackets), as CGI
/// servers do. A Host with no name (":8080", "[::1" unclosed) leaves SERVER_NAME as it is.
void set_server_from_host(Env& env);
/// The same, and SERVER_PORT: Host's port, else `default_port` (a host that knows no server address,
/// e.g. an ASGI scope without "server"). `default_port` must outlive the request.
void set_server_from_host(Env& env, std::string_view default_port);

/// How the serving process runs apps: what csgi.multithread, csgi.multiprocess and csgi.run_once say.
struct ServerModel {
  bool multithread = false;   // an app may be called from several threads at once
  bool multiprocess = false;  // and from several processes
  bool run_once = false;      // the process serves one request (CGI)
};

/// Sets the boolean keys every adapter sets (CORE-6): csgi.multithread, csgi.multiprocess and
/// csgi.run_once from `model`, csgi.nonblocking false and csgi.streaming true (no csgi adapter runs apps
/// nonblocking, every one streams). The keys are constants kept by view, and the call is inline: on an
/// adapter's per-request path it costs five stores.
inline void set_server_flags(Env& env, const ServerModel& model) {
  auto put = [&env](std::string_view key, bool value) {
    *env.emplace(key, Value::of_bool(value), false).first = Value::of_bool(value);
  };
  put(keys::multithread, model.multithread);
  put(keys::multiprocess, model.multiprocess);
  put(keys::run_once, model.run_once);
  put(keys::nonblocking, false);
  put(keys::streaming, true);
}

}  // namespace csgi
