#include "csgi/adapters/cli/reload.hpp"

#include <filesystem>
#include <string_view>

namespace csgi::cli {

void watch_for_reload(const CommandLine& cl, standalone::ServerOptions::Reload& reload) {
  namespace fs = std::filesystem;
  for (const ChosenMode& c : cl.modes) {
    if (c.mode->kind != Mode::Kind::source) continue;
    std::string_view name = c.mode->option;
    std::error_code ec;
    if (name == "app") {
      reload.files.push_back(fs::absolute(c.value, ec).lexically_normal().string());
      return;
    }
    if (name == "wsgi") {
      reload.trees.push_back(fs::current_path(ec).string());
      reload.tree_suffix = ".py";
      return;
    }
    if (name == "psgi") {
      reload.files.push_back(fs::absolute(c.value, ec).lexically_normal().string());
      reload.trees.push_back(fs::current_path(ec).string());
      reload.tree_suffix = ".pm";
      return;
    }
    if (name == "rack") {
      fs::path ru = fs::absolute(c.value, ec).lexically_normal();
      reload.files.push_back(ru.string());
      reload.trees.push_back(ru.parent_path().string());
      reload.tree_suffix = ".rb";
      return;
    }
    throw UsageError("--reload: --" + std::string(name) +
                     " has no files to watch; it reloads --app LIB.so, --wsgi, --psgi and --rack");
  }
  throw UsageError("--reload needs --app LIB.so, --wsgi MODULE:APP, --psgi APP.psgi or --rack CONFIG.ru: the files it watches");
}

}  // namespace csgi::cli
