#include "csgi/adapters/cli/layer_modes.hpp"

#include "csgi/middleware/bundler/bundler.hpp"
#include "csgi/middleware/directory.hpp"
#include "csgi/middleware/health.hpp"
#include "csgi/middleware/metrics.hpp"
#include "csgi/middleware/static_prefix.hpp"

namespace csgi::cli {

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

App make_metrics_layer(const ModeArgs&, App inner) {
  if (!inner) inner = [](Env&) { return Response::error(404); };
  return wrap<mw::Metrics>(std::move(inner));
}

}  // namespace csgi::cli
