#include "csgi/core/multipart.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>

#include "csgi/core/http_error.hpp"

using namespace csgi;

namespace {

const std::string B = "----csgiBoundary7MA4YWxk";

std::string part(std::string_view disposition, std::string_view content, std::string_view extra_headers = {}) {
  std::string s = "--" + B + "\r\nContent-Disposition: form-data; " + std::string(disposition) + "\r\n";
  s += extra_headers;
  s += "\r\n";
  s += content;
  s += "\r\n";
  return s;
}

std::string close_tag() { return "--" + B + "--\r\n"; }

FormData parse(const std::string& body, MultipartLimits lim = {}) {
  StringInput in(body);
  return parse_multipart(in, B, lim);
}

// Feeds the body in pieces of `step` bytes.
FormData parse_in_steps(const std::string& body, std::size_t step, MultipartLimits lim = {}) {
  MultipartParser p(B, lim);
  for (std::size_t i = 0; i < body.size(); i += step) p.feed(std::string_view(body).substr(i, step));
  return p.finish();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::uint64_t fnv1a(std::uint64_t h, std::string_view data) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
constexpr std::uint64_t fnv_basis = 0xcbf29ce484222325ull;

// A multipart body generated on the fly: a text field, then one file of `size` pseudo-random bytes (which
// hold CRs, LFs and dashes, so near-delimiters occur), then the closing boundary. The test never holds it.
class GeneratedBody final : public Input {
public:
  explicit GeneratedBody(std::uint64_t size) : size_(size) {
    head_ = part("name=\"title\"", "big one");
    head_ += "--" + B + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n";
    tail_ = "\r\n" + close_tag();
  }
  std::size_t read(char* buf, std::size_t n) override {
    std::size_t out = 0;
    while (out < n) {
      if (pos_ < head_.size()) {
        std::size_t k = std::min(n - out, head_.size() - pos_);
        std::memcpy(buf + out, head_.data() + pos_, k);
        pos_ += k;
        out += k;
      } else if (pos_ < head_.size() + size_) {
        std::uint64_t left = head_.size() + size_ - pos_;
        std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n - out, left));
        for (std::size_t i = 0; i < k; ++i) buf[out + i] = next_byte();
        digest_ = fnv1a(digest_, std::string_view(buf + out, k));
        pos_ += k;
        out += k;
      } else {
        std::uint64_t off = pos_ - head_.size() - size_;
        if (off >= tail_.size()) break;
        std::size_t k = std::min<std::size_t>(n - out, tail_.size() - off);
        std::memcpy(buf + out, tail_.data() + off, k);
        pos_ += k;
        out += k;
      }
    }
    return out;
  }
  std::uint64_t digest() const { return digest_; }

private:
  char next_byte() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    unsigned v = static_cast<unsigned>(state_ >> 59);  // 0..31
    static constexpr char alphabet[] = "\r\n--abcdefghij\r\n-\r-0123456789AB";
    return alphabet[v];
  }
  std::uint64_t size_;
  std::string head_, tail_;
  std::uint64_t pos_ = 0;
  std::uint64_t state_ = 42;
  std::uint64_t digest_ = fnv_basis;
};

}  // namespace

