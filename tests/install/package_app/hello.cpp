// One file to deploy: the server and the app in one executable (csgi_add_server), as docs/packaging.md
// shows it. `hello --listen 127.0.0.1:8080` takes the options of `csgi serve`.
#include <csgi/adapters/runner/runner.hpp>

int main(int argc, char** argv) {
  csgi::App app = [](csgi::Env& env) {
    if (env.get("PATH_INFO") == "/") return csgi::Response::text(200, "Hello, world!\n");
    return csgi::Response::error(404);
  };
  return csgi::run(app, argc, argv);
}
