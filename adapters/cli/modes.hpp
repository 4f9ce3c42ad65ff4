#pragma once
/// How `csgi serve` gets the app it serves: the mode table. Each row is one command-line option
/// (`--app LIB.so`, `--demo`, later `--static DIR`, `--wsgi MODULE:APP`, `--bundle DIR`) and a function
/// that builds the app from the option's value.
///
/// Two kinds of rows:
///   source  provides the app; exactly one source mode per command line (`--app`, `--demo`, `--wsgi`).
///   layer   wraps whatever the source provides, in command-line order, first = outermost
///           (`--static DIR` in front of an app); a layer alone serves by itself (`inner` is empty then).
///
/// To add a mode: write `App make_x(const ModeArgs&, App inner)` in its own file under adapters/cli/
/// (or in your own library, linked into the csgi executable), and add one row to modes() in modes.cpp.
/// Options parsing (options.cpp) and `--help` pick the row up; nothing else changes.
#include <functional>
#include <string>
#include <vector>

#include "csgi/adapters/runner/options.hpp"
#include "csgi/core/app.hpp"

namespace csgi::cli {

struct ModeArgs {
  std::string value;                        // the option's value ("" for a flag)
  std::vector<std::string> app_args;        // every --app-arg, in order
  const runner::Options* options;           // the server options in force (adapter included)
  std::vector<runner::GivenOption> given;   // the modes' own options as given (--metrics-token-file, --bundle-esbuild)
};

struct Mode {
  enum class Kind { source, layer };
  const char* option;       // long option name without "--"
  const char* value_name;   // "LIB.so"; nullptr for a flag
  Kind kind;
  const char* summary;      // one line, for the options list
  const char* description;  // a paragraph, for the MODES section of --help
  std::function<App(const ModeArgs&, App inner)> make;
};

/// Every mode, in the order --help lists them.
const std::vector<Mode>& modes();
/// The row for `option`, or nullptr.
const Mode* find_mode(std::string_view option);

}  // namespace csgi::cli