TEST_CASE("multipart: fields with repeated names, empty values, files", "[multipart]") {
  std::string body = "preamble to ignore\r\n" + part("name=\"a\"", "1") + part("name=\"a\"", "two\r\nlines") +
                     part("name=\"empty\"", "") +
                     part("name=\"f\"; filename=\"hello.txt\"", "file content", "Content-Type: text/plain\r\n") +
                     part("name=\"f\"; filename=\"\"", "") + close_tag() + "epilogue to ignore";
  for (std::size_t step : {body.size(), std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    INFO("step " << step);
    FormData f = parse_in_steps(body, step);
    CHECK(f.fields.get_all("a") == std::vector<std::string_view>{"1", "two\r\nlines"});
    CHECK(f.fields.contains("empty"));
    CHECK(f.fields.get("empty") == "");
    CHECK(f.fields.size() == 3);
    REQUIRE(f.uploads.size() == 2);
    const Upload* u = f.uploads.get("f");
    REQUIRE(u);
    CHECK(u->filename() == "hello.txt");
    CHECK(u->content_type() == "text/plain");
    CHECK(u->size() == 12);
    CHECK(u->in_memory());
    CHECK(u->memory() == "file content");
    CHECK(u->content() == "file content");
    CHECK(u->headers().get("content-type") == "text/plain");
    const Upload* empty = f.uploads.get_all("f").at(1);
    CHECK(empty->filename() == "");
    CHECK(empty->size() == 0);
    CHECK(empty->content_type() == "application/octet-stream");
  }
}

TEST_CASE("multipart: '+' and %XX are data, not encodings", "[multipart]") {
  FormData f = parse(part("name=\"q\"", "a+b%20c%") + close_tag());
  CHECK(f.fields.get("q") == "a+b%20c%");
}

TEST_CASE("multipart: header parameters (quotes, escapes, filename*, Windows paths)", "[multipart]") {
  std::string body = part(R"(name="x\"y"; filename="C:\Users\me\photo.jpg")", "jpg") +
                     part(R"(NAME=plain; filename=old.txt; filename*=UTF-8''%C3%A9t%C3%A9.txt)", "ete") +
                     part(R"(name="sp ace";filename="a;b.txt")", "semi") + close_tag();
  FormData f = parse(body);
  REQUIRE(f.uploads.size() == 3);
  const Upload& a = *f.uploads.get("x\"y");
  CHECK(a.filename() == R"(C:\Users\me\photo.jpg)");
  CHECK(a.basename() == "photo.jpg");
  CHECK(f.uploads.get("plain")->filename() == "\xC3\xA9t\xC3\xA9.txt");
  CHECK(f.uploads.get("sp ace")->filename() == "a;b.txt");
}

TEST_CASE("multipart: a body starting right at the boundary, no part headers beyond the name", "[multipart]") {
  std::string body = "--" + B + "\r\nContent-Disposition: form-data; name=\"k\"\r\n\r\nv\r\n--" + B + "--";
  CHECK(parse(body).fields.get("k") == "v");
  // Transport padding after the boundary is allowed.
  std::string padded = "--" + B + "  \t\r\nContent-Disposition: form-data; name=\"k\"\r\n\r\nv\r\n--" + B + "--";
  CHECK(parse(padded).fields.get("k") == "v");
  // An empty form.
  CHECK(parse("--" + B + "--\r\n").fields.empty());
}

TEST_CASE("multipart_boundary: from Content-Type; missing boundary is a 400", "[multipart]") {
  CHECK(multipart_boundary("multipart/form-data; boundary=abc") == "abc");
  CHECK(multipart_boundary("Multipart/Form-Data; charset=utf-8; BOUNDARY=\"a b:c\"") == "a b:c");
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data"), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data; boundary="), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data; boundary=\"\""), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data; boundary=\"abc"), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("text/plain; boundary=abc"), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data; boundary=" + std::string(201, 'x')), BadRequest);
  CHECK_THROWS_AS(multipart_boundary("multipart/form-data; boundary=\"a\x01\""), BadRequest);
  CHECK_THROWS_AS(MultipartParser(""), BadRequest);
}

TEST_CASE("multipart: a body without its boundary is a 400", "[multipart]") {
  CHECK_THROWS_AS(parse(""), BadRequest);
  CHECK_THROWS_AS(parse("just some text\r\n"), BadRequest);
  std::string other = "--otherboundary\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--otherboundary--";
  try {
    parse(other);
    FAIL("no exception");
  } catch (const BadRequest& e) {
    CHECK(std::string(e.what()).find("boundary") != std::string::npos);
  }
}

TEST_CASE("multipart: truncated bodies are a 400", "[multipart]") {
  std::string full = part("name=\"a\"", "1") + part("name=\"f\"; filename=\"x\"", std::string(5000, 'z')) + close_tag();
  // Cut anywhere before the closing "--": every prefix must fail cleanly.
  std::size_t closing = full.rfind("--" + B + "--") + 2 + B.size() + 2;
  for (std::size_t cut = 0; cut < closing; cut += (cut < 200 ? 1 : 97)) {
    INFO("cut at " << cut);
    CHECK_THROWS_AS(parse(full.substr(0, cut)), BadRequest);
  }
  CHECK_NOTHROW(parse(full.substr(0, closing)));
  // Headers that never end.
  CHECK_THROWS_AS(parse("--" + B + "\r\nContent-Disposition: form-data; name=\"a\"\r\n"), BadRequest);
}

TEST_CASE("multipart: malformed parts are a 400", "[multipart]") {
  auto bad = [](std::string body) {
    INFO(body);
    CHECK_THROWS_AS(parse(body), BadRequest);
  };
  bad("--" + B + "\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n--" + B + "--");
  bad("--" + B + "\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--" + B + "--");
  bad("--" + B + "\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--" + B + "--");
  bad("--" + B + "\r\nno colon here\r\n\r\nx\r\n--" + B + "--");
  bad("--" + B + "\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--" + B + "--");
  bad("--" + B + "\r\n Content-Disposition: form-data; name=a\r\n\r\nx\r\n--" + B + "--");
  bad("--" + B + "XYZ\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--" + B + "--");
  bad(part("name=\"f\"; filename*=nonsense", "x") + close_tag());
}

