#include "csgi/middleware/cors.hpp"

#include <algorithm>
#include <stdexcept>

#include "csgi/core/on_response.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {
namespace {

constexpr std::string_view safelisted_headers[] = {"Accept", "Accept-Language", "Content-Language", "Content-Type"};

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/// `origin` against one configured origin: exact (ASCII case-insensitive), or with one '*' standing for
/// one or more DNS labels.
bool origin_matches(std::string_view pattern, std::string_view origin) {
  std::size_t star = pattern.find('*');
  if (star == std::string_view::npos) return iequals(pattern, origin);
  std::string_view head = pattern.substr(0, star), tail = pattern.substr(star + 1);
  if (origin.size() <= head.size() + tail.size()) return false;
  if (!istarts_with(origin, head) || !iends_with(origin, tail)) return false;
  std::string_view middle = origin.substr(head.size(), origin.size() - head.size() - tail.size());
  if (middle.front() == '.' || middle.back() == '.') return false;
  return std::all_of(middle.begin(), middle.end(), is_label_char);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

bool holds(const std::vector<std::string>& v, std::string_view item) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return iequals(s, item); });
}

Response refuse_cors(std::string_view reason) { return Response::text(400, "Disallowed CORS " + std::string(reason) + "\n"); }

}  // namespace

Cors::Cors(App next, CorsOptions options) : next_(std::move(next)), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("Cors: no next app");
  for (const auto& o : options_.origins) {
    if (o == "*") {
      any_origin_ = true;
    } else if (o.empty() || std::count(o.begin(), o.end(), '*') > 1 || has_ctl(o, false)) {
      throw std::invalid_argument("Cors: bad origin: " + o);
    }
  }
  for (const auto& m : options_.methods) {
    if (m == "*") any_method_ = true;
    else if (!is_token(m)) throw std::invalid_argument("Cors: bad method: " + m);
  }
  for (const auto& h : options_.headers) {
    if (h == "*") any_header_ = true;
    else if (!is_token(h)) throw std::invalid_argument("Cors: bad header name: " + h);
  }
  for (const auto& h : options_.expose_headers)
    if (!is_token(h)) throw std::invalid_argument("Cors: bad exposed header name: " + h);
  allow_methods_ = any_method_ ? std::string() : join(options_.methods);
  std::vector<std::string> allowed(std::begin(safelisted_headers), std::end(safelisted_headers));
  for (const auto& h : options_.headers)
    if (h != "*" && !holds(allowed, h)) allowed.push_back(h);
  allow_headers_ = join(allowed);
  expose_ = join(options_.expose_headers);
}

bool Cors::allowed_origin(std::string_view origin) const {
  if (origin.empty() || has_ctl(origin, true)) return false;
  if (any_origin_) return true;
  for (const auto& o : options_.origins)
    if (origin_matches(o, origin)) return true;
  return options_.allow_origin && options_.allow_origin(origin);
}

void Cors::add_origin_headers(Headers& h, std::string_view origin) const {
  bool echo = options_.credentials || !any_origin_;
  h.set("Access-Control-Allow-Origin", echo ? std::string(origin) : std::string("*"));
  if (options_.credentials) h.set("Access-Control-Allow-Credentials", "true");
}

Response Cors::preflight(std::string_view origin, std::string_view method, std::string_view headers) const {
  if (!allowed_origin(origin)) return refuse_cors("origin");
  if (!any_method_ && !holds(options_.methods, method)) return refuse_cors("method");
  if (!any_header_) {
    std::string_view rest = headers;
    while (!rest.empty()) {
      std::size_t comma = rest.find(',');
      std::string_view name = trim_ows(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      if (!name.empty() && !list_has_token(allow_headers_, name)) return refuse_cors("header");
    }
  }
  Response res = Response::text(200, "OK");
  add_origin_headers(res.headers, origin);
  res.headers.add("Access-Control-Allow-Methods", any_method_ ? std::string(method) : allow_methods_);
  if (any_header_) {
    if (!trim_ows(headers).empty() && !has_ctl(headers, true)) res.headers.add("Access-Control-Allow-Headers", std::string(headers));
  } else {
    res.headers.add("Access-Control-Allow-Headers", allow_headers_);
  }
  if (options_.max_age >= 0) res.headers.add("Access-Control-Max-Age", std::to_string(options_.max_age));
  add_vary(res.headers, "Origin");
  return res;
}

Response Cors::operator()(Env& env) {
  std::string_view origin = env.get(keys::HTTP_ORIGIN);
  if (env.get(keys::REQUEST_METHOD) == "OPTIONS" && !origin.empty()) {
    if (const Value* m = env.find(keys::HTTP_ACCESS_CONTROL_REQUEST_METHOD); m && m->is_text())
      return preflight(origin, m->text(), env.get(keys::HTTP_ACCESS_CONTROL_REQUEST_HEADERS));
  }
  bool allowed = allowed_origin(origin);
  bool varies = options_.credentials || !any_origin_;
  if (!allowed && !varies) return next_(env);
  std::string echo = allowed ? std::string(origin) : std::string();
  return on_headers(next_(env), [this, echo = std::move(echo), varies](Response& r) {
    if (varies) add_vary(r.headers, "Origin");
    if (echo.empty()) return;
    add_origin_headers(r.headers, echo);
    if (!expose_.empty()) r.headers.set("Access-Control-Expose-Headers", expose_);
  });
}

}  // namespace csgi::mw
