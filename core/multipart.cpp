#include "csgi/core/multipart.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

// Calls f(lower-case name, value) for each ";name=value" parameter after the first ';' of a header value
// (RFC 9110 §5.6.6). Quoted values lose their quotes; inside them only \" and \\ are escapes, because
// browsers send Windows paths with bare backslashes.
template <class F>
void for_each_param(std::string_view v, F&& f) {
  std::size_t i = v.find(';');
  const std::size_t n = v.size();
  while (i < n) {
    while (i < n && (is_space(v[i]) || v[i] == ';')) ++i;
    std::size_t key_start = i;
    while (i < n && v[i] != '=' && v[i] != ';') ++i;
    std::string key(trim_ows(v.substr(key_start, i - key_start)));
    for (char& c : key)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    std::string value;
    if (i < n && v[i] == '=') {
      ++i;
      while (i < n && is_space(v[i])) ++i;
      if (i < n && v[i] == '"') {
        ++i;
        bool closed = false;
        for (; i < n; ++i) {
          if (v[i] == '\\' && i + 1 < n && (v[i + 1] == '"' || v[i + 1] == '\\')) {
            value.push_back(v[++i]);
          } else if (v[i] == '"') {
            closed = true;
            ++i;
            break;
          } else {
            value.push_back(v[i]);
          }
        }
        if (!closed) throw BadRequest("unterminated quoted string in header parameter \"" + key + "\"");
        while (i < n && v[i] != ';') ++i;
      } else {
        std::size_t start = i;
        while (i < n && v[i] != ';') ++i;
        value = trim_ows(v.substr(start, i - start));
      }
    }
    if (!key.empty()) f(key, std::move(value));
  }
}

// RFC 8187 ext-value: charset'language'percent-encoded. The bytes are kept as they are (UTF-8 in practice).
std::string decode_ext_value(std::string_view v) {
  std::size_t q1 = v.find('\'');
  std::size_t q2 = q1 == std::string_view::npos ? q1 : v.find('\'', q1 + 1);
  if (q2 == std::string_view::npos) throw BadRequest("malformed filename* parameter in multipart part");
  return percent_decode(v.substr(q2 + 1));
}

}  // namespace

// ---- TempFile ----

TempFile::TempFile(const std::string& dir) {
  std::string d = dir;
  if (d.empty()) {
    const char* t = std::getenv("TMPDIR");
    d = t && *t ? t : "/tmp";
  }
  std::string tmpl = d + "/csgi-upload-XXXXXX";
  fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "creating a temp file in " + d);
  path_ = std::move(tmpl);
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

void TempFile::write(std::string_view data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t w = ::write(fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "writing upload temp file " + path_);
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

// ---- Upload ----

std::string_view Upload::basename() const noexcept {
  std::string_view f = filename_;
  std::size_t slash = f.find_last_of("/\\");
  return slash == std::string_view::npos ? f : f.substr(slash + 1);
}

const std::string& Upload::path() const noexcept {
  static const std::string none;
  return file_ ? file_->path() : none;
}

std::string Upload::content() const {
  if (!file_) return data_;
  std::string out(size_, '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::pread(file_->fd(), out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "reading upload temp file " + file_->path());
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
  return out;
}

FileBody Upload::file_body() const {
  if (file_) return FileBody::open(file_->path(), 0, size_);
  // Small uploads live in memory: give them a file of their own so the body kind stays the same.
  TempFile t("");
  t.write(data_);
  return FileBody::open(t.path(), 0, size_);  // the open fd outlives the unlinked path
}

void Upload::save_as(const std::string& dest) const {
  namespace fs = std::filesystem;
  if (!file_) {
    int fd = ::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "opening " + dest);
    std::string_view d = data_;
    while (!d.empty()) {
      ssize_t w = ::write(fd, d.data(), d.size());
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        int e = errno;
        ::close(fd);
        throw std::system_error(e, std::generic_category(), "writing " + dest);
      }
      d.remove_prefix(static_cast<std::size_t>(w));
    }
    ::close(fd);
    return;
  }
  std::error_code ec;
  fs::remove(dest, ec);
  fs::create_hard_link(file_->path(), dest, ec);
  if (!ec) return;
  fs::copy_file(file_->path(), dest, fs::copy_options::overwrite_existing);
}

// ---- Uploads ----

const Upload* Uploads::get(std::string_view name) const noexcept {
  for (const Upload& u : list_)
    if (u.name() == name) return &u;
  return nullptr;
}

std::vector<const Upload*> Uploads::get_all(std::string_view name) const {
  std::vector<const Upload*> out;
  for (const Upload& u : list_)
    if (u.name() == name) out.push_back(&u);
  return out;
}

// ---- boundary ----

