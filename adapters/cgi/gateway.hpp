#pragma once
/// The CGI/1.1 gateway shared by the CGI and FastCGI adapters: turning the meta-variables a front server
/// sends (process environment for CGI, FastCGI params) into a csgi env, and the mount-point rules that
/// give an app the same SCRIPT_NAME/PATH_INFO behind every front server.
///
/// Mount-point algorithm (split_paths), with P = REQUEST_URI's path made canonical as populate_env does
/// (csgi::canonical_path: decoded once, dot segments removed, so the app routes on the path the front
/// server routed on, not on a raw "/admin/.." the server resolved to "/"), S = the server's
/// SCRIPT_NAME (trailing '/' removed), I = the server's PATH_INFO:
///   1. `script_name` override given: SCRIPT_NAME = override when it is a prefix of P on a '/' boundary
///      (PATH_INFO = the rest of P); otherwise SCRIPT_NAME = "" and PATH_INFO = P.
///   2. S is a prefix of P (nginx fastcgi_split_path_info or an explicit `fastcgi_param SCRIPT_NAME`,
///      lighttpd with a prefix, Apache mod_cgi /cgi-bin/x.cgi/...): SCRIPT_NAME = S, PATH_INFO = rest of P —
///      except when S is all of P, I is empty and SCRIPT_NAME was sent only once: the server did not split
///      (nginx's stock fastcgi_params send the whole URI), so the app is at the root.
///   3. S is not a prefix of P but its directory is and I is not empty: a rewrite sent the request to a
///      script file inside the mount directory (Apache .htaccess `RewriteRule ^(.*)$ app.fcgi/$1`, where
///      the server says SCRIPT_NAME=/app/app.fcgi): SCRIPT_NAME = that directory, PATH_INFO = rest of P.
///   4. I is a suffix of P: SCRIPT_NAME = P without it, PATH_INFO = I.
///   5. Otherwise SCRIPT_NAME = "", PATH_INFO = P.
/// PATH_INFO always comes from REQUEST_URI when there is one, so it is decoded exactly once and keeps
/// repeated slashes (servers merge them and may decode twice after a rewrite). Without REQUEST_URI the
/// server's S and I are kept, their dot segments removed. SCRIPT_NAME "/" becomes "", and an empty PATH_INFO with an empty
/// SCRIPT_NAME becomes "/".
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "csgi/core/env.hpp"

namespace csgi::cgi {

struct PathSplit {
  std::string_view script_name;
  std::string_view path_info;
};

/// Applies the mount-point algorithm above. Views point into the arguments or into `env`'s arena.
/// Throws csgi::BadRequest for a malformed %-escape or %00 in REQUEST_URI's path, or a ".." that
/// canonical_path refuses (above the root, or after an empty segment).
PathSplit split_paths(Env& env, std::string_view request_uri, std::string_view script_name, std::string_view path_info,
                      bool script_name_repeated, const std::optional<std::string>& override_script_name);

struct EnvOptions {
  std::optional<std::string> script_name;   // --script-name: fixed mount point
  bool multithread = false;
  bool multiprocess = false;
  bool run_once = false;
  std::size_t max_params_bytes = 1 << 20;   // all names + values; more → 431
};

/// Fills `env` from "NAME=VALUE" strings (a null-terminated array, as environ and libfcgi's envp are):
/// the last copy of a name wins, except HTTP_* names, whose copies are joined with ", " ("; " for
/// HTTP_COOKIE) as repeated header fields are (nginx sends one param per field); HTTP_CONTENT_TYPE, HTTP_CONTENT_LENGTH and HTTP_PROXY (httpoxy) are
/// dropped; an empty CONTENT_LENGTH or CONTENT_TYPE counts as absent; QUERY_STRING is always present;
/// SCRIPT_NAME/PATH_INFO go through split_paths; an empty SERVER_NAME (nginx without server_name) comes
/// from HTTP_HOST, else SERVER_ADDR; an empty SERVER_PORT is 80 or 443. Also sets csgi.version, csgi.url_scheme ("https" when
/// HTTPS is on or REQUEST_SCHEME says so), csgi.multithread/multiprocess/run_once, csgi.nonblocking=false
/// and csgi.streaming=true. The strings must outlive the request (values are not copied).
/// Throws csgi::HttpError: 400 for a missing REQUEST_METHOD or a CONTENT_LENGTH that is not digits, 431
/// past max_params_bytes.
void build_env(Env& env, const char* const* vars, const EnvOptions& options);

}  // namespace csgi::cgi
