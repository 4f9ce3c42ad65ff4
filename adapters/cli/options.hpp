#pragma once
/// The `csgi` command line, parsed into plain values (no behaviour here): the subcommand, the modes in
/// command-line order with their values, the app arguments, and the server options.
#include <stdexcept>
#include <string>
#include <vector>

#include "csgi/adapters/cli/modes.hpp"
#include "csgi/adapters/standalone/server.hpp"

namespace csgi::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
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
  standalone::ServerOptions server;
  std::string gateway;               // "fastcgi" or "cgi" (--fastcgi / --cgi, gateway_modes.hpp); "" = HTTP
};

/// Parses argv; throws UsageError with a one-line reason.
CommandLine parse_command_line(int argc, char** argv);

/// The manual page printed by `csgi --help` / `csgi serve --help`.
std::string help_text();

}  // namespace csgi::cli
