#pragma once
/// The command line of the csgi programs, parsed into plain values (no behaviour here): the subcommand,
/// the modes in command-line order with their values, the app arguments, and the server options
/// (csgi::runner's option table, shared by every adapter). The programs: `csgi`, and its aliases
/// csgi-fcgi (`csgi serve --fastcgi`) and csgi-cgi (`csgi serve --cgi`), which take the same options.
#include <optional>
#include <string>
#include <vector>

#include "csgi/adapters/cli/modes.hpp"
#include "csgi/adapters/runner/options.hpp"

namespace csgi::cli {

using UsageError = runner::UsageError;

/// Which program parses: its name for messages and the adapter it implies (none for `csgi`).
struct Program {
  const char* name;                      // "csgi", "csgi-fcgi", "csgi-cgi"
  std::optional<runner::Adapter> adapter;
};

struct ChosenMode {
  const Mode* mode;
  std::string value;
};

struct CommandLine {
  std::string command;               // "serve", "help", "version"
  bool help = false;
  std::vector<ChosenMode> modes;     // command-line order
  std::vector<std::string> app_args;
  std::vector<runner::GivenOption> mode_options;  // options that belong to a mode (--metrics-token-file, --bundle-esbuild)
  runner::Options options;           // options.adapter: HTTP, or --fastcgi / --cgi (or the alias's)
  std::vector<std::string> warnings; // deprecated spellings used
};

/// Parses argv; throws UsageError with a one-line reason. The aliases take no subcommand (an optional
/// leading "serve" is accepted). Without a mode, the CSGI_APP environment variable names the --app.
CommandLine parse_command_line(int argc, char** argv, const Program& program = {"csgi", std::nullopt});

/// The manual page printed by `csgi --help` / `csgi serve --help` (and the aliases' --help).
std::string help_text();

}  // namespace csgi::cli
