#pragma once
/// Responses (spec/csgi.md §Response): a status, an ordered header list and a body of one of five kinds.
///   std::string      complete bytes
///   SharedBytes      complete, immutable bytes shared between responses (sent without copying)
///   FileBody         a file (path or open fd, offset, length): adapters may sendfile(2) it
///   StreamPtr        a pull stream: next() yields chunks until it returns false; close() always called
///   Delayed          the app answers later through a Responder, completely or with a streaming Writer
/// A stream or writer body may end with trailer fields (RES-15): Stream::trailers(), Writer::set_trailers().
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "csgi/core/text.hpp"

namespace csgi {

struct Header {
  std::string name;
  std::string value;
  bool operator==(const Header&) const = default;
};

/// A header list sealed by Headers::seal(): immutable, shared by every copy, with its HTTP/1 form
/// ("Name: value\r\n" per field) written and checked once, so that an adapter sending many responses
/// with the same fields (a static file's) copies one block instead of checking and writing each field.
struct HeaderBlock {
  std::vector<Header> fields;
  std::string wire;      // the fields as HTTP/1 field lines, in order (only when wire_ok)
  bool wire_ok = false;  // every name a token, no control character but tab in a value, no field the
                         // adapter frames itself (Transfer-Encoding, Connection, Keep-Alive), at most one
                         // Content-Length, made of digits
  bool has_date = false;                        // a Date field is among them
  std::optional<std::uint64_t> content_length;  // the (one) Content-Length field's value
};

/// An ordered list of header fields; names compare case-insensitively; repeats are kept (RES-3).
/// seal() makes a list immutable and shared (copies cost one reference count); changing a copy of a sealed
/// list, or taking a mutable iterator, turns that copy back into an ordinary list first. Readers see the
/// same fields either way.
class Headers {
public:
  Headers() = default;
  Headers(std::initializer_list<Header> h) : list_(h) {}

  void add(std::string name, std::string value) { with_room().push_back({std::move(name), std::move(value)}); }
  /// Replaces every field named `name` with one field (added at the end when absent).
  void set(std::string_view name, std::string value);
  /// The first value of `name`.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  bool has(std::string_view name) const noexcept { return get(name).has_value(); }
  /// Removes every field named `name`; returns how many.
  std::size_t remove(std::string_view name);
  /// Every value of `name`, in order.
  std::vector<std::string_view> get_all(std::string_view name) const;

  auto begin() const noexcept { return fields().begin(); }
  auto end() const noexcept { return fields().end(); }
  auto begin() { return own().begin(); }
  auto end() { return own().end(); }
  std::size_t size() const noexcept { return fields().size(); }
  bool empty() const noexcept { return fields().empty(); }
  void reserve(std::size_t n) { own().reserve(n); }
  const Header& operator[](std::size_t i) const { return fields()[i]; }
  bool operator==(const Headers& o) const { return fields() == o.fields(); }

  /// Makes the list immutable and shared, with its HTTP/1 form prepared (HeaderBlock). Call it on a list
  /// that many responses copy unchanged.
  void seal();
  /// The sealed block, or null for an ordinary list.
  const HeaderBlock* sealed() const noexcept { return block_.get(); }

private:
  const std::vector<Header>& fields() const noexcept { return block_ ? block_->fields : list_; }
  /// The list, made an ordinary (unshared) one first when sealed.
  std::vector<Header>& own() {
    if (block_) unseal();
    return list_;
  }
  void unseal();
  // own(), with room for one more field: the first field reserves room for a typical response's (an app's
  // few and the ones middlewares add), so the list is not copied over as it grows.
  std::vector<Header>& with_room() {
    std::vector<Header>& l = own();
    if (l.capacity() == 0) l.reserve(8);
    return l;
  }

  std::vector<Header> list_;                  // empty while sealed
  std::shared_ptr<const HeaderBlock> block_;  // set while sealed
};

using SharedBytes = std::shared_ptr<const std::string>;

/// An open file descriptor, closed when the last FileBody holding it goes.
class FileHandle {
public:
  explicit FileHandle(int fd) noexcept : fd_(fd) {}
  ~FileHandle();
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const noexcept { return fd_; }

private:
  int fd_;
};

/// A file body. With `file` set the adapter sends from that fd (no reopening by path: no TOCTOU);
/// otherwise it opens `path`. `length == npos` means to the end of the file.
struct FileBody {
  static constexpr std::uint64_t npos = ~std::uint64_t{0};
  std::string path;
  std::shared_ptr<FileHandle> file;
  std::uint64_t offset = 0;
  std::uint64_t length = npos;

