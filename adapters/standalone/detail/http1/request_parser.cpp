#include "csgi/adapters/standalone/detail/http1/request_parser.hpp"

#include <cstring>

#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace http = boost::beast::http;
using boost::system::error_code;

namespace {
std::string_view sv(boost::beast::string_view s) { return {s.data(), s.size()}; }
}  // namespace

RequestParser::RequestParser(Env& env, const ServerOptions& opt, const csgi::ConnectionInfo& conn)
    : env_(env), opt_(opt), conn_(conn) {
  header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(opt.max_header_bytes, UINT32_MAX)));
  body_limit(opt.max_body_bytes);
}

int RequestParser::status_for(const error_code& ec) const {
  if (reject_status) return reject_status;
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::body_limit) return 413;
  return 400;
}

void RequestParser::refuse(int status, const char* why, error_code& ec, http::error e) {
  reject_status = status;
  reject_why = why;
  ec = e;
}

std::size_t RequestParser::take(boost::beast::string_view body) {
  std::size_t n = std::min(body.size(), sink_cap - sink_len);
  if (n) std::memcpy(sink + sink_len, body.data(), n);
  sink_len += n;
  return n;
}

void RequestParser::on_chunk_header_impl(std::uint64_t, boost::beast::string_view ext, error_code& ec) {
  if (ext.size() > 4096) ec = http::error::bad_chunk_extension;
}

void RequestParser::on_request_impl(http::verb, boost::beast::string_view method, boost::beast::string_view target,
                                    int version, error_code& ec) {
  if (method.size() + target.size() + 10 > opt_.max_request_line)
    return refuse(414, "request line too long", ec, http::error::bad_target);
  http10 = version < 11;
  head = method == "HEAD";
  RequestHead rh{sv(method), sv(target), version >= 11 ? "HTTP/1.1" : "HTTP/1.0"};
  try {
    populate_env(env_, rh, conn_);
  } catch (const HttpError& e) {
    refuse(e.status(), "bad request target", ec, http::error::bad_target);
  }
}

void RequestParser::on_field_impl(http::field f, boost::beast::string_view name, boost::beast::string_view value,
                                  error_code& ec) {
  if (is_header_done()) return;  // trailer fields of a chunked body are not part of the env
  if (++field_count_ > opt_.max_header_count)
    return refuse(431, "too many header fields", ec, http::error::header_limit);
  std::string_view v = sv(value);
  if (v.find('\0') != std::string_view::npos || v.find('\r') != std::string_view::npos)
    return refuse(400, "NUL or CR in a field value", ec, http::error::bad_value);
  switch (f) {
    case http::field::host: ++host_count_; break;
    case http::field::content_length:
      // One field of one number (RFC 9112 §6.3): a list ("5, 5") or a repeated field is refused, as
      // nginx does, so no app sees a CONTENT_LENGTH that is not a number.
      if (!cl_value_.empty()) return refuse(400, "repeated Content-Length", ec, http::error::bad_content_length);
      cl_value_ = trim_ows(v);
      if (cl_value_.empty() || cl_value_.find_first_not_of("0123456789") != std::string_view::npos)
        return refuse(400, "Content-Length is not a number", ec, http::error::bad_content_length);
      break;
    case http::field::transfer_encoding: {
      // RFC 9112 §6.1: chunked must be the final coding, once; any other coding is not implemented.
      te_seen_ = true;
      std::string_view rest = v;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view tok = trim_ows(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (tok.empty()) continue;
        if (te_chunked_last_) te_bad_order_ = true;
        te_chunked_last_ = iequals(tok, "chunked");
        if (!te_chunked_last_) te_unknown_ = true;
      }
      break;
    }
    case http::field::expect: expect = trim_ows(v); break;
    default: break;
  }
  add_header(env_, sv(name), v);
}

void RequestParser::on_header_impl(error_code& ec) {
  auto fail = [&](int status, const char* why) { refuse(status, why, ec, http::error::bad_value); };
  if (te_seen_) {
    if (!cl_value_.empty()) return fail(400, "Transfer-Encoding with Content-Length");
    if (http10) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (te_bad_order_ || !te_chunked_last_) return fail(400, "Transfer-Encoding does not end in chunked");
    if (te_unknown_) return fail(501, "unsupported transfer coding");
  }
  if (!http10 && host_count_ != 1) return fail(400, host_count_ ? "repeated Host" : "missing Host");
  if (http10 && host_count_ > 1) return fail(400, "repeated Host");
  if (host_count_ == 1 && !valid_host(env_.get(keys::HTTP_HOST))) return fail(400, "malformed Host");
  // RFC 9112 §3.2.2: the authority of an absolute-form target replaces Host.
  if (std::string_view authority = target_authority(env_.get(keys::REQUEST_URI)); !authority.empty()) {
    if (!valid_host(authority)) return fail(400, "malformed authority in the request target");
    env_.set_view(keys::HTTP_HOST, authority);
  }
  set_server_from_host(env_);
}

bool has_obs_fold(std::string_view head) noexcept {
  for (std::size_t p = head.find('\n'); p != std::string_view::npos && p + 1 < head.size(); p = head.find('\n', p + 1))
    if (head[p + 1] == ' ' || head[p + 1] == '\t') return true;
  return false;
}

bool head_complete(std::string_view bytes, std::size_t& scanned, bool& folded) noexcept {
  const char* b = bytes.data();
  std::size_t n = bytes.size();
  std::size_t i = scanned;
  while (i < n) {
    const void* hit = std::memchr(b + i, '\n', n - i);
    if (!hit) break;
    std::size_t k = static_cast<const char*>(hit) - b;
    if (k + 1 >= n || (b[k + 1] == '\r' && k + 2 >= n)) {
      scanned = k;
      return false;
    }
    if (b[k + 1] == '\n' || (b[k + 1] == '\r' && b[k + 2] == '\n')) return true;
    if (b[k + 1] == ' ' || b[k + 1] == '\t') folded = true;
    i = k + 1;
  }
  scanned = n;
  return false;
}

bool head_complete(std::string_view bytes, std::size_t& scanned) noexcept {
  bool folded = false;
  return head_complete(bytes, scanned, folded);
}

}  // namespace csgi::standalone::detail
