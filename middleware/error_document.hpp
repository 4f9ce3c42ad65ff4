#pragma once
/// ErrorDocument (Plack::Middleware::ErrorDocument, Apache's ErrorDocument): replaces the body of an
/// error response with a page — a static file, or the response of a sub-request to a path through the
/// same next app — keeping the original status. Headers that describe the old body (Content-Type,
/// -Length, -Encoding, -Range, ETag, Last-Modified) are dropped; the others (WWW-Authenticate, Allow,
/// Retry-After, Set-Cookie…) stay. The old body is closed unread.
/// Works for complete, file, stream and delayed responses; for a response started through a Writer the
/// page is sent in place of the chunks written. A sub-request is a GET (HEAD stays HEAD) of `path` with
/// an empty query and no body; when it does not answer 2xx (or answers later than at once from a
/// delayed response), the original response goes out unchanged and the reason goes to csgi.errors.
/// Reads:  REQUEST_METHOD, SCRIPT_NAME, csgi.errors.
/// Writes: for the sub-request only (restored after): PATH_INFO, QUERY_STRING, REQUEST_METHOD,
///         REQUEST_URI, CONTENT_LENGTH/CONTENT_TYPE (removed), and error_document.status,
///         error_document.PATH_INFO, error_document.REQUEST_METHOD, error_document.QUERY_STRING.
/// Order:  outside the apps whose errors it dresses, inside access_log (which should log the status).
///         For a delayed response the env must still be valid when it answers (as until a response
///         completes).
#include <map>
#include <memory>
#include <string>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct ErrorDocumentOptions {
  /// Status → page file (read at each use: edits show at once; must exist when the app is built).
  std::map<int, std::string> files;
  /// Status → path run as a sub-request through the next app ("/errors/404.html").
  std::map<int, std::string> subrequests;
  /// A sub-request's body is read up to this size when it has to be buffered (writer responses).
  std::size_t max_page_bytes = 1024 * 1024;
};

class ErrorDocument {
public:
  /// Throws std::invalid_argument for a status below 400 or above 599, a status given twice, a path not
  /// starting with '/', or a page file that cannot be read.
  explicit ErrorDocument(App next, ErrorDocumentOptions options);
  Response operator()(Env& env);

  struct State;

private:
  std::shared_ptr<const State> state_;
};

}  // namespace csgi::mw
