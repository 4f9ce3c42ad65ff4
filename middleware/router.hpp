#pragma once
/// Router — an app dispatching on method and path pattern (Router::Simple, Starlette's routing).
///
///   csgi::App app = csgi::mw::Router()
///       .get("/users", list_users)
///       .post("/users", create_user)
///       .get("/users/{id:int}", show_user)            // csgi::mw::route_param(env, "id") == "42"
///       .route({"PUT", "PATCH"}, "/users/{id:int}", update_user)
///       .get("/files/{rest:path}", serve_file);       // the rest of the path, slashes included
///
/// A pattern is a path of '/'-separated segments; a segment is literal text or a whole-segment
/// placeholder: `{name}` matches one non-empty segment (no '/'), `{name:int}` 1 to 18 ASCII digits (so it
/// always fits std::int64_t), `{name:path}` the rest of the path, slashes included, possibly empty (last
/// segment only). Literal segments compare byte for byte with PATH_INFO (percent-decoded, ENV-5; an empty
/// PATH_INFO is "/"); "/users" and "/users/" are different paths.
///
/// Routes are tried in the order they were added; the first whose pattern and method match is called.
/// A GET route also serves HEAD (the adapter drops the body, ADP-2); add a HEAD route before it to answer
/// HEAD yourself. Methods compare case-sensitively; "*" matches any method. No pattern matches: 404. A
/// pattern matches but no route takes the method: 405 with `Allow` listing the methods of the matching
/// routes (HEAD included with GET). Put a Cascade around the router to send those on to another app.
///
/// SCRIPT_NAME and PATH_INFO are left as they are; to mount a sub-app (or another Router) under a prefix,
/// use Builder::mount / UrlMap, which move the prefix to SCRIPT_NAME (MW-3).
///
/// Reads:  REQUEST_METHOD, PATH_INFO
/// Writes: router.param.<name> (text) for each placeholder of the matched route, router.route (text,
///         the matched pattern, e.g. "/users/{id:int}"), before calling the route's app; they stay set
///         after it returns (an access log may read router.route).
/// Order:  an app; middleware goes around it (or around a route's app).
/// Errors: route() throws std::invalid_argument for a malformed pattern, an empty app, a method that is
///         not an HTTP token, or a method + pattern already routed.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::mw {

class Router {
public:
  Router() = default;

  /// Adds a route for `methods` ("GET", "POST", …, or "*" for any) at `pattern`.
  Router& route(std::initializer_list<std::string_view> methods, std::string_view pattern, App app);
  Router& route(const std::vector<std::string>& methods, std::string_view pattern, App app);
  Router& get(std::string_view pattern, App app) { return route({"GET"}, pattern, std::move(app)); }
  Router& post(std::string_view pattern, App app) { return route({"POST"}, pattern, std::move(app)); }
  Router& put(std::string_view pattern, App app) { return route({"PUT"}, pattern, std::move(app)); }
  Router& patch(std::string_view pattern, App app) { return route({"PATCH"}, pattern, std::move(app)); }
  /// DELETE (`delete` is a C++ keyword).
  Router& del(std::string_view pattern, App app) { return route({"DELETE"}, pattern, std::move(app)); }
  Router& any(std::string_view pattern, App app) { return route({"*"}, pattern, std::move(app)); }

  Response operator()(Env& env) const;

  struct Segment {
    enum class Kind { literal, text, integer, path };
    Kind kind;
    std::string text;  // the literal, or the placeholder's name
  };
  struct Route {
    std::vector<std::string> methods;
    std::string pattern;
    std::vector<Segment> segments;
    std::vector<std::string> param_keys;  // "router.param.<name>", one per placeholder in order
    App app;
  };

private:
  std::vector<Route> routes_;
};

/// The value of placeholder `name` of the route the Router matched ("" when there is none).
std::string_view route_param(const Env& env, std::string_view name);

}  // namespace csgi::mw
