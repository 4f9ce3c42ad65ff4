#include "csgi/core/json.hpp"

#include <algorithm>
#include <string_view>

#include "csgi/core/accept.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/request.hpp"

namespace csgi {

namespace {

bool is_json_media_type(std::string_view media) noexcept {
  constexpr std::string_view app = "application/", suffix = "+json";
  if (iequals(media, "application/json")) return true;
  return media.size() > app.size() + suffix.size() && iequals(media.substr(0, app.size()), app) &&
         iequals(media.substr(media.size() - suffix.size()), suffix);
}

// The parser's message without its "[json.exception.parse_error.101] " tag.
std::string parse_reason(const nlohmann::json::exception& e) {
  std::string_view w = e.what();
  if (auto p = w.find("] "); w.starts_with("[json.exception.") && p != std::string_view::npos) w.remove_prefix(p + 2);
  return "malformed JSON: " + std::string(w);
}

struct TooDeep {};

}  // namespace

nlohmann::json read_json(Env& env, const JsonLimits& limits) {
  Request req(env);
  std::string_view media = req.media_type();
  if (!is_json_media_type(media))
    throw HttpError(415, media.empty() ? "a JSON body needs Content-Type: application/json"
                                       : "expected Content-Type application/json, got " + std::string(media));
  RequestLimits rl;
  rl.max_content_size = limits.max_bytes;
  std::string_view text = Request(env, rl).content();
  if (text.size() > limits.max_bytes)
    throw PayloadTooLarge("JSON body is larger than " + std::to_string(limits.max_bytes) + " bytes");
  // The callback sees each array/object start with the count of containers around it.
  std::size_t max_depth = limits.max_depth;
  auto depth_check = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && static_cast<std::size_t>(depth) >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, depth_check);
  } catch (const TooDeep&) {
    throw BadRequest("JSON nested deeper than " + std::to_string(max_depth) + " levels");
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number overflow
    throw BadRequest(parse_reason(e));
  }
}

std::string to_json_text(const nlohmann::json& body) {
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Response json_response(int status, const nlohmann::json& body) {
  return Response::text(status, to_json_text(body), "application/json");
}

Response problem_response(int status, std::string_view detail) {
  if (status_has_no_body(status)) return Response::error(status);
  nlohmann::json doc = {{"type", "about:blank"}, {"title", reason_phrase(status)}, {"status", status}};
  if (!detail.empty()) doc["detail"] = detail;
  return Response::text(status, to_json_text(doc), "application/problem+json");
}

bool prefers_problem_json(std::string_view accept) noexcept {
  double json = std::max(accept_q(accept, "application/problem+json"), accept_q(accept, "application/json"));
  return json > 0 && json > accept_q(accept, "text/plain");
}

Response error_response(const Env& env, int status, std::string_view detail) {
  return prefers_problem_json(env.get(keys::HTTP_ACCEPT)) ? problem_response(status, detail)
                                                          : Response::error(status, detail);
}

}  // namespace csgi
