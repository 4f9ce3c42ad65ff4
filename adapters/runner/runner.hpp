#pragma once
/// csgi::runner: serves an app with the adapter its options choose (the standalone HTTP server, FastCGI
/// or CGI), and csgi::run(), the main() of a program that serves its own app. The command line is the
/// one of options.hpp, shared with `csgi serve`, csgi-fcgi and csgi-cgi. CMake: csgi::runner.
///
///   int main(int argc, char** argv) { return csgi::run(make_app(), argc, argv); }
#include <cstdio>
#include <optional>
#include <string_view>

#include "csgi/adapters/runner/options.hpp"
#include "csgi/core/app.hpp"

namespace csgi::runner {

/// The gateway that started this process, if any: FastCGI when fd 0 is a listening socket (mod_fcgid,
/// spawn-fcgi, lighttpd bin-path, systemd StandardInput=socket), CGI when GATEWAY_INTERFACE is "CGI/…".
std::optional<Adapter> detect_gateway();

/// Serves `app` with options.adapter until stopped. Returns the exit status (0 after a graceful stop,
/// 1 when the server cannot start). Throws what the adapter throws when it cannot start.
int serve(App app, const Options& options);

/// The help text of a csgi::run() program named `program`.
std::string usage(const std::string& program);

/// What --version prints: "csgi 0.1.0 (spec 1.0)\n", the version being the CMake project's.
std::string version_line();

/// Writes `text` to `to` (stdout or stderr) with stdio: the programs use no iostreams, whose
/// initialisation alone maps about half a megabyte of libstdc++ into every server process.
void print(std::FILE* to, std::string_view text);

}  // namespace csgi::runner

namespace csgi {
/// Serves `app` from a program that links the server into its own executable (csgi::runner).
///
/// Started by a front server, it serves that server's protocol (runner::detect_gateway()): FastCGI when fd
/// 0 is a listening socket, with the command line parsed as for `--fastcgi`; one CGI request when
/// GATEWAY_INTERFACE is set, ignoring the command line (a server passes an ISINDEX query's words there).
/// Otherwise the command line chooses: the options of `csgi serve` (options.hpp: `--listen`, `--threads`,
/// …, `--fastcgi`, `--cgi`, `--help`), HTTP/1.1 by default. Returns the exit status for main(): 2 for a
/// command-line error, 1 when the server cannot start.
int run(App app, int argc, char** argv);
}  // namespace csgi

namespace csgi::standalone {
/// The former name of csgi::run, kept for programs written against it.
[[deprecated("use csgi::run")]] inline int run(App app, int argc, char** argv) {
  return csgi::run(std::move(app), argc, argv);
}
}  // namespace csgi::standalone
