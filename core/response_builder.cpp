#include "csgi/core/response_builder.hpp"

#include <stdexcept>

namespace csgi {

namespace {

void check_name(std::string_view name) {
  // RFC 9110 token; cookies share the definition.
  if (!is_cookie_name(name)) throw std::invalid_argument("invalid header name \"" + std::string(name) + "\"");
}

void check_value(std::string_view name, std::string_view value) {
  for (char c : value)
    if (c == '\r' || c == '\n' || c == '\0')
      throw std::invalid_argument("header " + std::string(name) + ": value holds CR, LF or NUL");
}

}  // namespace

ResponseBuilder::ResponseBuilder(int code) : status_(200) { status(code); }

ResponseBuilder& ResponseBuilder::status(int code) {
  if (code < 100 || code > 999) throw std::invalid_argument("status " + std::to_string(code) + " is out of range");
  status_ = code;
  return *this;
}

ResponseBuilder& ResponseBuilder::header(std::string_view name, std::string_view value) {
  check_name(name);
  check_value(name, value);
  headers_.add(std::string(name), std::string(value));
  return *this;
}

ResponseBuilder& ResponseBuilder::set_header(std::string_view name, std::string_view value) {
  check_name(name);
  check_value(name, value);
  headers_.set(name, std::string(value));
  return *this;
}

ResponseBuilder& ResponseBuilder::remove_header(std::string_view name) {
  headers_.remove(name);
  return *this;
}

ResponseBuilder& ResponseBuilder::body(Body b) {
  body_ = std::move(b);
  return *this;
}

ResponseBuilder& ResponseBuilder::write(std::string_view text) {
  if (auto* s = std::get_if<std::string>(&body_)) {
    s->append(text);
  } else if (auto* b = std::get_if<SharedBytes>(&body_)) {
    std::string joined = *b ? **b : std::string();
    joined.append(text);
    body_ = std::move(joined);
  } else {
    throw std::logic_error("ResponseBuilder::write: the body is a file, stream or delayed response");
  }
  return *this;
}

ResponseBuilder& ResponseBuilder::cookie(const SetCookie& c) {
  headers_.add("Set-Cookie", c.to_string());
  return *this;
}

ResponseBuilder& ResponseBuilder::cookie(std::string name, std::string value) {
  SetCookie c;
  c.name = std::move(name);
  c.value = std::move(value);
  return cookie(c);
}

ResponseBuilder& ResponseBuilder::expire_cookie(std::string name, std::string path, std::string domain) {
  return cookie(csgi::expire_cookie(std::move(name), std::move(path), std::move(domain)));
}

ResponseBuilder& ResponseBuilder::redirect(std::string_view url, int code) {
  switch (code) {
    case 301: case 302: case 303: case 307: case 308: break;
    default: throw std::invalid_argument("redirect status must be 301, 302, 303, 307 or 308, not " + std::to_string(code));
  }
  if (url.empty()) throw std::invalid_argument("redirect: empty URL");
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f) throw std::invalid_argument("redirect: URL holds a space or control character");
  status_ = code;
  headers_.set("Location", std::string(url));
  return *this;
}

Response ResponseBuilder::finalize() {
  Response r;
  r.status = status_;
  if (!status_has_no_body(status_) && !headers_.has("Content-Type"))
    headers_.add("Content-Type", "text/plain; charset=utf-8");
  r.headers = std::move(headers_);
  r.body = std::move(body_);
  status_ = 200;
  headers_ = Headers();
  body_ = Body();
  return r;
}

}  // namespace csgi
