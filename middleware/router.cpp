#include "csgi/middleware/router.hpp"

#include <algorithm>
#include <stdexcept>

#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

namespace {

using Segment = Router::Segment;

bool is_name(std::string_view s) noexcept {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

[[noreturn]] void bad_pattern(std::string_view pattern, const std::string& why) {
  throw std::invalid_argument("Router: pattern \"" + std::string(pattern) + "\": " + why);
}

Segment parse_placeholder(std::string_view pattern, std::string_view seg) {
  std::string_view inner = seg.substr(1, seg.size() - 2);
  std::string_view name = inner.substr(0, inner.find(':'));
  std::string_view type = name.size() < inner.size() ? inner.substr(name.size() + 1) : std::string_view{};
  if (!is_name(name))
    bad_pattern(pattern, "placeholder name \"" + std::string(name) + "\" is not [A-Za-z_][A-Za-z0-9_]*");
  if (type.empty() && name.size() == inner.size()) return {Segment::Kind::text, std::string(name)};
  if (type == "int") return {Segment::Kind::integer, std::string(name)};
  if (type == "path") return {Segment::Kind::path, std::string(name)};
  bad_pattern(pattern, "unknown placeholder type \"" + std::string(type) + "\" (int, path)");
}

std::vector<Segment> parse_pattern(std::string_view pattern) {
  if (pattern.empty() || pattern.front() != '/') bad_pattern(pattern, "must start with /");
  std::vector<Segment> out;
  std::string_view rest = pattern.substr(1);
  for (;;) {
    std::size_t slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    bool braced = seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
    if (!braced && seg.find_first_of("{}") != std::string_view::npos)
      bad_pattern(pattern, "a placeholder must be a whole segment, as in /users/{id}");
    if (!out.empty() && out.back().kind == Segment::Kind::path)
      bad_pattern(pattern, "{name:path} must be the last segment");
    out.push_back(braced ? parse_placeholder(pattern, seg) : Segment{Segment::Kind::literal, std::string(seg)});
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = i + 1; j < out.size(); ++j)
      if (out[i].kind != Segment::Kind::literal && out[j].kind != Segment::Kind::literal && out[i].text == out[j].text)
        bad_pattern(pattern, "placeholder \"" + out[i].text + "\" appears twice");
  return out;
}

bool segment_matches(const Segment& s, std::string_view seg) noexcept {
  switch (s.kind) {
    case Segment::Kind::literal: return seg == s.text;
    case Segment::Kind::text: return !seg.empty();
    case Segment::Kind::integer:
      return !seg.empty() && seg.size() <= 18 &&
             std::all_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; });
    case Segment::Kind::path: return true;
  }
  return false;
}

// Matches `path` (starting with '/') against the route's segments; fills `values` with the placeholders'
// text in order.
bool path_matches(const Router::Route& r, std::string_view path, std::vector<std::string_view>& values) {
  values.clear();
  std::size_t pos = 1;
  for (std::size_t k = 0; k < r.segments.size(); ++k) {
    const Segment& s = r.segments[k];
    if (s.kind == Segment::Kind::path) {
      values.push_back(path.substr(pos));
      return true;
    }
    std::size_t end = std::min(path.find('/', pos), path.size());
    std::string_view seg = path.substr(pos, end - pos);
    if (!segment_matches(s, seg)) return false;
    if (s.kind != Segment::Kind::literal) values.push_back(seg);
    bool last = k + 1 == r.segments.size();
    if (last != (end == path.size())) return false;
    pos = end + 1;
  }
  return true;
}

bool takes_method(const Router::Route& r, std::string_view method) noexcept {
  for (const auto& m : r.methods)
    if (m == "*" || m == method || (method == "HEAD" && m == "GET")) return true;
  return false;
}

void add_allowed(std::vector<std::string>& allow, const Router::Route& r) {
  for (const auto& m : r.methods) {
    if (std::find(allow.begin(), allow.end(), m) == allow.end()) allow.push_back(m);
    if (m == "GET" && std::find(allow.begin(), allow.end(), "HEAD") == allow.end()) allow.push_back("HEAD");
  }
}

Response method_not_allowed(const std::vector<std::string>& allow) {
  std::string value;
  for (const auto& m : allow) value += (value.empty() ? "" : ", ") + m;
  Response r = Response::error(405);
  r.headers.add("Allow", std::move(value));
  return r;
}

}  // namespace

Router& Router::route(std::initializer_list<std::string_view> methods, std::string_view pattern, App app) {
  return route(std::vector<std::string>(methods.begin(), methods.end()), pattern, std::move(app));
}

Router& Router::route(const std::vector<std::string>& methods, std::string_view pattern, App app) {
  if (!app) throw std::invalid_argument("Router: empty app for \"" + std::string(pattern) + "\"");
  if (methods.empty()) throw std::invalid_argument("Router: no method for \"" + std::string(pattern) + "\"");
  for (const auto& m : methods)
    if (!is_token(m))
      throw std::invalid_argument("Router: \"" + m + "\" is not an HTTP method");
  Route r{methods, std::string(pattern), parse_pattern(pattern), {}, std::move(app)};
  for (const auto& s : r.segments)
    if (s.kind != Segment::Kind::literal) r.param_keys.push_back(std::string(keys::router::param_prefix) + s.text);
  for (const auto& old : routes_) {
    if (old.pattern != r.pattern) continue;
    for (const auto& m : methods)
      if (std::find(old.methods.begin(), old.methods.end(), m) != old.methods.end())
        throw std::invalid_argument("Router: " + m + " " + r.pattern + " is already routed");
  }
  routes_.push_back(std::move(r));
  return *this;
}

Response Router::operator()(Env& env) const {
  std::string_view path = env.get(keys::PATH_INFO);
  if (path.empty()) path = "/";
  std::string_view method = env.get(keys::REQUEST_METHOD);
  std::vector<std::string_view> values;
  std::vector<std::string> allow;
  for (const Route& r : routes_) {
    if (path.front() != '/' || !path_matches(r, path, values)) continue;
    if (!takes_method(r, method)) {
      add_allowed(allow, r);
      continue;
    }
    for (std::size_t i = 0; i < values.size(); ++i) env.set(r.param_keys[i], values[i]);
    env.set(keys::router::route, r.pattern);
    return r.app(env);
  }
  return allow.empty() ? Response::error(404) : method_not_allowed(allow);
}

std::string_view route_param(const Env& env, std::string_view name) {
  std::string key(keys::router::param_prefix);
  key += name;
  return env.get(key);
}

}  // namespace csgi::mw
