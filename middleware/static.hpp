#pragma once
/// Static — an app serving the files under a root directory (Plack::App::File, nginx's static module).
///
/// GET and HEAD only (others → 405 with Allow). The path is PATH_INFO, checked by sanitize_path and
/// opened beneath the root by Root::open (path_safety.hpp): nothing outside the root is ever served.
/// Files go out as FileBody (adapters use sendfile) with Content-Type from /etc/mime.types (+ built-in
/// fallback; text/* gets "; charset=utf-8"), Content-Length, Last-Modified, a strong ETag
/// ("size-mtime"), Accept-Ranges and the configured Cache-Control. If-None-Match/If-Modified-Since → 304.
/// Range and If-Range by `apply_ranges` (ranges.hpp, the same code as the Ranges middleware): one range
/// → 206 with Content-Range (still a file: sendfile); several → 206 multipart/byteranges; more than
/// `max_ranges`, or ranges adding up to more than the file → the whole file (200); none satisfiable →
/// 416 with `Content-Range: bytes */size`. With `precompressed`, a
/// `name.br` or `name.gz` sibling is sent instead (Content-Encoding, Vary: Accept-Encoding) when the
/// request's Accept-Encoding allows it and no Range is asked for. A directory: `/dir` → 301 `/dir/` (the
/// Location rebuilt from SCRIPT_NAME and the checked path with runs of '/' collapsed, so `//dir` never
/// becomes the network-path reference `//dir/`; the query kept, percent-encoded where needed; the body's
/// link HTML-escaped);
/// `/dir/` → its first index file, else `on_directory` (the Directory app's listing), else 403.
/// With `cache` (the default) files are looked up through a FileCache (file_cache.hpp): kept open, a
/// small one in memory and sent as shared bytes, each change seen by the next request (inotify); the media
/// type and the head of a 200 for the whole file are prepared once per file version, the head sealed
/// (Headers::seal): every 200 shares it, and the standalone server sends it as one prepared block.
///
/// Reads:  REQUEST_METHOD, PATH_INFO, SCRIPT_NAME, QUERY_STRING, HTTP_RANGE, HTTP_IF_RANGE,
///         HTTP_IF_NONE_MATCH, HTTP_IF_MODIFIED_SINCE, HTTP_ACCEPT_ENCODING
/// Writes: nothing in the env; the response as above
/// Order:  an app (the innermost layer); mount it under a prefix (url_map) or use StaticPrefix.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/middleware/file_cache.hpp"
#include "csgi/middleware/mime_types.hpp"
#include "csgi/middleware/path_safety.hpp"

namespace csgi::mw {

struct StaticOptions {
  std::string root;                                    // required: the document root
  std::vector<std::string> index_files = {"index.html"};
  Symlinks symlinks = Symlinks::inside_root;
  bool allow_dotfiles = false;                         // serve names starting with '.' (.well-known always)
  bool etag = true;
  bool last_modified = true;
  std::string cache_control;                           // e.g. "public, max-age=3600"; empty: none
  bool precompressed = false;                          // look for name.br / name.gz siblings
  std::size_t max_ranges = 16;                         // more ranges than this → whole file
  std::string charset = "utf-8";                       // appended to text/* types; empty: none
  std::string default_type = "application/octet-stream";
  std::shared_ptr<const MimeTypes> mime;               // null: MimeTypes::system()
  bool redirect_directories = true;                    // "/dir" → 301 "/dir/"
  bool cache = true;                                   // keep files open, small ones in memory (file_cache.hpp)
  FileCacheOptions cache_options;
  /// Called for a directory without an index file (with the root, the directory and its relative path,
  /// "" for the root); unset → 403.
  std::function<Response(Env&, const Root& root, const Opened& dir, std::string_view relative)> on_directory;
};

class Static {
public:
  /// Throws std::system_error when the root cannot be opened, std::invalid_argument when it is empty.
  explicit Static(StaticOptions options);
  Response operator()(Env& env) const;

  const StaticOptions& options() const noexcept;
  const Root& root() const noexcept;

  /// Serves an already opened regular file (used by Static itself and by apps built on it).
  Response serve_file(Env& env, std::string_view relative, Opened file) const;

  /// The file cache's counters (all zero when `cache` is off).
  FileCache::Stats cache_stats() const;

private:
  struct State;
  /// A precompressed sibling chosen for the request (none: `sibling` null).
  struct Coding {
    std::shared_ptr<const FileCache::Entry> sibling;
    std::string_view name;  // "br" or "gzip"
    std::string_view ext;   // ".br" or ".gz"
  };
  std::shared_ptr<const FileCache::Entry> open(std::string_view relative) const;
  Coding choose_coding(const Env& env, std::string_view relative) const;
  Response serve(Env& env, std::string_view relative, const FileCache::Entry& file, bool head) const;
  std::shared_ptr<const State> s_;
};

/// A stable strong ETag for a file: "\"<size hex>-<mtime s hex>-<mtime ns hex>\"".
std::string file_etag(const struct stat& st);

}  // namespace csgi::mw
