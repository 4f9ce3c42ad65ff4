// Uses the installed headers and libraries: a Builder stack with a middleware from csgi::middleware, called
// in memory; `consumer serve …` would serve it (csgi::run, csgi::runner).
#include <csgi/adapters/runner/runner.hpp>
#include <csgi/core/builder.hpp>
#include <csgi/core/test_client.hpp>
#include <csgi/middleware/content_length.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  csgi::App app = csgi::Builder()
                      .use<csgi::mw::ContentLength>()
                      .run([](csgi::Env& env) { return csgi::Response::text(200, "installed " + std::string(env["PATH_INFO"].view())); })
                      .build();
  if (argc > 1) return csgi::run(app, argc, argv);
  auto res = csgi::testing::call(app, "GET /ok");
  std::printf("%d %s %s\n", res.status, res.header("Content-Length").c_str(), res.body.c_str());
  return res.status == 200 && res.body == "installed /ok" && res.header("Content-Length") == "13" ? 0 : 1;
}
