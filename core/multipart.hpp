#pragma once
/// multipart/form-data (RFC 7578, RFC 2046 §5.1), parsed as it streams in.
///
///   auto form = csgi::parse_multipart(env.input(), csgi::multipart_boundary(env.get("CONTENT_TYPE")));
///   form.fields.get("title");                       // text fields: csgi::Params
///   const csgi::Upload* f = form.uploads.get("file");
///   f->path();                                      // a temp file, removed with the Upload
///
/// The parser never holds the body: it keeps at most one read chunk plus one part's header block, and
/// writes file parts above `memory_threshold` bytes to a temp file as they arrive (peak_buffer() says how
/// much it held). Limits: part count, part header size, text field size, total text size, file size.
/// Errors: csgi::BadRequest for a missing or malformed boundary, a body without the boundary, a part
/// without a Content-Disposition name, or a body that ends inside a part (truncated); csgi::PayloadTooLarge
/// for any limit exceeded.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/io.hpp"
#include "csgi/core/query.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

struct MultipartLimits {
  std::size_t max_parts = 1000;
  /// Bytes of one part's header block.
  std::size_t max_header_size = 16 * 1024;
  /// Bytes of one text (non-file) field.
  std::size_t max_field_size = 1024 * 1024;
  /// Bytes of all text fields together.
  std::size_t max_fields_total = 8 * 1024 * 1024;
  /// Bytes of one uploaded file.
  std::uint64_t max_file_size = std::numeric_limits<std::uint64_t>::max();
  /// Bytes of the whole body.
  std::uint64_t max_body_size = std::numeric_limits<std::uint64_t>::max();
  /// File parts larger than this go to a temp file; smaller ones stay in memory.
  std::size_t memory_threshold = 64 * 1024;
  /// Where temp files go; empty: $TMPDIR, else /tmp.
  std::string temp_dir;
  /// Bytes read from the input at a time.
  std::size_t read_size = 64 * 1024;
};

/// A temp file removed (unlinked) when the last owner goes.
class TempFile {
public:
  /// Creates an empty file "csgi-upload-XXXXXX" in `dir`; throws std::system_error.
  explicit TempFile(const std::string& dir);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const noexcept { return path_; }
  int fd() const noexcept { return fd_; }
  /// Appends bytes; throws std::system_error.
  void write(std::string_view data);

private:
  std::string path_;
  int fd_ = -1;
};

/// One uploaded file (a part with a filename parameter).
class Upload {
public:
  /// The form field name.
  const std::string& name() const noexcept { return name_; }
  /// The file name as the client sent it (may hold a client-side path; see basename()).
  const std::string& filename() const noexcept { return filename_; }
  /// The last path component of filename(), '/' and '\' both counting as separators.
  std::string_view basename() const noexcept;
  /// The part's Content-Type ("application/octet-stream" when it had none).
  const std::string& content_type() const noexcept { return content_type_; }
  /// Every header field of the part.
  const Headers& headers() const noexcept { return headers_; }
  std::uint64_t size() const noexcept { return size_; }
  /// True when the content is held in memory (no temp file).
  bool in_memory() const noexcept { return file_ == nullptr; }
  /// The temp file holding the content; "" when in_memory(). It is removed when the Upload goes.
  const std::string& path() const noexcept;
  /// The content when in_memory(); empty otherwise.
  std::string_view memory() const noexcept { return data_; }
  /// The whole content (reads the temp file): for small files.
  std::string content() const;
  /// The content as a response body (the temp file is kept alive by the body).
  FileBody file_body() const;
  /// Copies the content to `dest` (hard link when possible); throws std::system_error.
  void save_as(const std::string& dest) const;

private:
  friend class MultipartParser;
  std::string name_, filename_, content_type_;
  Headers headers_;
  std::uint64_t size_ = 0;
  std::string data_;
  std::shared_ptr<TempFile> file_;
};

/// The uploads of a form, in order; several may share a name.
class Uploads {
public:
  /// The first upload named `name`, or nullptr.
  const Upload* get(std::string_view name) const noexcept;
  std::vector<const Upload*> get_all(std::string_view name) const;
  std::size_t size() const noexcept { return list_.size(); }
  bool empty() const noexcept { return list_.empty(); }
  auto begin() const noexcept { return list_.begin(); }
  auto end() const noexcept { return list_.end(); }
  void add(Upload u) { list_.push_back(std::move(u)); }

private:
  std::vector<Upload> list_;
};

struct FormData {
  Params fields;
  Uploads uploads;
};

/// The boundary parameter of a multipart Content-Type. Throws csgi::BadRequest when it is missing, empty,
/// longer than 70 characters (RFC 2046 §5.1.1) or holds characters RFC 2046 does not allow.
std::string multipart_boundary(std::string_view content_type);

/// A push parser: feed() the body in pieces of any size, then finish().
class MultipartParser {
public:
  explicit MultipartParser(std::string_view boundary, MultipartLimits limits = {});
  ~MultipartParser();
  MultipartParser(const MultipartParser&) = delete;
  MultipartParser& operator=(const MultipartParser&) = delete;

  void feed(std::string_view data);
  /// Checks that the closing boundary was seen and hands over the form. Throws csgi::BadRequest for a
  /// body without any boundary or one that ends inside a part.
  FormData finish();
  /// The most bytes the parser buffered at once (not counting in-memory parts), for tests.
  std::size_t peak_buffer() const noexcept { return peak_; }

private:
  enum class State : std::uint8_t { preamble, after_boundary, headers, body, done };
  void run();
  void start_part(std::string_view header_block);
  void part_data(std::string_view data);
  void end_part();

  std::string delimiter_;  // "\r\n--" + boundary
  MultipartLimits limits_;
  std::string buf_;
  std::size_t peak_ = 0;
  std::uint64_t total_ = 0;
  State state_ = State::preamble;
  bool seen_boundary_ = false;
  std::size_t header_scan_ = 0;
  std::size_t parts_ = 0;
  std::size_t fields_total_ = 0;
  // The current part.
  bool is_file_ = false;
  std::string field_name_;
  std::string field_value_;
  Upload upload_;
  FormData form_;
};

/// Reads `in` to the end through a MultipartParser, `limits.read_size` bytes at a time.
FormData parse_multipart(Input& in, std::string_view boundary, const MultipartLimits& limits = {});

}  // namespace csgi
