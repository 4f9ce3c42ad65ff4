#pragma once
/// The adapter checks run through every front server (nginx, Apache mod_fcgid, lighttpd, Apache mod_cgi),
/// at the root and under a prefix, against the gateway test app; results form a table of cases × servers.
#include <string>
#include <vector>

namespace csgi::test {

struct Front {
  std::string name;                 // column title, e.g. "nginx /app split"
  int port = 0;
  std::string prefix;               // "" or "/app"
  std::string no_stream_reason;     // non-empty: the streaming case is skipped with this reason
  std::string no_gone_reason;       // non-empty: the client-gone case is skipped with this reason
  std::vector<std::string> logs;    // files where csgi.errors ends up
};

struct CaseResult {
  enum State { pass, fail, skip } state = pass;
  std::string detail;
};

struct Column {
  std::string front;
  std::vector<std::pair<std::string, CaseResult>> cases;
};

/// Runs every case against `front`.
Column run_front_checks(const Front& front);
/// Prints the table (cases down, servers across) with the failure and skip reasons below it.
void print_table(const std::vector<Column>& columns);
/// Adds a Catch2 CHECK per case (failures carry their detail).
void require_all(const std::vector<Column>& columns);

}  // namespace csgi::test
