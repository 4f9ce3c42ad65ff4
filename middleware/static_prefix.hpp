#pragma once
/// StaticPrefix — serves files for some path prefixes and hands every other request to the next app
/// (Plack::Middleware::Static).
///
/// A request whose PATH_INFO starts with one of `prefixes` (e.g. "/static/", "/favicon.ico") is served by
/// a Static app over `files.root`, with the whole PATH_INFO as the path under the root (as Plack does;
/// set `strip_prefix` to drop the matched prefix instead). With `pass_through`, a 404 or 405 from the
/// file side falls through to the next app too. Everything else goes to the next app untouched.
///
/// Reads:  PATH_INFO (and what Static reads)
/// Writes: PATH_INFO/SCRIPT_NAME only while Static runs with strip_prefix, restored after
/// Order:  early (outside) so files skip the rest of the stack; inside access_log to have them logged.
#include <string>
#include <vector>

#include "csgi/middleware/static.hpp"

namespace csgi::mw {

struct StaticPrefixOptions {
  std::vector<std::string> prefixes;  // required: matched against PATH_INFO as plain prefixes
  StaticOptions files;
  bool pass_through = false;          // 404/405 from the files → next app
  bool strip_prefix = false;          // serve PATH_INFO without the prefix
};

class StaticPrefix {
public:
  /// Throws std::invalid_argument without prefixes; std::system_error when the root cannot be opened.
  StaticPrefix(App next, StaticPrefixOptions options);
  Response operator()(Env& env);

private:
  App next_;
  std::vector<std::string> prefixes_;
  bool pass_through_, strip_;
  Static files_;
};

}  // namespace csgi::mw