std::string multipart_boundary(std::string_view content_type) {
  std::string_view type = trim_ows(content_type.substr(0, content_type.find(';')));
  if (!istarts_with(type, "multipart/")) throw BadRequest("Content-Type is not multipart: " + std::string(type));
  std::string boundary;
  bool found = false;
  for_each_param(content_type, [&](const std::string& k, std::string v) {
    if (k == "boundary" && !found) {
      boundary = std::move(v);
      found = true;
    }
  });
  if (!found || boundary.empty()) throw BadRequest("multipart Content-Type without a boundary parameter");
  // RFC 2046 allows 70 characters; like common servers we accept up to 200 printable ones.
  if (boundary.size() > 200) throw BadRequest("multipart boundary longer than 200 characters");
  for (unsigned char c : boundary)
    if (c < 0x20 || c > 0x7e) throw BadRequest("multipart boundary holds a control or non-ASCII character");
  if (boundary.back() == ' ') throw BadRequest("multipart boundary ends with a space");
  return boundary;
}

// ---- MultipartParser ----

MultipartParser::MultipartParser(std::string_view boundary, MultipartLimits limits)
    : limits_(std::move(limits)) {
  if (boundary.empty() || boundary.size() > 200) throw BadRequest("multipart boundary missing or too long");
  delimiter_.reserve(boundary.size() + 4);
  delimiter_.append("\r\n--").append(boundary);
  if (limits_.read_size == 0) limits_.read_size = 64 * 1024;
  // The body may start with the boundary itself: a virtual CRLF in front lets one delimiter match all.
  buf_.reserve(limits_.read_size + std::max(limits_.max_header_size, delimiter_.size()) + 8);
  buf_.assign("\r\n");
}

MultipartParser::~MultipartParser() = default;

void MultipartParser::feed(std::string_view data) {
  if (data.empty() || state_ == State::done) return;  // the epilogue is ignored (RFC 2046)
  total_ += data.size();
  if (total_ > limits_.max_body_size)
    throw PayloadTooLarge("multipart body is larger than " + std::to_string(limits_.max_body_size) + " bytes");
  buf_.append(data);
  peak_ = std::max(peak_, buf_.size());
  run();
}

void MultipartParser::run() {
  std::size_t pos = 0;
  const std::size_t dl = delimiter_.size();
  for (;;) {
    std::string_view rest(buf_.data() + pos, buf_.size() - pos);
    if (state_ == State::preamble) {
      std::size_t p = rest.find(delimiter_);
      if (p == std::string_view::npos) {
        if (rest.size() >= dl) pos += rest.size() - (dl - 1);
        break;
      }
      pos += p + dl;
      state_ = State::after_boundary;
      seen_boundary_ = true;
    } else if (state_ == State::after_boundary) {
      // "--" closes the form; otherwise optional transport padding, then CRLF.
      if (rest.size() < 2) break;
      if (rest[0] == '-' && rest[1] == '-') {
        state_ = State::done;
        pos = buf_.size();
        break;
      }
      std::size_t i = 0;
      while (i < rest.size() && is_space(rest[i])) ++i;
      if (i > 256) throw BadRequest("malformed multipart boundary line");
      if (rest.size() - i < 2) break;
      if (rest[i] != '\r' || rest[i + 1] != '\n')
        throw BadRequest("malformed multipart boundary line (the boundary occurs inside a part?)");
      pos += i + 2;
      if (++parts_ > limits_.max_parts)
        throw PayloadTooLarge("multipart body has more than " + std::to_string(limits_.max_parts) + " parts");
      state_ = State::headers;
      header_scan_ = 0;
    } else if (state_ == State::headers) {
      std::size_t end, skip;
      if (rest.size() >= 2 && rest[0] == '\r' && rest[1] == '\n') {
        end = 0;  // no header fields at all
        skip = 2;
      } else {
        std::size_t p = rest.find("\r\n\r\n", header_scan_);
        if (p == std::string_view::npos) {
          if (rest.size() > limits_.max_header_size)
            throw PayloadTooLarge("multipart part headers are larger than " +
                                  std::to_string(limits_.max_header_size) + " bytes");
          header_scan_ = rest.size() >= 3 ? rest.size() - 3 : 0;
          break;
        }
        end = p + 2;
        skip = p + 4;
      }
      if (end > limits_.max_header_size)
        throw PayloadTooLarge("multipart part headers are larger than " + std::to_string(limits_.max_header_size) +
                              " bytes");
      start_part(rest.substr(0, end));
      pos += skip;
      state_ = State::body;
    } else if (state_ == State::body) {
      std::size_t p = rest.find(delimiter_);
      if (p == std::string_view::npos) {
        // All but a tail that could be the start of the delimiter is part data.
        if (rest.size() >= dl) {
          std::size_t n = rest.size() - (dl - 1);
          part_data(rest.substr(0, n));
          pos += n;
        }
        break;
      }
      part_data(rest.substr(0, p));
      end_part();
      pos += p + dl;
      state_ = State::after_boundary;
    } else {
      pos = buf_.size();
      break;
    }
  }
  buf_.erase(0, pos);
}

