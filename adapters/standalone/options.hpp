#pragma once
/// Command-line options of the standalone server, shared by `csgi serve` and csgi::run():
/// the option table (boost::program_options) and its translation into ServerOptions. Parsing only;
/// no behaviour.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>

#include "csgi/adapters/standalone/server.hpp"

namespace csgi::standalone {

/// The server options (--listen, --threads, --workers, limits, timeouts, logs), defaults from `defaults`.
boost::program_options::options_description server_options(const ServerOptions& defaults = {});

/// Reads the parsed values into `opt`; throws std::invalid_argument for inconsistent values.
void apply_server_options(const boost::program_options::variables_map& vm, ServerOptions& opt);

}  // namespace csgi::standalone
