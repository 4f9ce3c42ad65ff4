// The standalone server's request parser (adapters/standalone/detail/http1/request_parser.hpp) on a raw connection
// stream, fed the way the connection feeds it: each head whole, bodies in pieces of fuzzer-chosen sizes,
// pipelined requests one after another until one is refused. Invariants beyond "no crash":
//  - a refused request has a 4xx/5xx status and ends the stream (framing is lost);
//  - an accepted head has one Host (HTTP/1.1), never Transfer-Encoding with Content-Length, a
//    Transfer-Encoding that ends in chunked, and the env rules (SCRIPT_NAME/PATH_INFO, no NUL, no HTTP_PROXY);
//  - a Content-Length body decodes to exactly that many bytes;
//  - a chunked body Beast accepts is accepted by an independent strict decoder written below, ending at the
//    same byte with the same content: the two never disagree on where a message ends (no smuggling);
//  - no body decodes past the body limit.
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include "csgi/adapters/standalone/detail/http1/request_parser.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/text.hpp"
#include "fuzz_support.hpp"

namespace {

using csgi::fuzz::check;
namespace http = boost::beast::http;

constexpr std::size_t npos = std::string_view::npos;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 9112 §7.1, strict on what decides framing (sizes, CRLFs, the trailer section's end), lenient on
// extension and trailer content. Returns the bytes consumed, or npos when `in` is not one valid chunked body.
std::size_t reference_chunked(std::string_view in, std::string& out) {
  std::size_t i = 0;
  for (;;) {
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (; i < in.size() && hex_digit(in[i]) >= 0; ++i, ++digits) {
      if (size >> 60) return npos;
      size = size * 16 + static_cast<unsigned>(hex_digit(in[i]));
    }
    if (digits == 0) return npos;
    std::size_t eol = in.find("\r\n", i);
    if (eol == npos) return npos;
    std::string_view ext = in.substr(i, eol - i);
    if (ext.find_first_of(std::string_view("\r\n\0", 3)) != npos) return npos;
    i = eol + 2;
    if (size == 0) {
      for (;;) {
        std::size_t end = in.find("\r\n", i);
        if (end == npos) return npos;
        std::string_view line = in.substr(i, end - i);
        if (line.find_first_of(std::string_view("\r\n\0", 3)) != npos) return npos;
        i = end + 2;
        if (line.empty()) return i;
      }
    }
    if (in.size() - i < size + 2) return npos;
    out.append(in.substr(i, size));
    i += size;
    if (in.substr(i, 2) != "\r\n") return npos;
    i += 2;
  }
}

// The last non-empty element of a list (RFC 9110 §5.6.1: empty elements are ignored).
std::string_view last_coding(std::string_view te) {
  for (;;) {
    auto comma = te.rfind(',');
    std::string_view last = csgi::trim_ows(comma == npos ? te : te.substr(comma + 1));
    if (!last.empty() || comma == npos) return last;
    te = te.substr(0, comma);
  }
}

// Tiny deterministic generator for piece sizes, seeded from the input.
struct Pieces {
  std::uint32_t state;
  std::size_t next() {
    state = state * 1664525u + 1013904223u;
    return 1 + (state >> 24) % 64;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace csgi;
  using namespace csgi::standalone;
  if (size < 1) return 0;
  Pieces pieces{data[0]};
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  static const ServerOptions opt = [] {
    ServerOptions o;
    o.max_body_bytes = 4096;
    o.max_header_count = 32;
    o.max_request_line = 1024;
    o.max_header_bytes = 4096;
    return o;
  }();
  static Env env;  // reused, as the server reuses one per connection
  csgi::ConnectionInfo conn;
  conn.server_name = "127.0.0.1";
  conn.server_port = "8080";
  conn.remote_addr = "127.0.0.1";
  conn.remote_port = "40000";
  conn.script_name = data[0] & 1 ? "/app" : "";

  for (int request = 0; request < 8 && !in.empty(); ++request) {
    while (!in.empty() && (in.front() == '\r' || in.front() == '\n')) in.remove_prefix(1);
    std::size_t scanned = 0;
    bool folded = false;
    if (in.empty() || !standalone::detail::head_complete(in, scanned, folded)) return 0;
    // A folded head is refused before parsing, as the server does (Beast would unfold it into a buffer
    // of its own, out of the env's reach).
    if (folded) {
      check(standalone::detail::has_obs_fold(in), "obs-fold found in the head scan");
      return 0;
    }
    env.clear();
    standalone::detail::RequestParser parser(env, opt, conn);
    boost::system::error_code ec;
    std::size_t used = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
    if (ec == http::error::need_more) ec = http::error::bad_line_ending;
    if (ec) {
      int status = parser.status_for(ec);
      check(status >= 400 && status < 600, "a refused head gets a 4xx/5xx");
      return 0;
    }
    check(parser.is_header_done(), "head parsed");
    check(used <= in.size(), "head within input");
    check(!standalone::detail::has_obs_fold(in.substr(0, used)), "no obs-fold left for the head scan to miss");
    if (parser.reject_status) return 0;
    in.remove_prefix(used);

    std::string_view script = env.get(keys::SCRIPT_NAME), path = env.get(keys::PATH_INFO);
    check(script.empty() || script.front() == '/', "SCRIPT_NAME empty or starts with /");
    check(path.empty() || path.front() == '/', "PATH_INFO empty or starts with /");
    check(path.empty() || std::memchr(path.data(), '\0', path.size()) == nullptr, "no NUL in PATH_INFO");
    check(!env.contains("HTTP_PROXY"), "no HTTP_PROXY");
    check(parser.http10 || env.contains(keys::HTTP_HOST), "HTTP/1.1 has a Host");
    bool te = env.contains("HTTP_TRANSFER_ENCODING");
    check(!(te && env.contains(keys::CONTENT_LENGTH)), "never Transfer-Encoding with Content-Length");
    check(!te || iequals(last_coding(env.get("HTTP_TRANSFER_ENCODING")), "chunked"), "TE ends in chunked");
    check(te == parser.chunked(), "chunked exactly when Transfer-Encoding was accepted");
    if (parser.is_done()) continue;  // no body

    // The body, in pieces.
    std::string body;
    char sink[512];
    std::size_t consumed = 0, offered = 0;
    bool failed = false;
    while (!parser.is_done()) {
      offered = std::min(in.size(), offered + pieces.next());
      parser.sink = sink;
      parser.sink_cap = sizeof sink;
      parser.sink_len = 0;
      ec = {};
      std::size_t n = parser.put(boost::asio::buffer(in.data() + consumed, offered - consumed), ec);
      check(n <= offered - consumed, "never consumes more than offered");
      consumed += n;
      body.append(sink, parser.sink_len);
      check(body.size() <= opt.max_body_bytes, "body within the limit");
      if (ec == http::error::need_more) ec = {};
      if (ec) {
        check(parser.status_for(ec) >= 400, "a refused body gets a 4xx/5xx");
        failed = true;
        break;
      }
      if (n == 0 && parser.sink_len == 0 && offered == in.size() && !parser.is_done()) break;  // needs more input
    }
    if (failed || !parser.is_done()) return 0;
    if (parser.chunked()) {
      std::string ref;
      std::size_t ref_used = reference_chunked(in.substr(0, consumed), ref);
      check(ref_used != npos, "a chunked body Beast accepts is valid chunked framing");
      check(ref_used == consumed, "Beast and the reference agree where the body ends");
      check(ref == body, "Beast and the reference decode the same bytes");
    } else {
      // The env's CONTENT_LENGTH (one field of digits: a list or a repeated field is refused) frames the body.
      std::string_view cl = trim_ows(env.get(keys::CONTENT_LENGTH));
      std::uint64_t n = 0;
      auto r = std::from_chars(cl.data(), cl.data() + cl.size(), n);
      check(r.ec == std::errc() && r.ptr == cl.data() + cl.size(), "CONTENT_LENGTH is a number");
      check(body.size() == n, "a Content-Length body has that length");
    }
    in.remove_prefix(consumed);
  }
  return 0;
}
