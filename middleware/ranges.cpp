#include "csgi/middleware/ranges.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <system_error>

#include "csgi/core/http_date.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/range.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

namespace {

std::string boundary() {
  static const std::uint64_t seed = [] {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd();
  }();
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (counter.fetch_add(1, std::memory_order_relaxed) + 1);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return std::string("csgi-") + buf;
}

std::string content_range(const ByteRange& r, std::uint64_t size) {
  return "bytes " + std::to_string(r.first) + "-" + std::to_string(r.last) + "/" + std::to_string(size);
}

std::string part_head(const std::string& b, std::string_view type, const ByteRange& r, std::uint64_t size) {
  std::string h = "--" + b + "\r\n";
  if (!type.empty()) h.append("Content-Type: ").append(type).append("\r\n");
  h += "Content-Range: " + content_range(r, size) + "\r\n\r\n";
  return h;
}

std::uint64_t multipart_length(const std::vector<ByteRange>& ranges, const std::string& b, std::string_view type,
                               std::uint64_t size) {
  std::uint64_t n = 0;
  for (const ByteRange& r : ranges) n += part_head(b, type, r, size).size() + r.length() + 2;
  return n + 2 + b.size() + 4;
}

/// multipart/byteranges over an open file: part headers from memory, part data by pread in chunks.
/// `base` is where the representation starts in the file (a FileBody's offset).
class MultipartStream final : public Stream {
public:
  MultipartStream(std::shared_ptr<FileHandle> f, std::uint64_t base, std::vector<ByteRange> ranges, std::string b,
                  std::string type, std::uint64_t size)
      : f_(std::move(f)), base_(base), ranges_(std::move(ranges)), b_(std::move(b)), type_(std::move(type)),
        size_(size) {}

  bool next(std::string& out) override {
    if (!f_) return false;
    if (i_ == ranges_.size()) {
      out = "--" + b_ + "--\r\n";
      f_.reset();
      return true;
    }
    const ByteRange& r = ranges_[i_];
    out.clear();
    if (!in_part_) {
      out = part_head(b_, type_, r, size_);
      in_part_ = true;
      pos_ = r.first;
    }
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(r.last + 1 - pos_, 65536));
    std::size_t at = out.size();
    out.resize(at + want);
    read_exact(out.data() + at, want, base_ + pos_);
    pos_ += want;
    if (pos_ == r.last + 1) {
      out += "\r\n";
      in_part_ = false;
      ++i_;
    }
    return true;
  }
  void close() override { f_.reset(); }

private:
  void read_exact(char* dst, std::size_t n, std::uint64_t off) const {
    std::size_t got = 0;
    while (got < n) {
      ssize_t k = ::pread(f_->fd(), dst + got, n - got, static_cast<off_t>(off + got));
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) throw std::system_error(errno, std::generic_category(), "read (multipart/byteranges)");
      if (k == 0) throw std::runtime_error("file shrank while serving multipart/byteranges");
      got += static_cast<std::size_t>(k);
    }
  }

  std::shared_ptr<FileHandle> f_;
  std::uint64_t base_;
  std::vector<ByteRange> ranges_;
  std::string b_, type_;
  std::uint64_t size_;
  std::size_t i_ = 0;
  bool in_part_ = false;
  std::uint64_t pos_ = 0;
};

bool is_weak(std::string_view tag) { return tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/'; }

/// The bytes of a complete body, or nullptr for other bodies.
const std::string* complete_bytes(const Body& body) {
  if (auto* s = std::get_if<std::string>(&body)) return s;
  if (auto* b = std::get_if<SharedBytes>(&body)) {
    static const std::string empty;
    return *b ? b->get() : &empty;
  }
  return nullptr;
}

/// The size of a rangeable body; nullopt when the body is not rangeable (or a file cannot be stat'ed).
std::optional<std::uint64_t> rangeable_size(const RangeRequest& req, const Response& res) {
  if (res.status != 200 || res.headers.has("content-range")) return std::nullopt;
  if (auto ar = res.headers.get("accept-ranges"); ar && iequals(trim_ows(*ar), "none")) return std::nullopt;
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    try {
      return f->size();
    } catch (const std::exception&) {
      return std::nullopt;  // the adapter answers a file it cannot open
    }
  }
  // An empty complete body answering HEAD stands for a body it does not carry.
  if (const std::string* s = complete_bytes(res.body); s && !req.head) return s->size();
  return std::nullopt;
}