TEST_CASE("multipart: limits give 413", "[multipart]") {
  std::string three = part("name=a", "1") + part("name=b", "2") + part("name=c", "3") + close_tag();
  MultipartLimits lim;
  lim.max_parts = 2;
  CHECK_THROWS_AS(parse(three, lim), PayloadTooLarge);
  lim = {};
  lim.max_field_size = 4;
  CHECK_NOTHROW(parse(part("name=a", "1234") + close_tag(), lim));
  CHECK_THROWS_AS(parse(part("name=a", "12345") + close_tag(), lim), PayloadTooLarge);
  lim = {};
  lim.max_fields_total = 2;
  CHECK_THROWS_AS(parse(three, lim), PayloadTooLarge);
  lim = {};
  lim.max_header_size = 64;
  CHECK_THROWS_AS(parse(part("name=a", "1", "X-Long: " + std::string(100, 'h') + "\r\n") + close_tag(), lim),
                  PayloadTooLarge);
  // Headers that never end are cut off at the limit, not buffered without bound.
  MultipartParser p(B, lim);
  p.feed("--" + B + "\r\nX: ");
  CHECK_THROWS_AS(p.feed(std::string(1000, 'h')), PayloadTooLarge);
  lim = {};
  lim.max_file_size = 10;
  CHECK_THROWS_AS(parse(part("name=f; filename=x", std::string(11, 'x')) + close_tag(), lim), PayloadTooLarge);
  lim = {};
  lim.max_body_size = 50;
  CHECK_THROWS_AS(parse(three, lim), PayloadTooLarge);
}

TEST_CASE("multipart: files above the threshold go to a temp file, removed with the form", "[multipart]") {
  char dir_tmpl[] = "/tmp/csgi-mp-test-XXXXXX";
  REQUIRE(::mkdtemp(dir_tmpl));
  std::string dir = dir_tmpl;
  MultipartLimits lim;
  lim.memory_threshold = 100;
  lim.temp_dir = dir;
  std::string small(100, 's'), big(101, 'b');
  std::string path;
  {
    FormData f = parse_in_steps(part("name=s; filename=s", small) + part("name=b; filename=b", big) + close_tag(), 13, lim);
    const Upload* s = f.uploads.get("s");
    const Upload* b = f.uploads.get("b");
    REQUIRE((s && b));
    CHECK(s->in_memory());
    CHECK(s->path().empty());
    CHECK_FALSE(b->in_memory());
    CHECK(b->memory().empty());
    path = b->path();
    CHECK(path.rfind(dir + "/csgi-upload-", 0) == 0);
    CHECK(file_exists(path));
    CHECK(b->size() == 101);
    CHECK(b->content() == big);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == big);
    b->save_as(dir + "/saved");
    s->save_as(dir + "/saved-small");
    FileBody fb = b->file_body();
    CHECK(fb.size() == 101);
  }
  CHECK_FALSE(file_exists(path));
  std::ifstream saved(dir + "/saved", std::ios::binary);
  std::stringstream ss;
  ss << saved.rdbuf();
  CHECK(ss.str() == big);
  std::ifstream saved_small(dir + "/saved-small", std::ios::binary);
  std::stringstream ss2;
  ss2 << saved_small.rdbuf();
  CHECK(ss2.str() == small);
  ::unlink((dir + "/saved").c_str());
  ::unlink((dir + "/saved-small").c_str());
  CHECK(::rmdir(dir.c_str()) == 0);  // nothing else was left behind
}

TEST_CASE("multipart: a 10 MB upload streams to disk with bounded buffers", "[multipart]") {
  constexpr std::uint64_t size = 10 * 1024 * 1024;
  GeneratedBody in(size);
  MultipartLimits lim;
  MultipartParser parser(B, lim);
  char chunk[16384];
  std::size_t r;
  while ((r = in.read(chunk, sizeof chunk)) > 0) parser.feed({chunk, r});
  FormData f = parser.finish();
  CHECK(f.fields.get("title") == "big one");
  const Upload* u = f.uploads.get("file");
  REQUIRE(u);
  CHECK(u->size() == size);
  CHECK_FALSE(u->in_memory());
  CHECK(u->memory().empty());
  // The parser held one read chunk plus a delimiter-sized tail, never the upload.
  INFO("peak buffer " << parser.peak_buffer());
  CHECK(parser.peak_buffer() <= sizeof chunk + lim.max_header_size + B.size() + 8);
  struct stat st;
  REQUIRE(::stat(u->path().c_str(), &st) == 0);
  CHECK(static_cast<std::uint64_t>(st.st_size) == size);
  // Same bytes as generated: digest the temp file in pieces.
  std::ifstream file(u->path(), std::ios::binary);
  std::uint64_t h = fnv_basis;
  std::vector<char> buf(1 << 16);
  while (file.read(buf.data(), static_cast<std::streamsize>(buf.size())) || file.gcount() > 0)
    h = fnv1a(h, std::string_view(buf.data(), static_cast<std::size_t>(file.gcount())));
  CHECK(h == in.digest());
}

TEST_CASE("parse_multipart reads the input in read_size chunks", "[multipart]") {
  GeneratedBody in(3 * 1024 * 1024);
  MultipartLimits lim;
  lim.read_size = 4096;
  FormData f = parse_multipart(in, B, lim);
  REQUIRE(f.uploads.get("file"));
  CHECK(f.uploads.get("file")->size() == 3 * 1024 * 1024);
}
