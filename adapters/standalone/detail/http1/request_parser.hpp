#pragma once
// The standalone server's request parser, without a socket: Boost.Beast's basic_parser, whose callbacks
// build the env in place, plus the framing rules Beast 1.74 does not enforce (RFC 9112 §3.2 Host, §5.2
// obs-fold, §6.1 Transfer-Encoding, §6.3 Content-Length) and the request-line and field-count limits.
// The connection feeds it bytes; the fuzz target (tests/fuzz/fuzz_http_parser.cpp) feeds it the same way.
// Not installed API.
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/request_env.hpp"

namespace csgi::standalone::detail {

class RequestParser final : public boost::beast::http::basic_parser<true> {
public:
  /// Env values point into the bytes given to put(): they must stay where they are while the request
  /// lives. `conn` is copied. Header and body limits come from `opt`.
  RequestParser(Env& env, const ServerOptions& opt, const csgi::ConnectionInfo& conn);

  // Body sink for the current put(): decoded body bytes go to sink.
  char* sink = nullptr;
  std::size_t sink_cap = 0;
  std::size_t sink_len = 0;

  // What the head said; valid once the header is parsed.
  int reject_status = 0;         // the status for a request refused by a framing rule (else 0)
  const char* reject_why = "";   // its reason, for the error body and the log
  bool http10 = false;
  bool head = false;             // a HEAD request
  std::string_view expect;

  /// The status to answer for a parse error `ec` (a framing rule's own status first).
  int status_for(const boost::system::error_code& ec) const;

private:
  void on_request_impl(boost::beast::http::verb, boost::beast::string_view method, boost::beast::string_view target,
                       int version, boost::system::error_code& ec) override;
  void on_response_impl(int, boost::beast::string_view, int, boost::system::error_code&) override {}
  void on_field_impl(boost::beast::http::field f, boost::beast::string_view name, boost::beast::string_view value,
                     boost::system::error_code& ec) override;
  void on_header_impl(boost::system::error_code& ec) override;
  void on_body_init_impl(boost::optional<std::uint64_t> const&, boost::system::error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, boost::system::error_code&) override { return take(body); }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view ext, boost::system::error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body, boost::system::error_code&) override {
    return take(body);
  }
  void on_finish_impl(boost::system::error_code&) override {}
  std::size_t take(boost::beast::string_view body);
  void refuse(int status, const char* why, boost::system::error_code& ec, boost::beast::http::error e);

  Env& env_;
  const ServerOptions& opt_;
  csgi::ConnectionInfo conn_;
  std::size_t field_count_ = 0;
  int host_count_ = 0;
  bool te_seen_ = false;
  bool te_bad_order_ = false;  // a coding follows chunked, or chunked twice
  bool te_chunked_last_ = false;
  bool te_unknown_ = false;
  std::string_view cl_value_;
};

/// RFC 9112 §5.2: true when a field line of the head starts with SP or HTAB (obs-fold), which Beast
/// silently unfolds and the server refuses.
bool has_obs_fold(std::string_view head) noexcept;

/// True when `bytes` holds a complete request head (an empty line ends it). `scanned` is where the last
/// call stopped (relative to bytes.data()); only new bytes are scanned.
bool head_complete(std::string_view bytes, std::size_t& scanned) noexcept;
/// The same, also setting `folded` when a field line of the head scanned so far starts with SP or HTAB
/// (what has_obs_fold finds in the head, found in the same pass).
bool head_complete(std::string_view bytes, std::size_t& scanned, bool& folded) noexcept;

}  // namespace csgi::standalone::detail
