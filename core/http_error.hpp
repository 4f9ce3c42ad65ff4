#pragma once
/// Exceptions that carry an HTTP status. Helpers throw BadRequest for malformed input; adapters and the
/// http_exceptions middleware turn an HttpError into a response with that status (ADP-6).
#include <stdexcept>
#include <string>

namespace csgi {

class HttpError : public std::runtime_error {
public:
  HttpError(int status, const std::string& reason) : std::runtime_error(reason), status_(status) {}
  int status() const noexcept { return status_; }

private:
  int status_;
};

/// Malformed request input: 400.
class BadRequest : public HttpError {
public:
  explicit BadRequest(const std::string& reason) : HttpError(400, reason) {}
};

/// Request body or field over a configured limit: 413.
class PayloadTooLarge : public HttpError {
public:
  explicit PayloadTooLarge(const std::string& reason) : HttpError(413, reason) {}
};

}  // namespace csgi
