#pragma once
/// One way to post-process every kind of response (Plack's response_cb), so that no middleware branches
/// on the body kind itself (MW-1).
///
/// `on_response(res, cb)` calls `cb(res)` once the status and headers are known — at once for complete,
/// file and stream bodies, or when a delayed response answers. The callback may change status and headers.
/// For a response started through a streaming Writer it sees `body` holding an empty StreamPtr (chunks
/// come later, length unknown). It may return a BodyFilter: the body then passes through the filter chunk
/// by chunk (file bodies are read as a stream), and the filter is called a last time with eof=true to
/// flush what it kept back. Without a filter, bodies pass untouched (a file stays a file). A filtered
/// stream's or writer's trailer fields pass through unchanged (RES-15).
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "csgi/core/response.hpp"

namespace csgi {

using BodyFilter = std::function<std::string(std::string_view chunk, bool eof)>;
using ResponseCallback = std::function<BodyFilter(Response&)>;

Response on_response(Response res, ResponseCallback cb);

namespace detail {
/// on_response's last step for a complete, file or stream body: the body through `f`.
void filter_body(Response& res, const BodyFilter& f);
}  // namespace detail

/// on_response for a lambda or other callable, the same in every respect; a response that is not delayed
/// is handled in place, without wrapping the callable in a std::function.
template <class F>
  requires(std::is_invocable_r_v<BodyFilter, F&, Response&> && !std::is_same_v<std::remove_cvref_t<F>, ResponseCallback>)
Response on_response(Response res, F&& cb) {
  if (res.is_delayed()) return on_response(std::move(res), ResponseCallback(std::forward<F>(cb)));
  if (BodyFilter f = cb(res)) detail::filter_body(res, f);
  return res;
}

/// The common case of on_response: `fn(res)` may change the status and headers (of a complete response
/// now, of a delayed one when it answers through respond() or start()); the body passes untouched.
///   return csgi::on_headers(next(env), [](csgi::Response& r) { r.headers.add("X-Powered-By", "csgi"); });
Response on_headers(Response res, std::function<void(Response&)> fn);

/// A stream reading a file body in chunks (used when a file body has to be filtered).
StreamPtr file_stream(FileBody file, std::size_t chunk_size = 65536);

/// Turns any non-delayed body into a stream.
StreamPtr body_stream(Body body);

}  // namespace csgi
