#include "csgi/adapters/cli/layer_modes.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "csgi/middleware/bundler/bundler.hpp"
#include "csgi/middleware/directory.hpp"
#include "csgi/middleware/health.hpp"
#include "csgi/middleware/metrics.hpp"
#include "csgi/middleware/static_prefix.hpp"

namespace csgi::cli {

namespace {
// The token in `path`: its first line, without surrounding whitespace; throws when unreadable or empty.
std::string read_token(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (!f) throw std::runtime_error("--metrics-token-file " + path + ": " + std::strerror(errno));
  char line[4096];
  std::string token = std::fgets(line, sizeof line, f) ? line : "";
  std::fclose(f);
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!token.empty() && space(static_cast<unsigned char>(token.back()))) token.pop_back();
  std::size_t start = 0;
  while (start < token.size() && space(static_cast<unsigned char>(token[start]))) ++start;
  token.erase(0, start);
  if (token.empty()) throw std::runtime_error("--metrics-token-file " + path + ": no token in it");
  return token;
}
}  // namespace

App make_static_layer(const ModeArgs& args, App inner) {
  mw::StaticOptions files;
  files.root = args.value;
  if (!inner) {
    auto dir = std::make_shared<mw::Directory>(mw::DirectoryOptions{files});
    return [dir](Env& env) { return (*dir)(env); };
  }
  mw::StaticPrefixOptions o;
  o.prefixes = {"/"};
  o.files = std::move(files);
  o.pass_through = true;
  return wrap<mw::StaticPrefix>(std::move(inner), std::move(o));
}

App make_bundle_layer(const ModeArgs& args, App inner) {
  mw::BundlerOptions o;
  for (const runner::GivenOption& g : args.given)
    if (g.name == "bundle-esbuild") o.esbuild = g.value;
  if (!inner) {
    auto b = std::make_shared<mw::Bundler>(args.value, o);
    return [b](Env& env) { return (*b)(env); };
  }
  return wrap<mw::Bundler>(std::move(inner), args.value, std::move(o));
}

App make_health_layer(const ModeArgs&, App inner) {
  if (!inner) inner = [](Env&) { return Response::error(404); };
  return wrap<mw::Health>(std::move(inner));
}

App make_metrics_layer(const ModeArgs& args, App inner) {
  if (!inner) inner = [](Env&) { return Response::error(404); };
  mw::MetricsOptions o;
  for (const runner::GivenOption& g : args.given)
    if (g.name == "metrics-token-file") {
      o.bearer_token = read_token(g.value);
      o.allow_from.clear();  // the token says who may scrape
    }
  return wrap<mw::Metrics>(std::move(inner), std::move(o));
}

}  // namespace csgi::cli
