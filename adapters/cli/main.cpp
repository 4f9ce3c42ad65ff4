// The `csgi` command: parses the command line (options.cpp), builds the app from the chosen modes
// (modes.cpp) and serves it with the standalone server.
#include <cstdio>
#include <iostream>

#include "csgi/adapters/cli/gateway_modes.hpp"
#include "csgi/adapters/cli/options.hpp"
#include "csgi/adapters/standalone/server.hpp"

int main(int argc, char** argv) {
  using namespace csgi::cli;
  CommandLine cl;
  try {
    cl = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "csgi: " << e.what() << " (try csgi --help)\n";
    return 2;
  }
  if (cl.help) {
    std::cout << help_text();
    return 0;
  }
  if (cl.command == "version") {
    std::cout << "csgi 0.1.0 (spec 1.0)\n";
    return 0;
  }
  try {
    // Sources first, then layers wrapped around it in reverse order so the first given is outermost.
    csgi::App app;
    ModeArgs args{{}, cl.app_args, &cl.server};
    for (const auto& c : cl.modes)
      if (c.mode->kind == Mode::Kind::source) {
        args.value = c.value;
        app = c.mode->make(args, {});
      }
    for (auto it = cl.modes.rbegin(); it != cl.modes.rend(); ++it)
      if (it->mode->kind == Mode::Kind::layer) {
        args.value = it->value;
        app = it->mode->make(args, std::move(app));
      }
    if (!cl.gateway.empty()) return serve_gateway(cl.gateway, std::move(app), cl.server);
    csgi::standalone::Server server(std::move(app), cl.server);
    return server.run();
  } catch (const std::exception& e) {
    std::cerr << "csgi: " << e.what() << "\n";
    return 1;
  }
}
