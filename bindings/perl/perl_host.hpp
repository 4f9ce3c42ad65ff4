#pragma once
/// Serving a PSGI app from a csgi server program (csgi, csgi-fcgi, csgi-cgi): the --psgi mode
/// (adapters/cli/modes.cpp) calls load_psgi_app() and serves what it returns. The interpreter lives in the
/// Perl module CSGI (perl_host_abi.h), loaded with dlopen() after libperl on the first call: a program
/// built with this file has no libperl among its dependencies.
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::perl_host {

/// The Perl library directory holding CSGI.pm and auto/CSGI/CSGI.so: $CSGI_PERL_DIR when set; else the
/// build tree's for the program as built there; else the one installed beside the program. "" when none.
std::string lib_dir();

/// Loads libperl and the CSGI module, starts an interpreter (@ARGV = args) and loads the PSGI file
/// `psgi_file` (the value of its last statement, as plackup loads it). Requests then run on a perl thread
/// of each serving process (psgi_host.hpp). Throws std::runtime_error: "--psgi needs the CSGI Perl
/// module: ..." when libperl or the module cannot be loaded, or the file's error when it does not load.
App load_psgi_app(const std::string& psgi_file, unsigned workers, const std::vector<std::string>& args = {});

}  // namespace csgi::perl_host
