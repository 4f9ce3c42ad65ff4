#pragma once
/// `csgi serve --reload` (docs/standalone.md, "Reload on change"): which files the master watches for
/// the chosen source mode. The app itself is then made in each worker (main.cpp).
#include "csgi/adapters/cli/options.hpp"

namespace csgi::cli {

/// Fills `reload.files` / `reload.trees` for the source mode of `cl`: `--app LIB.so` → that file;
/// `--wsgi MODULE:APP` → every .py file under the current directory (where the module is imported from
/// first); `--psgi APP.psgi` → that file and every .pm file under the current directory. Throws UsageError for a source with nothing to watch (--demo, or no source).
void watch_for_reload(const CommandLine& cl, standalone::ServerOptions::Reload& reload);

}  // namespace csgi::cli
