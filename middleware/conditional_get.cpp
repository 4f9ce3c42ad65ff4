#include "csgi/middleware/conditional_get.hpp"
#include "csgi/core/text.hpp"

#include "csgi/core/http_date.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/middleware/discard_body.hpp"

namespace csgi::mw {

namespace {


bool is_weak(std::string_view tag) { return tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/'; }
std::string_view opaque(std::string_view tag) { return is_weak(tag) ? tag.substr(2) : tag; }

}  // namespace

bool etag_matches(std::string_view list, std::string_view etag, bool weak) noexcept {
  etag = csgi::trim_ows(etag);
  if (etag.empty()) return false;
  list = csgi::trim_ows(list);
  if (list == "*") return true;
  while (!list.empty()) {
    // Entity tags are quoted and may contain commas: split on commas outside quotes.
    std::size_t i = 0;
    bool quoted = false;
    for (; i < list.size(); ++i) {
      if (list[i] == '"') quoted = !quoted;
      else if (list[i] == ',' && !quoted) break;
    }
    std::string_view tag = csgi::trim_ows(list.substr(0, i));
    list = i < list.size() ? list.substr(i + 1) : std::string_view{};
    if (tag.empty()) continue;
    if (weak) {
      if (opaque(tag) == opaque(etag)) return true;
    } else if (!is_weak(tag) && !is_weak(etag) && tag == etag) {
      return true;
    }
  }
  return false;
}

namespace {
bool evaluate(std::string_view method, bool has_inm, std::string_view inm, std::string_view ims, std::string_view etag,
              std::string_view last_modified) noexcept {
  if (method != "GET" && method != "HEAD") return false;
  if (has_inm) return etag_matches(inm, etag, true);  // If-None-Match wins over If-Modified-Since
  if (ims.empty() || last_modified.empty()) return false;
  try {
    auto since = parse_http_date(ims);
    auto modified = parse_http_date(last_modified);
    return since && modified && *modified <= *since;
  } catch (...) {
    return false;
  }
}
}  // namespace

bool not_modified(const Env& env, std::string_view etag, std::string_view last_modified) noexcept {
  const Value* inm = env.find(keys::HTTP_IF_NONE_MATCH);
  return evaluate(env.get(keys::REQUEST_METHOD), inm && inm->is_text(), inm ? inm->text() : std::string_view{},
                  env.get(keys::HTTP_IF_MODIFIED_SINCE), etag, last_modified);
}

BodyFilter make_not_modified(Response& res) {
  res.status = 304;
  for (std::string_view h : {"Content-Type", "Content-Length", "Content-Disposition", "Content-Range", "Transfer-Encoding"})
    res.headers.remove(h);
  return discard_body(res);
}

ConditionalGet::ConditionalGet(App next) : next_(std::move(next)) {}

Response ConditionalGet::operator()(Env& env) {
  std::string_view method = env.get(keys::REQUEST_METHOD);
  bool conditional = (method == "GET" || method == "HEAD") &&
                     (env.find(keys::HTTP_IF_NONE_MATCH) || env.find(keys::HTTP_IF_MODIFIED_SINCE));  // inline lookups
  if (!conditional) return next_(env);
  // The env is valid until the response is complete (APP-4): a delayed answer reads it then.
  return on_response(next_(env), [&env](Response& res) -> BodyFilter {
    if (res.status != 200) return nullptr;
    std::string_view etag = res.headers.get("ETag").value_or("");
    std::string_view lm = res.headers.get("Last-Modified").value_or("");
    if (!not_modified(env, etag, lm)) return nullptr;
    return make_not_modified(res);
  });
}

}  // namespace csgi::mw
