#include "csgi/core/access_log_line.hpp"

#include "csgi/core/keys.hpp"

namespace csgi {

std::string log_escaped(std::string_view s) {
  if (s.empty()) return "-";
  std::string out;
  out.reserve(s.size());
  append_log_escaped(out, s);
  return out;
}

}  // namespace csgi
