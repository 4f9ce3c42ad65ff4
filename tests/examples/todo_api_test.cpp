// examples/todo_api.cpp, loaded from its .so as `csgi serve --app` does and called through Lint.
#include <catch2/catch.hpp>

#include "csgi/core/app_library.hpp"
#include "csgi/core/builder.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/json.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"

using namespace csgi;
using nlohmann::json;

namespace {

const std::vector<std::pair<std::string, std::string>> json_type = {{"Content-Type", "application/json"}};

}  // namespace

TEST_CASE("todo_api: create, list, show, update, delete through the router and JSON helpers") {
  App app = wrap<Lint>(load_app(TODO_API_SO));
  CHECK(testing::call(app, "GET /todos").body == "[]");
  auto created = testing::call(app, "POST /todos", json_type, R"({"title":"write \"docs\""})");
  CHECK(created.status == 201);
  CHECK(created.header("Content-Type") == "application/json");
  CHECK(created.header("Location") == "/todos/1");
  CHECK(json::parse(created.body) == json({{"id", 1}, {"title", "write \"docs\""}, {"done", false}}));
  auto patched = testing::call(app, "PATCH /todos/1", json_type, R"({"done":true})");
  CHECK(json::parse(patched.body)["done"] == true);
  CHECK(json::parse(testing::call(app, "GET /todos").body).size() == 1);
  CHECK(json::parse(testing::call(app, "GET /todos/1").body)["title"] == "write \"docs\"");
  CHECK(testing::call(app, "DELETE /todos/1").status == 204);
  auto gone = testing::call(app, "GET /todos/1");
  CHECK(gone.status == 404);
  CHECK(json::parse(gone.body)["error"] == "no todo 1");
}

TEST_CASE("todo_api: bad requests get 4xx with a reason") {
  App app = wrap<Lint>(load_app(TODO_API_SO));
  CHECK(testing::call(app, "POST /todos", json_type, R"({"name":1})").status == 422);
  CHECK(testing::call(app, "PUT /todos/1").status == 405);
  CHECK(testing::call(app, "PUT /todos/1").header("Allow") == "GET, HEAD, PATCH, DELETE");
  CHECK(testing::call(app, "GET /todos/x").status == 404);
  try {
    testing::call(app, "POST /todos", json_type, "{title:");
    FAIL("no error");
  } catch (const HttpError& e) {
    CHECK(e.status() == 400);
  }
  try {
    testing::call(app, "POST /todos", {{"Content-Type", "text/plain"}}, "{}");
    FAIL("no error");
  } catch (const HttpError& e) {
    CHECK(e.status() == 415);
  }
}
