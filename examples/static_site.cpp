// An app library serving a directory with the Static app (middleware/static.hpp):
//   csgi serve --app build/examples/libstatic_site.so --app-arg /var/www
// The same .so runs under the FastCGI, CGI and Python adapters.
#include <stdexcept>

#include "csgi/core/app_library.hpp"
#include "csgi/middleware/static.hpp"

namespace {
csgi::App make_static_site(const csgi::AppArgs& args) {
  if (args.empty()) throw std::invalid_argument("static_site: give the document root with --app-arg DIR");
  csgi::mw::StaticOptions opt;
  opt.root = args.front();
  auto app = std::make_shared<csgi::mw::Static>(std::move(opt));
  return [app](csgi::Env& env) { return (*app)(env); };
}
}  // namespace

CSGI_APP(make_static_site)
