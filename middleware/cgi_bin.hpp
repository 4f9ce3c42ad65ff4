#pragma once
/// CgiBin app (Plack::App::CGIBin / WrapCGI, Monkey's Palm): runs CGI/1.1 scripts (RFC 3875) from a
/// directory as an app.
///
/// PATH_INFO is walked segment by segment below `root` until a regular file is found: that part becomes
/// the script's SCRIPT_NAME (appended to ours), the rest its PATH_INFO (and PATH_TRANSLATED, `root` + it).
/// A ".." segment anywhere in PATH_INFO is refused (404), as are script-path segments that are empty, "."
/// or start with '.' (404), a script whose real path leaves `root` (403) and one that is neither
/// executable nor mapped to an interpreter by extension (403); each refusal says why. Each request spawns
/// the script (posix_spawn, its own process group, close-from-3 so no descriptor leaks, signals reset)
/// with a CGI environment built from the env — the meta-variables, HTTP_* (never HTTP_PROXY, httpoxy;
/// HTTP_AUTHORIZATION only when asked), GATEWAY_INTERFACE, SERVER_SOFTWARE, SCRIPT_FILENAME,
/// REDIRECT_STATUS (for php-cgi) — and nothing of the server's own environment but PATH.
///
/// The request body is read on the calling thread (bounded), before the script starts. When the adapter
/// takes delayed responses (csgi.streaming) and `async` is on, the script then runs on a thread of its
/// own (one per running script, so at most `max_processes`) and the app returns a delayed response at
/// once: a slow script holds no io thread. The worker writes the body to the script's stdin while it reads
/// stdout, and sends the body through a streaming Writer as the script writes it; when the client has
/// gone (write() false) the script is killed. Otherwise the script runs on the calling thread and the
/// body is a csgi::Stream over its stdout. The worker reads nothing from the env: what it needs is copied
/// on the calling thread (the whole env only when `redirect_app` is set; that app then runs on the worker).
///
/// stderr goes to csgi.errors line by line. The CGI response is parsed: `Status:`, `Location:` (a local
/// path without Status is a local redirect, re-run as GET through this app; a URL is a 302), headers
/// (hop-by-hop fields and Content-Length dropped: the body is streamed), then the body. Malformed output:
/// 502; no headers before the timeout: 504 (the process group is killed); more than `max_processes`
/// scripts running: 503 with Retry-After. A timeout after the headers fails the response (the stream
/// throws, or the Writer is dropped unclosed; either way the adapter aborts it). Children are always
/// reaped; closing the stream early kills the group. When the last copy of the app is destroyed, the
/// scripts still running are killed and their workers waited for (at most 5 s).
/// Reads:  REQUEST_METHOD, SCRIPT_NAME, PATH_INFO, QUERY_STRING, REQUEST_URI, CONTENT_*, HTTP_*,
///         SERVER_*, REMOTE_*, AUTH_TYPE, csgi.url_scheme, csgi.streaming, csgi.input, csgi.errors (kept
///         for the stream or the worker: it must outlive the response, as an adapter's error stream does),
///         `cgi_bin.redirects`.
/// Writes: env key `cgi_bin.redirects` (local redirect depth) for `redirect_app`; SCRIPT_NAME/PATH_INFO
///         are not changed.
/// Order:  an app; mount it under a prefix (Builder::mount("/cgi-bin", CgiBin{...})).
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct CgiBinOptions {
  /// The directory holding the scripts (required).
  std::string root;
  /// Interpreters by file extension: argv before the script path. A bare name is looked up on PATH
  /// when the app is built; an interpreter that is not installed is dropped (its scripts get 403).
  std::map<std::string, std::vector<std::string>> interpreters = {
      {".pl", {"perl"}}, {".sh", {"/bin/sh"}}, {".php", {"php-cgi"}}, {".py", {"/usr/bin/python3"}}};
  std::chrono::milliseconds timeout{30000};       // whole run of a script
  std::size_t max_processes = 16;                  // scripts running at once across threads
  /// Run each script on a worker thread and answer with a delayed response (when csgi.streaming is
  /// true); false: on the calling thread, with a pull-stream body.
  bool async = true;
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_request_body = 64 * 1024 * 1024; // larger bodies: 413
  std::string server_software = "csgi/0.1";
  std::string path = "/usr/local/bin:/usr/bin:/bin";  // PATH given to scripts
  bool pass_authorization = false;                 // pass HTTP_AUTHORIZATION to scripts
  std::vector<std::pair<std::string, std::string>> extra_env;
  int max_local_redirects = 5;
  /// Where a local redirect outside this app's mount point goes; unset: answered as a 302.
  App redirect_app;
};

class CgiBin {
public:
  /// Throws std::invalid_argument when root is not a directory, limits are zero, or an extra_env name is
  /// malformed.
  explicit CgiBin(CgiBinOptions options);
  Response operator()(Env& env) const;

  /// Whether an interpreter for `extension` (".php") was found when the app was built.
  bool has_interpreter(const std::string& extension) const;
  /// Scripts running now.
  std::size_t running() const noexcept;

  struct State;
  struct Lifetime;

private:
  std::shared_ptr<State> state_;        // shared by copies of this app, the streams and workers running
  std::shared_ptr<Lifetime> lifetime_;  // shared by copies of this app only
};

}  // namespace csgi::mw
