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

std::string combined_log_line(std::string_view remote_addr, const Env& env, int status, std::uint64_t body_bytes,
                              std::time_t when) {
  std::tm tm{};
  ::localtime_r(&when, &tm);
  char time_text[40];
  std::size_t time_len = std::strftime(time_text, sizeof time_text, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
  std::string line;
  line.reserve(256);
  line += log_escaped(remote_addr);
  line += " - ";
  line += log_escaped(env.get(keys::REMOTE_USER));
  line += ' ';
  line.append(time_text, time_len);
  line += " \"";
  append_log_escaped(line, env.get(keys::REQUEST_METHOD));
  line += ' ';
  append_log_escaped(line, env.get(keys::REQUEST_URI));
  if (std::string_view proto = env.get(keys::SERVER_PROTOCOL); !proto.empty()) {
    line += ' ';
    append_log_escaped(line, proto);
  }
  line += "\" ";
  line += std::to_string(status);
  line += ' ';
  line += std::to_string(body_bytes);
  line += " \"";
  line += log_escaped(env.get(keys::HTTP_REFERER));
  line += "\" \"";
  line += log_escaped(env.get(keys::HTTP_USER_AGENT));
  line += "\"\n";
  return line;
}

}  // namespace csgi
