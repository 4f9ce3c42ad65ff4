#pragma once
/// The Python side of a csgi request: wsgi.input over a csgi::Input, wsgi.errors over a csgi::ErrorStream,
/// and wsgi.file_wrapper. Each stream is valid only while its request runs; afterwards it raises ValueError.
#include <string>

#include "common.hpp"
#include "csgi/core/io.hpp"

namespace csgi::python {

/// wsgi.input: read(size=-1), readline(size=-1), readlines(hint=-1), iteration. The GIL is released while
/// the adapter reads the socket.
class InputStream {
public:
  explicit InputStream(Input* in) : in_(in) {}
  py::bytes read(Py_ssize_t size);
  py::bytes readline(Py_ssize_t size);
  py::list readlines(Py_ssize_t hint);
  py::bytes next();
  void detach() noexcept { in_ = nullptr; }
  /// Serves another request (an object no one else holds, reused).
  void attach(Input* in) noexcept {
    in_ = in;
    buf_.clear();
    pos_ = 0;
    eof_ = false;
    http_error_ = 0;
    http_error_reason_.clear();
  }
  /// The status of a csgi::HttpError the adapter's input raised (400 bad chunk, 413 over the limit, 408),
  /// 0 when none: the request is answered with it even though the app saw a Python RuntimeError.
  int http_error() const noexcept { return http_error_; }
  const std::string& http_error_reason() const noexcept { return http_error_reason_; }

private:
  Input& input();
  /// Ensures buf_ holds at least `want` unread bytes or the end was reached; returns whether more came.
  bool fill(std::size_t want);
  Input* in_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool eof_ = false;
  int http_error_ = 0;
  std::string http_error_reason_;
};

/// wsgi.errors: write(str), writelines(iterable), flush(). Lines are passed to csgi.errors whole.
class ErrorsStream {
public:
  explicit ErrorsStream(ErrorStream* out) : out_(out) {}
  void write(py::handle text);
  void writelines(py::iterable lines);
  void flush();
  void detach() noexcept;
  /// Serves another request (an object no one else holds, reused).
  void attach(ErrorStream* out) noexcept { out_ = out; }

private:
  ErrorStream* out_;
  std::string pending_;
};

/// wsgi.file_wrapper(filelike, blksize=8192): iterates the file in blocks. Returned from an app hosted
/// by csgi, a wrapper over a file with fileno() becomes a FileBody (sendfile); close() closes the file.
struct FileWrapper {
  py::object filelike;
  Py_ssize_t blksize;
};

}  // namespace csgi::python