void answer_416(Response& res, std::uint64_t size) {
  Response e = Response::error(416);
  for (std::string_view h : {"Content-Type", "Content-Length", "Content-Encoding"}) res.headers.remove(h);
  res.status = 416;
  res.headers.set("Content-Range", "bytes */" + std::to_string(size));
  for (const Header& h : e.headers) res.headers.set(h.name, h.value);
  res.body = std::move(e.body);
}

void answer_single(Response& res, const ByteRange& r, std::uint64_t size) {
  res.status = 206;
  res.headers.set("Content-Range", content_range(r, size));
  res.headers.set("Content-Length", std::to_string(r.length()));
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    f->offset += r.first;
    f->length = r.length();
    return;
  }
  res.body = complete_bytes(res.body)->substr(static_cast<std::size_t>(r.first), static_cast<std::size_t>(r.length()));
}

void answer_multipart(Response& res, std::vector<ByteRange> ranges, std::uint64_t size) {
  std::string type(res.headers.get("content-type").value_or(""));
  std::string b = boundary();
  std::uint64_t length = multipart_length(ranges, b, type, size);
  if (auto* f = std::get_if<FileBody>(&res.body)) {
    std::shared_ptr<FileHandle> fh = f->file;
    if (!fh) {
      try {
        fh = FileBody::open(f->path).file;
      } catch (const std::system_error&) {
        return;  // left whole: the adapter answers a file it cannot open
      }
    }
    res.body = StreamPtr(std::make_shared<MultipartStream>(std::move(fh), f->offset, std::move(ranges), b, type, size));
  } else {
    const std::string& src = *complete_bytes(res.body);
    std::string out;
    out.reserve(static_cast<std::size_t>(length));
    for (const ByteRange& r : ranges) {
      out += part_head(b, type, r, size);
      out.append(src, static_cast<std::size_t>(r.first), static_cast<std::size_t>(r.length()));
      out += "\r\n";
    }
    out += "--" + b + "--\r\n";
    res.body = std::move(out);
  }
  res.status = 206;
  res.headers.set("Content-Type", "multipart/byteranges; boundary=" + b);
  res.headers.set("Content-Length", std::to_string(length));
}

}  // namespace

RangeRequest RangeRequest::from(const Env& env) {
  RangeRequest r;
  std::string_view method = env.get(keys::REQUEST_METHOD);
  r.get = method == "GET";
  r.head = method == "HEAD";
  r.range = env.get(keys::HTTP_RANGE);
  const Value* ir = env.find(keys::HTTP_IF_RANGE);
  r.has_if_range = ir && ir->is_text();
  if (r.has_if_range) r.if_range = ir->text();
  return r;
}

bool if_range_matches(std::string_view if_range, std::string_view etag, std::string_view last_modified) noexcept {
  if_range = trim_ows(if_range);
  if (if_range.empty() || is_weak(if_range)) return false;
  if (if_range.front() == '"') {
    etag = trim_ows(etag);
    return !is_weak(etag) && etag == if_range;
  }
  try {
    auto a = parse_http_date(if_range);
    auto b = parse_http_date(trim_ows(last_modified));
    return a && b && *a == *b;
  } catch (...) {
    return false;
  }
}

void apply_ranges(const RangeRequest& req, Response& res, std::size_t max_ranges) {
  std::optional<std::uint64_t> size = rangeable_size(req, res);
  if (!size) return;
  if (!res.headers.has("accept-ranges")) res.headers.add("Accept-Ranges", "bytes");
  if (!req.get || req.range.empty()) return;
  if (req.has_if_range && !if_range_matches(req.if_range, res.headers.get("etag").value_or(""),
                                            res.headers.get("last-modified").value_or("")))
    return;
  RangeResult rr = parse_range(req.range, *size, max_ranges);
  switch (rr.kind) {
    case RangeResult::Kind::ignore: return;
    case RangeResult::Kind::unsatisfiable: return answer_416(res, *size);
    case RangeResult::Kind::satisfiable:
      if (rr.ranges.size() == 1) return answer_single(res, rr.ranges.front(), *size);
      return answer_multipart(res, std::move(rr.ranges), *size);
  }
}

Ranges::Ranges(App next, RangesOptions options) : next_(std::move(next)), o_(options) {
  if (!next_) throw std::invalid_argument("Ranges: no next app");
  if (o_.max_ranges == 0) throw std::invalid_argument("Ranges: max_ranges must be at least 1");
}

Response Ranges::operator()(Env& env) {
  std::size_t max = o_.max_ranges;
  return on_response(next_(env), [req = RangeRequest::from(env), max](Response& res) -> BodyFilter {
    apply_ranges(req, res, max);
    return nullptr;
  });
}

}  // namespace csgi::mw
