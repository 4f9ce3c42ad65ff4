#pragma once
// The HTTP/2 session's own pieces, shared by its files (h2_session.cpp: the session and its streams;
// h2_callbacks.cpp: nghttp2's callbacks; h2_response.cpp: responses to frames).
#include <nghttp2/nghttp2.h>

#include <charconv>
#include <optional>
#include <string_view>

#include "csgi/adapters/standalone/detail/exchange/fields.hpp"
#include "csgi/adapters/standalone/detail/exchange/stream_body.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_websocket.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace h2 {
// DATA frames with neither payload nor END_STREAM a connection may send (CVE-2019-9518), plus one per
// request it completes.
constexpr std::uint64_t empty_frame_budget = 1000;
}  // namespace h2

struct H2Session::Stream {
  std::int32_t id = 0;
  std::shared_ptr<H2Request> req;  // set by new_stream()
  // The request head as it comes.
  std::size_t header_bytes = 0, header_count = 0;
  std::string_view method, path, authority, host, cookie, protocol;
  int bad_status = 0;
  std::string why;
  std::optional<std::uint64_t> content_length;
  bool head_done = false, request_done = false, dispatched = false, responded = false, reported = false;
  bool body_over = false;
  bool refused = false;         // reset with REFUSED_STREAM: the connection's body budget was spent
  std::uint64_t buffered = 0;   // body bytes counted against the connection's budget
  // The response.
  int status = 0;
  StreamBody body;
  bool data_open = false;  // a data source is submitted and has not given its end
  // WebSocket (RFC 8441): an extended CONNECT with `:protocol websocket`; its DATA before the app's
  // answer (window held), then the pipe to the WebSocket session.
  bool ws = false, ws_early_end = false;
  std::string ws_early;
  std::shared_ptr<H2WsPipe> pipe;
  std::uint64_t ws_sent = 0;
  bool ws_eof = false, ws_deferred = false;

  std::uint64_t sent() const noexcept { return body.sent() + ws_sent; }

  ~Stream() {
    if (pipe) pipe->closed();
  }
};


/// Installs the session's callbacks (h2_callbacks.cpp).
void install_h2_callbacks(nghttp2_session_callbacks* cb);
/// The data source of a response body (h2_callbacks.cpp).
ssize_t h2_read_body(nghttp2_session* ng, std::int32_t id, std::uint8_t* buf, std::size_t length,
                     std::uint32_t* flags, nghttp2_data_source* src, void* p);

}  // namespace csgi::standalone::detail