void MultipartParser::start_part(std::string_view block) {
  Headers headers;
  while (!block.empty()) {
    std::size_t eol = block.find("\r\n");
    std::string_view line = block.substr(0, eol);
    block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 2);
    if (line.empty()) continue;
    if (is_space(line.front())) {  // obsolete line folding: continues the previous field
      if (headers.empty()) throw BadRequest("malformed multipart part header (folded first line)");
      auto it = headers.end() - 1;
      it->value.push_back(' ');
      it->value.append(trim_ows(line));
      continue;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      throw BadRequest("malformed multipart part header: " + std::string(line.substr(0, 80)));
    headers.add(std::string(trim_ows(line.substr(0, colon))), std::string(trim_ows(line.substr(colon + 1))));
  }
  auto cd = headers.get("Content-Disposition");
  if (!cd) throw BadRequest("multipart part without Content-Disposition");
  std::string_view type = trim_ows(cd->substr(0, cd->find(';')));
  if (!iequals(type, "form-data")) throw BadRequest("multipart part disposition is not form-data");
  std::string name, filename;
  bool has_name = false, has_filename = false, has_ext = false;
  for_each_param(*cd, [&](const std::string& k, std::string v) {
    if (k == "name" && !has_name) {
      name = std::move(v);
      has_name = true;
    } else if (k == "filename" && !has_ext) {
      filename = std::move(v);
      has_filename = true;
    } else if (k == "filename*") {
      filename = decode_ext_value(v);
      has_filename = has_ext = true;
    }
  });
  if (!has_name) throw BadRequest("multipart part without a name");
  is_file_ = has_filename;
  field_value_.clear();
  if (is_file_) {
    upload_ = Upload();
    upload_.name_ = std::move(name);
    upload_.filename_ = std::move(filename);
    auto ct = headers.get("Content-Type");
    upload_.content_type_ = ct && !ct->empty() ? std::string(*ct) : "application/octet-stream";
    upload_.headers_ = std::move(headers);
  } else {
    field_name_ = std::move(name);
  }
}

void MultipartParser::part_data(std::string_view data) {
  if (data.empty()) return;
  if (!is_file_) {
    if (field_value_.size() + data.size() > limits_.max_field_size)
      throw PayloadTooLarge("multipart field \"" + field_name_ + "\" is larger than " +
                            std::to_string(limits_.max_field_size) + " bytes");
    fields_total_ += data.size();
    if (fields_total_ > limits_.max_fields_total)
      throw PayloadTooLarge("multipart fields are larger than " + std::to_string(limits_.max_fields_total) +
                            " bytes together");
    field_value_.append(data);
    return;
  }
  upload_.size_ += data.size();
  if (upload_.size_ > limits_.max_file_size)
    throw PayloadTooLarge("uploaded file \"" + upload_.name_ + "\" is larger than " +
                          std::to_string(limits_.max_file_size) + " bytes");
  if (upload_.file_) {
    upload_.file_->write(data);
  } else if (upload_.data_.size() + data.size() > limits_.memory_threshold) {
    upload_.file_ = std::make_shared<TempFile>(limits_.temp_dir);
    upload_.file_->write(upload_.data_);
    upload_.file_->write(data);
    std::string().swap(upload_.data_);
  } else {
    upload_.data_.append(data);
  }
}

void MultipartParser::end_part() {
  if (is_file_) {
    form_.uploads.add(std::move(upload_));
    upload_ = Upload();
  } else {
    form_.fields.add(field_name_, field_value_);
  }
}

FormData MultipartParser::finish() {
  if (state_ != State::done) {
    if (!seen_boundary_) throw BadRequest("multipart body does not contain its boundary");
    throw BadRequest("multipart body ends inside a part (truncated before the closing boundary)");
  }
  return std::move(form_);
}

FormData parse_multipart(Input& in, std::string_view boundary, const MultipartLimits& limits) {
  MultipartParser parser(boundary, limits);
  std::size_t size = limits.read_size ? limits.read_size : 64 * 1024;
  std::unique_ptr<char[]> chunk(new char[size]);
  for (;;) {
    std::size_t r = in.read(chunk.get(), size);
    if (r == 0) break;
    parser.feed({chunk.get(), r});
  }
  return parser.finish();
}

}  // namespace csgi
