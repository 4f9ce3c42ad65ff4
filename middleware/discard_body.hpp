#pragma once
/// Dropping a response body while keeping its status and headers (head, conditional_get, 304s): used
/// from inside an on_response callback. A pull stream is closed (RES-9) and replaced by an empty body;
/// a body still to come through a streaming Writer is dropped chunk by chunk by the returned filter.
#include "csgi/core/on_response.hpp"

namespace csgi::mw {

/// Empties `res.body`; returns the filter to hand back from the callback (null when none is needed).
BodyFilter discard_body(Response& res);

}  // namespace csgi::mw
