#pragma once
// What a server process does on a signal, shared by a single process (serve.cpp) and the prefork master
// (master.cpp): reopening the logs, re-reading the TLS certificates, and the error-log line that says so.
#include <chrono>
#include <string>

namespace csgi::standalone::detail {

struct Shared;

/// SIGUSR1: every log file of the process (this server's and the app's: log_files) is reopened by name.
void reopen_logs(Shared& sh);

/// SIGHUP: new connections get the certificates as the files now say; open ones keep theirs.
void reload_tls(Shared& sh);

/// "csgi: SIGTERM: stopping gracefully…": what the server does on a signal, in the error log.
void log_signal(Shared& sh, int sig, const std::string& what);

/// "10 s", "2.5 s": a duration in the log's words.
std::string seconds_text(std::chrono::milliseconds d);

}  // namespace csgi::standalone::detail
