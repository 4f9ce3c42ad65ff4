#include "csgi/core/response.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <system_error>
#include <utility>

#include "csgi/core/text.hpp"

namespace csgi {

void add_vary(Headers& headers, std::string_view field) {
  auto vary = headers.get("Vary");
  if (!vary) {
    headers.add("Vary", std::string(field));
  } else if (!list_has_token(*vary, field) && !list_has_token(*vary, "*")) {
    headers.set("Vary", std::string(*vary) + ", " + std::string(field));
  }
}

void Headers::set(std::string_view name, std::string value) {
  own();
  bool done = false;
  for (auto it = list_.begin(); it != list_.end();) {
    if (iequals(it->name, name)) {
      if (!done) {
        it->value = std::move(value);
        done = true;
        ++it;
      } else {
        it = list_.erase(it);
      }
    } else {
      ++it;
    }
  }
  if (!done) with_room().push_back({std::string(name), std::move(value)});
}

void Headers::unseal() {
  list_ = block_->fields;
  block_.reset();
}

namespace {
/// Fills `b`'s wire form and what an adapter needs to know of its fields.
void prepare_block(HeaderBlock& b) {
  std::size_t n = 0;
  for (const Header& h : b.fields) n += h.name.size() + h.value.size() + 4;
  b.wire.reserve(n);
  int lengths = 0;
  bool ok = true;
  for (const Header& h : b.fields) {
    if (!is_token(h.name) || has_ctl(h.value, true) || iequals(h.name, "transfer-encoding") ||
        iequals(h.name, "connection") || iequals(h.name, "keep-alive"))
      ok = false;
    if (iequals(h.name, "date")) b.has_date = true;
    if (iequals(h.name, "content-length")) {
      std::uint64_t v = 0;
      const char* end = h.value.data() + h.value.size();
      auto r = std::from_chars(h.value.data(), end, v);
      if (++lengths > 1 || h.value.empty() || r.ec != std::errc() || r.ptr != end) ok = false;
      else b.content_length = v;
    }
    b.wire.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  b.wire_ok = ok;
  if (!ok) {
    b.wire.clear();
    b.content_length.reset();
  }
}
}  // namespace

void Headers::seal() {
  if (block_) return;
  auto b = std::make_shared<HeaderBlock>();
  b->fields = std::move(list_);
  list_.clear();
  prepare_block(*b);
  block_ = std::move(b);
}

std::optional<std::string_view> Headers::get(std::string_view name) const noexcept {
  for (const Header& h : fields())
    if (iequals(h.name, name)) return std::string_view(h.value);
  return std::nullopt;
}

std::size_t Headers::remove(std::string_view name) {
  if (block_ && !has(name)) return 0;  // a sealed list stays sealed when nothing goes
  own();
  auto before = list_.size();
  std::erase_if(list_, [&](const Header& h) { return iequals(h.name, name); });
  return before - list_.size();
}

std::vector<std::string_view> Headers::get_all(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const Header& h : fields())
    if (iequals(h.name, name)) out.push_back(h.value);
  return out;
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

FileBody FileBody::open(std::string path, std::uint64_t offset, std::uint64_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  FileBody f;
  f.path = std::move(path);
  f.file = std::make_shared<FileHandle>(fd);
  f.offset = offset;
  f.length = length;
  return f;
}

std::uint64_t FileBody::size() const {
  if (length != npos) return length;
  struct stat st {};
  int rc = file ? ::fstat(file->fd(), &st) : ::stat(path.c_str(), &st);
  if (rc != 0) throw std::system_error(errno, std::generic_category(), "stat " + path);
  auto total = static_cast<std::uint64_t>(st.st_size);
  return total > offset ? total - offset : 0;
}

namespace {
class FunctionStream final : public Stream {
public:
  FunctionStream(std::function<std::optional<std::string>()> next, std::function<void()> close,
                 std::function<Headers()> trailers)
      : next_(std::move(next)), close_(std::move(close)), trailers_(std::move(trailers)) {}
  bool next(std::string& chunk) override {
    auto c = next_();
    if (!c) return false;
    chunk = std::move(*c);
    return true;
  }
  void close() override {
    if (close_) std::exchange(close_, nullptr)();
  }
  Headers trailers() override { return trailers_ ? trailers_() : Headers(); }

private:
  std::function<std::optional<std::string>()> next_;
  std::function<void()> close_;
  std::function<Headers()> trailers_;
};
}  // namespace

StreamPtr make_stream(std::function<std::optional<std::string>()> next, std::function<void()> close,
                      std::function<Headers()> trailers) {
  return std::make_shared<FunctionStream>(std::move(next), std::move(close), std::move(trailers));
}

bool trailer_field_forbidden(std::string_view name) noexcept {
  static constexpr std::string_view forbidden[] = {
      // framing and connection
      "content-length", "transfer-encoding", "trailer", "connection", "keep-alive", "te", "upgrade",
      "proxy-connection",
      // how to process the content
      "content-type", "content-encoding", "content-range", "content-language", "content-location",
      // routing, request modifiers, authentication
      "host", "authorization", "proxy-authorization", "www-authenticate", "proxy-authenticate", "set-cookie",
      "cookie", "expect", "max-forwards", "range", "if-match", "if-none-match", "if-modified-since",
      "if-unmodified-since", "if-range",
      // response control data
      "age", "cache-control", "expires", "date", "location", "retry-after", "vary", "warning"};
  if (!name.empty() && name.front() == ':') return true;
  for (std::string_view f : forbidden)
    if (iequals(name, f)) return true;
  return false;
}

void Responder::respond(Response r) const { impl_->respond(std::move(r)); }
WriterPtr Responder::start(int status, Headers headers) const { return impl_->start(status, std::move(headers)); }

Response Response::text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.headers.reserve(2);
  r.headers.add("Content-Type", std::move(content_type));
  r.body = std::move(body);
  return r;
}

Response Response::delayed(Delayed d) {
  Response r;
  r.body = std::move(d);
  return r;
}

Response Response::error(int status, std::string_view detail) {
  std::string body = std::to_string(status);
  body += ' ';
  body += reason_phrase(status);
  if (!detail.empty()) {
    body += ": ";
    body += detail;
  }
  body += '\n';
  if (status_has_no_body(status)) {
    Response r;
    r.status = status;
    return r;
  }
  return text(status, std::move(body));
}

std::optional<std::uint64_t> Response::known_length() const {
  if (auto* s = std::get_if<std::string>(&body)) return s->size();
  if (auto* b = std::get_if<SharedBytes>(&body)) return *b ? (*b)->size() : 0;
  if (auto* f = std::get_if<FileBody>(&body)) return f->size();
  return std::nullopt;
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 102: return "Processing";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 207: return "Multi-Status";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace csgi
