// An app that links the server into its own executable: `hello_server --listen :8080 --threads 2`.
// Every `csgi serve` server option works here too (hello_server --help), and it serves FastCGI or CGI
// when a front server starts it (csgi::run, csgi::runner).
#include "csgi/adapters/runner/runner.hpp"

int main(int argc, char** argv) {
  csgi::App app = [](csgi::Env& env) {
    if (env.get("PATH_INFO") == "/") return csgi::Response::text(200, "Hello, world!");
    return csgi::Response::error(404);
  };
  return csgi::run(app, argc, argv);
}
