#pragma once
/// Serving a Ruby Rack app from a csgi server program: the --rack mode (adapters/cli/modes.cpp) calls
/// load_rack_app() and serves what it returns. Ruby lives in the Rack host module (rack_host_abi.h),
/// loaded with dlopen() on the first call: a program built with this file has no libruby among its
/// dependencies. See docs/ruby.md.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::rack_host {

/// The Rack host module's path: $CSGI_RACK_HOST when set; else the build tree's for the program as built
/// there; else <prefix>/lib/csgi/libcsgi_rack_host.so beside the installed program's <prefix>/bin.
std::string module_path();

/// Loads the module and has it build the Rack app of `config_ru` (Rack::Builder.parse_file) on a Ruby VM
/// thread of its own: now with `workers` 0, in each forked worker otherwise (a worker whose app does not
/// load ends with status 3, which stops the server). ARGV is `args`. Throws std::runtime_error ("--rack
/// needs the Rack host module: ..." when the module or libruby cannot be loaded; the Ruby error and its
/// backtrace when config.ru fails).
App load_rack_app(const std::string& config_ru, unsigned workers, const std::vector<std::string>& args = {});

}  // namespace csgi::rack_host
