// The static apps' path check (middleware/path_safety.hpp): whatever it accepts is a plain relative path
// with no way out of the root.
#include <string_view>

#include "csgi/middleware/path_safety.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (bool dotfiles : {false, true}) {
    csgi::mw::SafePath p = csgi::mw::sanitize_path(in, dotfiles);
    if (!p) {
      csgi::fuzz::check(p.status == 400 || p.status == 403 || p.status == 404, "refusals are 400/403/404");
      continue;
    }
    std::string_view r = p.relative;
    csgi::fuzz::check(r.empty() || r.front() != '/', "relative path");
    csgi::fuzz::check(r.find('\\') == std::string_view::npos && r.find('\0') == std::string_view::npos, "no \\ or NUL");
    csgi::fuzz::check(r.find("//") == std::string_view::npos, "no empty segments");
    std::string_view rest = r;
    while (!rest.empty()) {
      std::string_view seg = csgi::fuzz::take(rest, '/');
      csgi::fuzz::check(seg != ".." && seg != "." && !seg.empty(), "no dot segments");
    }
    csgi::fuzz::check(csgi::mw::valid_utf8(r), "valid UTF-8");
  }
  return 0;
}
