#include "csgi/adapters/cgi/gateway.hpp"

#include <cstring>

#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

namespace csgi::cgi {

namespace {

std::string_view trim_trailing_slashes(std::string_view s) {
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

/// The path part of a request target, canonical as populate_env makes it (decoded once, no dot segments).
std::string_view decoded_path(Env& env, std::string_view uri) {
  std::string_view path = uri.substr(0, uri.find('?'));
  if (auto h = path.find('#'); h != std::string_view::npos) path = path.substr(0, h);
  if (!path.empty() && path.front() != '/') {  // absolute-form
    auto scheme = path.find("://");
    if (scheme == std::string_view::npos) return {};
    auto slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
  }
  return canonical_path(env, path);
}

PathSplit finish(std::string_view script, std::string_view path) {
  // RFC 3875 §4.1.5/§4.1.13: both are "" or start with '/'; a front server that says otherwise is refused
  // rather than handing the app a path it cannot route.
  if ((!script.empty() && script.front() != '/') || (!path.empty() && path.front() != '/'))
    throw BadRequest("SCRIPT_NAME or PATH_INFO from the front server does not start with /");
  if (script == "/") script = {};
  if (script.empty() && path.empty()) path = "/";
  return {script, path};
}

}  // namespace

PathSplit split_paths(Env& env, std::string_view request_uri, std::string_view script_name, std::string_view path_info,
                      bool script_name_repeated, const std::optional<std::string>& override_script_name) {
  if (request_uri.empty()) {
    if (override_script_name) {
      // No request URI: rebuild the path from what the server split.
      std::string_view s = trim_trailing_slashes(script_name);
      char* buf = env.allocate(s.size() + path_info.size());
      if (!s.empty()) std::memcpy(buf, s.data(), s.size());
      if (!path_info.empty()) std::memcpy(buf + s.size(), path_info.data(), path_info.size());
      std::string_view whole = without_dot_segments(env, {buf, s.size() + path_info.size()});
      std::string_view o = trim_trailing_slashes(*override_script_name);
      if (within_prefix(whole, o)) return finish(o, whole.substr(o.size()));
      return finish({}, whole);
    }
    return finish(canonical_script_name(env, script_name), without_dot_segments(env, path_info));
  }
  std::string_view p = decoded_path(env, request_uri);

  if (override_script_name) {
    std::string_view o = trim_trailing_slashes(*override_script_name);
    if (within_prefix(p, o)) return finish(o, p.substr(o.size()));
    return finish({}, p);
  }
  std::string_view s = trim_trailing_slashes(script_name);
  if (!s.empty() && within_prefix(p, s)) {
    // nginx's stock $fastcgi_script_name is the whole path (a trailing '/' kept).
    if (path_info.empty() && !script_name_repeated && s == trim_trailing_slashes(p)) return finish({}, p);
    return finish(s, p.substr(s.size()));
  }
  if (s.empty()) return finish({}, p);
  if (!path_info.empty()) {
    std::string_view dir = s.substr(0, s.rfind('/'));
    if (within_prefix(p, dir)) return finish(dir, p.substr(dir.size()));
    if (p.size() > path_info.size() && p.ends_with(path_info) && path_info.front() == '/')
      return finish(p.substr(0, p.size() - path_info.size()), path_info);
  }
  return finish({}, p);
}

void build_env(Env& env, const char* const* vars, const EnvOptions& options) {
  std::size_t total = 0;
  int script_name_count = 0;
  for (const char* const* v = vars; v && *v; ++v) {
    const char* kv = *v;
    const char* eq = std::strchr(kv, '=');
    if (eq == nullptr || eq == kv) continue;
    std::string_view name(kv, static_cast<std::size_t>(eq - kv));
    std::string_view value(eq + 1);
    total += name.size() + value.size();
    if (total > options.max_params_bytes) throw HttpError(431, "request meta-variables exceed the size limit");
    if (name.starts_with("HTTP_")) {
      if (!header_meta_variable(name)) continue;  // HTTP_PROXY, HTTP_CONTENT_*, odd bytes (ENV-9…ENV-11)
      // A repeated header field arrives as the same param twice (nginx): join the values (ENV-9).
      if (Value* old = env.find(name); old && old->is_text()) {
        std::string_view sep = name == keys::HTTP_COOKIE ? "; " : ", ";
        std::string_view a = old->text();
        char* joined = env.allocate(a.size() + sep.size() + value.size());
        if (!a.empty()) std::memcpy(joined, a.data(), a.size());
        std::memcpy(joined + a.size(), sep.data(), sep.size());
        if (!value.empty()) std::memcpy(joined + a.size() + sep.size(), value.data(), value.size());
        *old = Value::of_text({joined, a.size() + sep.size() + value.size()});
        continue;
      }
    } else if (name == keys::CONTENT_LENGTH || name == keys::CONTENT_TYPE) {
      if (value.empty()) {
        env.erase(name);
        continue;
      }
    } else if (name == keys::SCRIPT_NAME) {
      ++script_name_count;
    } else if (name.find('.') != std::string_view::npos) {
      continue;  // dotted names belong to csgi, never to the server
    }
    env.set_view(name, value);
  }

  if (env.get(keys::REQUEST_METHOD).empty()) throw BadRequest("no REQUEST_METHOD from the server");
  std::string_view cl = env.get(keys::CONTENT_LENGTH);
  if (!cl.empty()) {
    if (cl.size() > 18 || cl.find_first_not_of("0123456789") != std::string_view::npos)
      throw BadRequest("CONTENT_LENGTH is not a number");
  }
  if (!env.contains(keys::QUERY_STRING)) env.set_view(keys::QUERY_STRING, "");
  if (env.get(keys::SERVER_NAME).empty()) {  // nginx sends $server_name, empty without server_name
    set_server_from_host(env);
    if (env.get(keys::SERVER_NAME).empty()) env.set_view(keys::SERVER_NAME, env.get("SERVER_ADDR", "localhost"));
  }
  if (!env.contains(keys::SERVER_PROTOCOL)) env.set_view(keys::SERVER_PROTOCOL, "HTTP/1.0");

  PathSplit paths = split_paths(env, env.get(keys::REQUEST_URI), env.get(keys::SCRIPT_NAME), env.get(keys::PATH_INFO),
                                script_name_count > 1, options.script_name);
  env.set_view(keys::SCRIPT_NAME, paths.script_name);
  env.set_view(keys::PATH_INFO, paths.path_info);

  std::string_view https = env.get("HTTPS");
  bool secure = https == "on" || https == "ON" || https == "1" || env.get("REQUEST_SCHEME") == "https";
  if (env.get(keys::SERVER_PORT).empty()) env.set_view(keys::SERVER_PORT, secure ? "443" : "80");
  env.set_view(keys::version, keys::spec_version);
  env.set_view(keys::url_scheme, secure ? "https" : "http");
  set_server_flags(env, {options.multithread, options.multiprocess, options.run_once});
}

}  // namespace csgi::cgi
