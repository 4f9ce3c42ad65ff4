// The README's app library, built with csgi_add_app against the installed tree (the Router and the JSON
// helpers, nlohmann::json found through csgi's package config); serve_app.py serves it with the installed
// `csgi serve --app`.
#include <csgi/core/app_library.hpp>
#include <csgi/core/json.hpp>
#include <csgi/middleware/router.hpp>

csgi::App make_app(const csgi::AppArgs& args) {
  std::string greeting = args.empty() ? "hi" : args[0];
  return csgi::mw::Router()
      .get("/greet/{name}", [greeting](csgi::Env& env) {
        return csgi::json_response(200, {{"greeting", greeting}, {"name", csgi::mw::route_param(env, "name")}});
      })
      .post("/echo", [](csgi::Env& env) { return csgi::json_response(200, csgi::read_json(env)); });
}
CSGI_APP(make_app)