  /// Opens `path` read-only; throws std::system_error when it cannot.
  static FileBody open(std::string path, std::uint64_t offset = 0, std::uint64_t length = npos);
  /// The byte count that will be sent (fstat when length is npos).
  std::uint64_t size() const;
};

/// A pull stream. The adapter calls next() until it returns false, then close() — also when the client
/// went away or an error stopped it (RES-9).
class Stream {
public:
  virtual ~Stream() = default;
  /// Puts the next chunk in `chunk` (replacing its content); false at the end.
  virtual bool next(std::string& chunk) = 0;
  virtual void close() {}
  /// The trailer fields sent after the last chunk (RES-15). An adapter that can send them calls it once,
  /// after next() returned false and before close(); never when the stream stopped early.
  virtual Headers trailers() { return {}; }
};
using StreamPtr = std::shared_ptr<Stream>;

/// A stream over a function returning chunks; std::nullopt ends it. `trailers`, when given, gives the
/// trailer fields once the last chunk is out (Stream::trailers).
StreamPtr make_stream(std::function<std::optional<std::string>()> next, std::function<void()> close = {},
                      std::function<Headers()> trailers = {});

/// The streaming writer of a delayed response. write() returns false once the client has gone (the app
/// should stop); close() ends the body. All may be called from any thread, not concurrently.
class Writer {
public:
  virtual ~Writer() = default;
  virtual bool write(std::string_view chunk) = 0;
  virtual void close() = 0;
  /// The trailer fields that close() sends after the body (RES-15); a later call replaces them. An
  /// adapter that cannot send trailers keeps the default, which drops them (ADP-17).
  virtual void set_trailers(Headers trailers) { (void)trailers; }
};
using WriterPtr = std::shared_ptr<Writer>;

struct Response;

/// What an adapter implements to receive a delayed response.
class ResponderImpl {
public:
  virtual ~ResponderImpl() = default;
  virtual void respond(Response r) = 0;
  virtual WriterPtr start(int status, class Headers headers) = 0;
};

/// Handed to a delayed response's callable. Exactly one of respond() or start() is called, once, from
/// any thread, now or later (RES-8).
class Responder {
public:
  Responder() = default;
  explicit Responder(std::shared_ptr<ResponderImpl> impl) : impl_(std::move(impl)) {}
  /// Answers with a complete response (any body kind but Delayed).
  void respond(Response r) const;
  /// Sends status and headers now; the body follows through the returned writer.
  WriterPtr start(int status, Headers headers) const;
  explicit operator bool() const noexcept { return impl_ != nullptr; }

private:
  std::shared_ptr<ResponderImpl> impl_;
};

using Delayed = std::function<void(Responder)>;

using Body = std::variant<std::string, SharedBytes, FileBody, StreamPtr, Delayed>;

struct Response {
  int status = 200;
  Headers headers;
  Body body;

  /// A complete response with Content-Type.
  static Response text(int status, std::string body, std::string content_type = "text/plain; charset=utf-8");
  static Response html(int status, std::string body) { return text(status, std::move(body), "text/html; charset=utf-8"); }
  /// A response whose body a Responder gives later.
  static Response delayed(Delayed d);
  /// A plain error page: "<status> <reason>\n" (+ detail).
  static Response error(int status, std::string_view detail = {});

  bool is_delayed() const noexcept { return std::holds_alternative<Delayed>(body); }
  /// The body's length when it is known without reading it (string, shared bytes, file).
  std::optional<std::uint64_t> known_length() const;
};

/// The standard reason phrase ("Not Found"), or "Unknown".
std::string_view reason_phrase(int status) noexcept;

/// True for a field that must not be a trailer (RES-15, RFC 9110 §6.5.1): one that frames, routes,
/// authenticates or controls the response, or says how to process its content. Adapters drop them.
bool trailer_field_forbidden(std::string_view name) noexcept;

/// True when the status forbids a body (1xx, 204, 304) (RES-6).
/// Adds `field` to the response's Vary list unless it is there already or Vary is "*".
void add_vary(Headers& headers, std::string_view field);

constexpr bool status_has_no_body(int status) noexcept { return status < 200 || status == 204 || status == 304; }

}  // namespace csgi
