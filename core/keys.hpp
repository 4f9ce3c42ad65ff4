#pragma once
/// Env key names, in one place (spec/csgi.md §Env). Keys without a dot are CGI keys; `csgi.` is the core
/// namespace, `csgix.` holds blessed extensions, and a middleware keeps its own keys under `<name>.`.
#include <string_view>

namespace csgi::keys {
using K = std::string_view;

inline constexpr K REQUEST_METHOD = "REQUEST_METHOD";
inline constexpr K SCRIPT_NAME = "SCRIPT_NAME";
inline constexpr K PATH_INFO = "PATH_INFO";
inline constexpr K REQUEST_URI = "REQUEST_URI";
inline constexpr K QUERY_STRING = "QUERY_STRING";
inline constexpr K SERVER_NAME = "SERVER_NAME";
inline constexpr K SERVER_PORT = "SERVER_PORT";
inline constexpr K SERVER_PROTOCOL = "SERVER_PROTOCOL";
inline constexpr K CONTENT_LENGTH = "CONTENT_LENGTH";
inline constexpr K CONTENT_TYPE = "CONTENT_TYPE";
inline constexpr K REMOTE_ADDR = "REMOTE_ADDR";
inline constexpr K REMOTE_PORT = "REMOTE_PORT";
inline constexpr K REMOTE_USER = "REMOTE_USER";
inline constexpr K HTTP_HOST = "HTTP_HOST";
inline constexpr K HTTP_COOKIE = "HTTP_COOKIE";
inline constexpr K HTTP_ACCEPT = "HTTP_ACCEPT";
inline constexpr K HTTP_ACCEPT_ENCODING = "HTTP_ACCEPT_ENCODING";
inline constexpr K HTTP_AUTHORIZATION = "HTTP_AUTHORIZATION";
inline constexpr K HTTP_FORWARDED = "HTTP_FORWARDED";              // RFC 7239
inline constexpr K HTTP_X_FORWARDED_FOR = "HTTP_X_FORWARDED_FOR";
inline constexpr K HTTP_X_REAL_IP = "HTTP_X_REAL_IP";
inline constexpr K HTTP_IF_NONE_MATCH = "HTTP_IF_NONE_MATCH";
inline constexpr K HTTP_IF_MODIFIED_SINCE = "HTTP_IF_MODIFIED_SINCE";
inline constexpr K HTTP_RANGE = "HTTP_RANGE";
inline constexpr K HTTP_IF_RANGE = "HTTP_IF_RANGE";
inline constexpr K HTTP_EXPECT = "HTTP_EXPECT";
inline constexpr K HTTP_USER_AGENT = "HTTP_USER_AGENT";
inline constexpr K HTTP_REFERER = "HTTP_REFERER";
inline constexpr K HTTP_ORIGIN = "HTTP_ORIGIN";
inline constexpr K HTTP_ACCESS_CONTROL_REQUEST_METHOD = "HTTP_ACCESS_CONTROL_REQUEST_METHOD";  // CORS preflight
inline constexpr K HTTP_ACCESS_CONTROL_REQUEST_HEADERS = "HTTP_ACCESS_CONTROL_REQUEST_HEADERS";
inline constexpr K HTTP_SEC_FETCH_SITE = "HTTP_SEC_FETCH_SITE";  // Fetch Metadata
// A connection over TLS (ENV-17, ENV-18), named as Apache mod_ssl names them.
inline constexpr K HTTPS = "HTTPS";                          // "on"
inline constexpr K SSL_PROTOCOL = "SSL_PROTOCOL";            // "TLSv1.2" | "TLSv1.3"
inline constexpr K SSL_CIPHER = "SSL_CIPHER";                // OpenSSL's name of the cipher suite
inline constexpr K SSL_TLS_SNI = "SSL_TLS_SNI";              // the host name the client sent (SNI)
inline constexpr K SSL_CLIENT_VERIFY = "SSL_CLIENT_VERIFY";  // "SUCCESS" | "NONE" | "FAILED:reason"
inline constexpr K SSL_CLIENT_S_DN = "SSL_CLIENT_S_DN";      // the client certificate's subject (RFC 2253)
inline constexpr K SSL_CLIENT_CERT = "SSL_CLIENT_CERT";      // the client certificate (PEM)

// Core keys (always present).
inline constexpr K version = "csgi.version";            // text "1.0"
inline constexpr K url_scheme = "csgi.url_scheme";      // "http" | "https"
inline constexpr K input = "csgi.input";                // object csgi::Input
inline constexpr K errors = "csgi.errors";              // object csgi::ErrorStream
inline constexpr K multithread = "csgi.multithread";    // bool
inline constexpr K multiprocess = "csgi.multiprocess";  // bool
inline constexpr K run_once = "csgi.run_once";          // bool
inline constexpr K nonblocking = "csgi.nonblocking";    // bool
inline constexpr K streaming = "csgi.streaming";        // bool

// Extensions (present only when the adapter supports them).
namespace x {
inline constexpr K io = "csgix.io";                            // object csgi::Hijack
inline constexpr K input_buffered = "csgix.input.buffered";    // bool: csgi.input is seekable
inline constexpr K logger = "csgix.logger";                    // object csgi::Logger
inline constexpr K session = "csgix.session";                  // object csgi::Session
inline constexpr K session_options = "csgix.session.options";  // object csgi::SessionOptions
inline constexpr K harakiri = "csgix.harakiri";                // bool: adapter honours harakiri.commit
inline constexpr K harakiri_commit = "csgix.harakiri.commit";  // bool set by the app
inline constexpr K cleanup = "csgix.cleanup";                  // bool: adapter runs cleanup.handlers
inline constexpr K cleanup_handlers = "csgix.cleanup.handlers";  // object csgi::CleanupHandlers
inline constexpr K informational = "csgix.informational";      // object csgi::Informational
inline constexpr K request_body_limit = "csgix.body_limit";    // integer: max request body bytes
inline constexpr K server_stats = "csgix.server_stats";        // object csgi::ServerStats (EXT-7)
inline constexpr K websocket = "csgix.websocket";  // object csgi::websocket::Handshake (EXT-8)
inline constexpr K broadcast = "csgix.broadcast";  // object csgi::Broadcast (EXT-12)
}  // namespace x
// Keys of the apps in middleware/, each under its own prefix (EXT-6).
namespace router {
inline constexpr K param_prefix = "router.param.";  // + placeholder name: text, the matched segment(s)
inline constexpr K route = "router.route";          // text: the pattern of the matched route
}  // namespace router

inline constexpr std::string_view spec_version = "1.0";
}  // namespace csgi::keys
