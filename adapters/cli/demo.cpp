#include "csgi/adapters/cli/demo.hpp"
#include "csgi/core/text.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "csgi/core/response.hpp"

namespace csgi::cli {

namespace {


std::string value_text(const Value& v) {
  switch (v.type()) {
    case Value::Type::text: return std::string(v.text());
    case Value::Type::integer: return std::to_string(v.integer());
    case Value::Type::boolean: return v.truthy() ? "true" : "false";
    case Value::Type::object: return "(object)";
  }
  return {};
}

Response env_page(Env& env) {
  std::string body =
      "<!doctype html><meta charset=utf-8><title>csgi env</title>"
      "<style>body{font:14px sans-serif;margin:2em}td{padding:2px 8px;border-bottom:1px solid #ddd;"
      "font-family:monospace}</style><h1>The request env</h1><table>";
  for (const auto& e : env) {
    body += "<tr><td>" + csgi::html_escape(e.key) + "</td><td>" + csgi::html_escape(value_text(e.value)) + "</td></tr>";
  }
  body += "</table><p><a href=\"./\">back</a></p>";
  return Response::html(200, std::move(body));
}

Response stream_page() {
  static std::atomic<int> running{0};
  if (running.load() >= 32) return Response::error(503, "too many demo streams at once");
  return Response::delayed([](Responder r) {
    auto w = r.start(200, {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}});
    ++running;
    std::thread([w] {
      for (int i = 1; i <= 10; ++i) {
        if (!w->write("line " + std::to_string(i) + " of 10, written by a delayed writer\n")) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      w->close();
      --running;
    }).detach();
  });
}

}  // namespace

App demo_app(const std::vector<std::string>& args) {
  std::string name = args.empty() ? "csgi" : args.front();
  return [name](Env& env) -> Response {
    std::string_view path = env.get(keys::PATH_INFO);
    if (path == "/" || path.empty()) {
      return Response::html(200,
                            "<!doctype html><meta charset=utf-8><title>" + csgi::html_escape(name) +
                                " demo</title><h1>Hello from " + csgi::html_escape(name) +
                                "!</h1><ul><li><a href=\"env\">env</a>: the request env"
                                "<li><a href=\"stream\">stream</a>: a streamed response</ul>");
    }
    if (path == "/env") return env_page(env);
    if (path == "/stream") return stream_page();
    if (path == "/hello") return Response::text(200, "Hello, world!");
    return Response::error(404);
  };
}

}  // namespace csgi::cli
