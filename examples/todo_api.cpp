// A JSON API as an app library: csgi::mw::Router dispatches, csgi::read_json / csgi::json_response carry
// the bodies (nlohmann::json).
//   csgi serve --app build/examples/libtodo_api.so
//   curl -s localhost:5000/todos -H 'Content-Type: application/json' -d '{"title":"write docs"}'
//   curl -s localhost:5000/todos/1
// The list lives in the process: with --workers each worker has its own.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "csgi/core/app_library.hpp"
#include "csgi/core/json.hpp"
#include "csgi/middleware/router.hpp"

namespace {

using nlohmann::json;

struct Todos {
  std::mutex mu;  // io threads call the app concurrently
  std::map<std::int64_t, json> items;
  std::int64_t next_id = 1;
};
using TodosPtr = std::shared_ptr<Todos>;

std::int64_t id_param(csgi::Env& env) { return std::stoll(std::string(csgi::mw::route_param(env, "id"))); }

csgi::Response not_found(std::int64_t id) {
  return csgi::json_response(404, {{"error", "no todo " + std::to_string(id)}});
}

csgi::Response list(const TodosPtr& db) {
  std::lock_guard lock(db->mu);
  json out = json::array();
  for (const auto& [id, todo] : db->items) out.push_back(todo);
  return csgi::json_response(200, out);
}

csgi::Response create(const TodosPtr& db, csgi::Env& env) {
  json in = csgi::read_json(env);  // 415, 400 or 413 with the reason when the body is not good JSON
  if (!in.is_object() || !in.contains("title") || !in["title"].is_string())
    return csgi::json_response(422, {{"error", "a todo is {\"title\": string}"}});
  std::lock_guard lock(db->mu);
  std::int64_t id = db->next_id++;
  json todo = {{"id", id}, {"title", in["title"]}, {"done", false}};
  db->items[id] = todo;
  csgi::Response res = csgi::json_response(201, todo);
  res.headers.add("Location", std::string(env.get(csgi::keys::SCRIPT_NAME)) + "/todos/" + std::to_string(id));
  return res;
}

csgi::Response show(const TodosPtr& db, csgi::Env& env) {
  std::int64_t id = id_param(env);
  std::lock_guard lock(db->mu);
  auto it = db->items.find(id);
  return it == db->items.end() ? not_found(id) : csgi::json_response(200, it->second);
}

csgi::Response update(const TodosPtr& db, csgi::Env& env) {
  std::int64_t id = id_param(env);
  json in = csgi::read_json(env);
  if (!in.is_object() || (in.contains("title") && !in["title"].is_string()) ||
      (in.contains("done") && !in["done"].is_boolean()))
    return csgi::json_response(422, {{"error", "fields: \"title\" (string), \"done\" (boolean)"}});
  std::lock_guard lock(db->mu);
  auto it = db->items.find(id);
  if (it == db->items.end()) return not_found(id);
  for (const char* field : {"title", "done"})
    if (in.contains(field)) it->second[field] = in[field];
  return csgi::json_response(200, it->second);
}

csgi::Response destroy(const TodosPtr& db, csgi::Env& env) {
  std::int64_t id = id_param(env);
  std::lock_guard lock(db->mu);
  if (!db->items.erase(id)) return not_found(id);
  return csgi::Response{204, {}, std::string()};
}

csgi::App make_todo_api(const csgi::AppArgs&) {
  auto db = std::make_shared<Todos>();
  return csgi::mw::Router()
      .get("/todos", [db](csgi::Env&) { return list(db); })
      .post("/todos", [db](csgi::Env& env) { return create(db, env); })
      .get("/todos/{id:int}", [db](csgi::Env& env) { return show(db, env); })
      .patch("/todos/{id:int}", [db](csgi::Env& env) { return update(db, env); })
      .del("/todos/{id:int}", [db](csgi::Env& env) { return destroy(db, env); });
}

}  // namespace

CSGI_APP(make_todo_api)
