#pragma once
/// JSON request bodies and responses through nlohmann::json (Debian nlohmann-json3-dev).
///
///   csgi::Response create(csgi::Env& env) {
///     nlohmann::json in = csgi::read_json(env);            // 415 / 400 / 413 thrown as csgi::HttpError
///     return csgi::json_response(201, {{"id", 7}, {"name", in.at("name")}});
///   }
///
/// read_json() takes a body whose Content-Type is application/json or application/<x>+json (parameters
/// such as charset are ignored; JSON text is UTF-8, RFC 8259). It throws csgi::HttpError(415) for
/// another or a missing Content-Type, csgi::PayloadTooLarge (413) for a body over `max_bytes` (or the
/// csgix.body_limit key, whichever is smaller), and csgi::BadRequest (400) with the parser's reason for
/// malformed JSON, invalid UTF-8, a number too large for a double (`1e999999`) or nesting deeper than
/// `max_depth`. Adapters answer an HttpError with its status and reason (ADP-6). The body is read
/// through csgi::Request::content(), so it is read once and stays available to Request.
/// Reads: CONTENT_TYPE, CONTENT_LENGTH, csgi.input, csgix.body_limit. Writes: csgi.request.content.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "csgi/core/env.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

struct JsonLimits {
  std::size_t max_bytes = 1024 * 1024;  // body bytes; more: 413
  std::size_t max_depth = 128;          // nested arrays/objects; deeper: 400
};

/// The request body parsed as JSON (see above for the errors it throws).
nlohmann::json read_json(Env& env, const JsonLimits& limits = {});

/// A complete response: `body` serialised compactly, `Content-Type: application/json`. Strings holding
/// invalid UTF-8 are written with U+FFFD in place of the bad bytes, so the output is always valid JSON.
Response json_response(int status, const nlohmann::json& body);

/// `body` serialised as json_response() does (compact, always valid UTF-8).
std::string to_json_text(const nlohmann::json& body);

/// An RFC 9457 problem document for an error status, `Content-Type: application/problem+json`:
/// {"type":"about:blank","title":<reason phrase>,"status":N,"detail":<detail>} ("detail" only when
/// `detail` is not empty). 1xx, 204 and 304 get no body, as Response::error() gives them.
Response problem_response(int status, std::string_view detail = {});

/// True when the Accept field value `accept` ranks application/problem+json or application/json above
/// text/plain (the type of Response::error()): "application/json" yes, "*/*" or no Accept no.
bool prefers_problem_json(std::string_view accept) noexcept;

/// The error response for a request: problem_response() when its Accept prefers JSON
/// (prefers_problem_json), else Response::error().
Response error_response(const Env& env, int status, std::string_view detail = {});

}  // namespace csgi
