#include "csgi/middleware/access_log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "csgi/core/json.hpp"
#include "csgi/core/on_response.hpp"

namespace csgi::mw {

struct AccessLog::Item {
  enum Kind {
    literal, remote_addr, logname, user, time, time_fmt, request_line, method, url_path, query, protocol,
    server_name, host_name, port, env_var, req_header, request_id, request_uri, time_iso8601,
    // filled in when the response is known:
    status, bytes_clf, bytes, micros, elapsed, resp_header, seconds, header_seconds, msec,
  } kind;
  std::string arg;    // literal text, header/env name, strftime format, unit
  bool json = false;  // a JSON value: text quoted and escaped as JSON, missing text "", numbers bare
  bool response_side() const noexcept { return kind >= status; }
};

namespace {

using Item = AccessLog::Item;
using Clock = std::chrono::steady_clock;

std::string header_env_key(std::string_view name) {
  if (iequals(name, "Content-Type")) return "CONTENT_TYPE";
  if (iequals(name, "Content-Length")) return "CONTENT_LENGTH";
  std::string k = "HTTP_";
  for (char c : name) k.push_back(c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c);
  return k;
}

/// The "json" format: one object per line, named as nginx's variables are.
std::vector<Item> compile_json() {
  struct Field {
    const char* name;
    Item::Kind kind;
    const char* arg;
  };
  static const Field fields[] = {
      {"time_iso8601", Item::time_iso8601, ""},      {"msec", Item::msec, ""},
      {"remote_addr", Item::remote_addr, ""},         {"remote_user", Item::user, ""},
      {"request", Item::request_line, ""},            {"request_method", Item::method, ""},
      {"request_uri", Item::request_uri, ""},         {"server_protocol", Item::protocol, ""},
      {"host", Item::host_name, ""},                  {"status", Item::status, ""},
      {"body_bytes_sent", Item::bytes, ""},           {"request_time", Item::seconds, ""},
      {"upstream_header_time", Item::header_seconds, ""},
      {"http_referer", Item::req_header, "HTTP_REFERER"}, {"http_user_agent", Item::req_header, "HTTP_USER_AGENT"},
      {"request_id", Item::request_id, ""},
  };
  std::vector<Item> items;
  for (const Field& f : fields) {
    std::string key = items.empty() ? "{\"" : ",\"";
    key += f.name;
    key += "\":";
    items.push_back({Item::literal, std::move(key)});
    items.push_back({f.kind, f.arg, true});
  }
  items.push_back({Item::literal, "}"});
  return items;
}

std::vector<Item> compile(std::string_view f) {
  if (f == "json") return compile_json();
  if (f == "common") f = common_log_format;
  else if (f == "combined") f = combined_log_format;
  else if (f == "combined_id") f = "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %L %D";
  std::vector<Item> items;
  auto lit = [&](std::string_view s) {
    if (!items.empty() && items.back().kind == Item::literal) items.back().arg.append(s);
    else items.push_back({Item::literal, std::string(s)});
  };
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      lit(f.substr(i, 1));
      continue;
    }
    if (++i == f.size()) throw std::invalid_argument("access_log: format ends with '%'");
    std::string arg;
    if (f[i] == '{') {
      std::size_t close = f.find('}', i);
      if (close == std::string_view::npos) throw std::invalid_argument("access_log: unterminated %{ in format");
      arg = f.substr(i + 1, close - i - 1);
      i = close + 1;
      if (i == f.size()) throw std::invalid_argument("access_log: %{...} without a directive letter");
    }
    while (i < f.size() && (f[i] == '>' || f[i] == '<')) ++i;  // %>s, %<s: we have one final status
    if (i == f.size()) throw std::invalid_argument("access_log: format ends inside a directive");
    char d = f[i];
    switch (d) {
      case '%': lit("%"); break;
      case 'h': case 'a': items.push_back({Item::remote_addr, {}}); break;
      case 'l': items.push_back({Item::logname, {}}); break;
      case 'u': items.push_back({Item::user, {}}); break;
      case 't': items.push_back({arg.empty() ? Item::time : Item::time_fmt, arg}); break;
      case 'r': items.push_back({Item::request_line, {}}); break;
      case 'm': items.push_back({Item::method, {}}); break;
      case 'U': items.push_back({Item::url_path, {}}); break;
      case 'q': items.push_back({Item::query, {}}); break;
      case 'H': items.push_back({Item::protocol, {}}); break;
      case 'v': items.push_back({Item::server_name, {}}); break;
      case 'V': items.push_back({Item::host_name, {}}); break;
      case 'p': items.push_back({Item::port, {}}); break;
      case 'L': items.push_back({Item::request_id, {}}); break;
      case 's': items.push_back({Item::status, {}}); break;
      case 'b': items.push_back({Item::bytes_clf, {}}); break;
      case 'B': items.push_back({Item::bytes, {}}); break;
      case 'D': items.push_back({Item::micros, {}}); break;
      case 'T':
        if (!arg.empty() && arg != "s" && arg != "ms" && arg != "us")
          throw std::invalid_argument("access_log: %{unit}T takes s, ms or us");
        items.push_back({Item::elapsed, arg.empty() ? "s" : arg});
        break;
      case 'i':
        if (arg.empty()) throw std::invalid_argument("access_log: %i needs a header name: %{Name}i");
        items.push_back({Item::req_header, header_env_key(arg)});
        break;
      case 'o':
        if (arg.empty()) throw std::invalid_argument("access_log: %o needs a header name: %{Name}o");
        items.push_back({Item::resp_header, arg});
        break;
      case 'e':
        if (arg.empty()) throw std::invalid_argument("access_log: %e needs an env key: %{key}e");
        items.push_back({Item::env_var, arg});
        break;
      default:
        throw std::invalid_argument(std::string("access_log: unknown directive %") + d);
    }
  }
  return items;
}

/// Apache's ap_escape_logitem: `"` and `\` escaped, non-printable bytes as \xhh (\n \t etc. by name).
void append_escaped(std::string& out, std::string_view s) {
  if (s.empty()) {
    out.push_back('-');
    return;
  }
  static const char hexd[] = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
      continue;
    }
    out.push_back('\\');
    switch (c) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '\b': out.push_back('b'); break;
      case '\n': out.push_back('n'); break;
      case '\r': out.push_back('r'); break;
      case '\t': out.push_back('t'); break;
      case '\v': out.push_back('v'); break;
      default:
        out.push_back('x');
        out.push_back(hexd[c >> 4]);
        out.push_back(hexd[c & 15]);
    }
  }
}

/// A JSON string (nlohmann's escaping); a byte of no valid UTF-8 sequence becomes U+FFFD, so every
/// line parses as JSON.
void append_json_string(std::string& out, std::string_view s) {
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Text as the item wants it: Apache-escaped ("-" when empty) or a JSON string.
void append_text(std::string& out, std::string_view s, const Item& item) {
  if (item.json) append_json_string(out, s);
  else append_escaped(out, s);
}

/// Seconds with millisecond resolution, as nginx's $request_time: "0.013".
void append_seconds(std::string& out, std::int64_t us) {
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(us / 1000000),
                        static_cast<long long>(us / 1000 % 1000));
  out.append(buf, static_cast<std::size_t>(n));
}

void append_clf_time(std::string& out, std::time_t t) {
  thread_local std::time_t cached_t = -1;
  thread_local char cached[40];
  thread_local std::size_t cached_n = 0;
  if (t != cached_t) {
    std::tm tm{};
    localtime_r(&t, &tm);
    cached_n = std::strftime(cached, sizeof cached, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    cached_t = t;
  }
  out.append(cached, cached_n);
}

/// A line waiting for its response: request-side text rendered, holes for the response-side items.
struct Pending {
  std::shared_ptr<const std::vector<Item>> items;
  std::shared_ptr<LogWriter> writer;
  std::string text;
  std::vector<std::pair<std::size_t, const Item*>> holes;
  Clock::time_point start;
  Clock::time_point head_known{};  // when the response's status and headers were known
  int status = 0;
  std::vector<std::string> resp_headers;  // values of the %{Name}o items, in hole order
  std::uint64_t bytes = 0;
  bool logged = false;
  bool captured = false;  // the response's status and headers are known
  bool head = false;      // HEAD: no body goes out whatever the body holds

  void capture(const Response& res) {
    captured = true;
    head_known = Clock::now();
    status = res.status;
    for (auto& [pos, item] : holes)
      if (item->kind == Item::resp_header) resp_headers.emplace_back(res.headers.get(item->arg).value_or(""));
  }

  void emit() {
    if (logged) return;
    logged = true;
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    std::string line;
    line.reserve(text.size() + 64);
    std::size_t at = 0, hdr = 0;
    for (auto& [pos, item] : holes) {
      line.append(text, at, pos - at);
      at = pos;
      switch (item->kind) {
        case Item::status: line += std::to_string(status); break;
        case Item::bytes_clf: line += bytes ? std::to_string(bytes) : "-"; break;
        case Item::bytes: line += std::to_string(bytes); break;
        case Item::micros: line += std::to_string(us); break;
        case Item::elapsed:
          line += std::to_string(item->arg == "us" ? us : item->arg == "ms" ? us / 1000 : us / 1000000);
          break;
        case Item::resp_header: append_text(line, resp_headers[hdr++], *item); break;
        case Item::seconds: append_seconds(line, us); break;
        case Item::header_seconds:
          append_seconds(line, std::chrono::duration_cast<std::chrono::microseconds>(
                                   (captured ? head_known : Clock::now()) - start).count());
          break;
        case Item::msec:
          append_seconds(line, std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch()).count());
          break;
        default: break;
      }
    }
    line.append(text, at);
    writer->push(std::move(line));
  }
  ~Pending() {
    try {
      if (captured) emit();  // a stream abandoned before its end: log what was sent
    } catch (...) {
    }
  }
};

}  // namespace

AccessLog::AccessLog(App next, AccessLogOptions o)
    : next_(std::move(next)),
      items_(std::make_shared<const std::vector<Item>>(compile(o.format))),
      writer_(o.writer ? std::move(o.writer) : std::make_shared<LogWriter>(o.path, o.queue_lines)) {
  if (!next_) throw std::invalid_argument("AccessLog: no next app");
}

Response AccessLog::operator()(Env& env) {
  auto start = Clock::now();
  std::time_t wall = std::time(nullptr);
  auto p = std::make_shared<Pending>();
  p->items = items_;
  p->writer = writer_;
  p->start = start;
  p->head = env.get(keys::REQUEST_METHOD) == "HEAD";

  auto render = [&] {
    std::string& out = p->text;
    out.reserve(160);
    for (const Item& it : *items_) {
      switch (it.kind) {
        case Item::literal: out += it.arg; break;
        case Item::remote_addr: append_text(out, env.get(keys::REMOTE_ADDR), it); break;
        case Item::logname: out += '-'; break;
        case Item::user: append_text(out, env.get(keys::REMOTE_USER), it); break;
        case Item::time: append_clf_time(out, wall); break;
        case Item::time_fmt: {
          auto now = std::chrono::system_clock::now().time_since_epoch();
          std::string_view fmt = it.arg;
          if (fmt.substr(0, 6) == "begin:") fmt.remove_prefix(6);
          if (fmt == "sec") out += std::to_string(wall);
          else if (fmt == "msec") out += std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
          else if (fmt == "usec") out += std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
          else {
            std::tm tm{};
            localtime_r(&wall, &tm);
            char buf[256];
            std::size_t n = std::strftime(buf, sizeof buf, std::string(fmt).c_str(), &tm);
            out.append(buf, n);
          }
          break;
        }
        case Item::request_line: {
          std::string rl(env.get(keys::REQUEST_METHOD));
          rl += ' ';
          rl += env.get(keys::REQUEST_URI);
          if (std::string_view proto = env.get(keys::SERVER_PROTOCOL); !proto.empty()) {
            rl += ' ';
            rl += proto;
          }
          append_text(out, rl, it);
          break;
        }
        case Item::method: append_text(out, env.get(keys::REQUEST_METHOD), it); break;
        case Item::url_path: {
          std::string path(env.get(keys::SCRIPT_NAME));
          path += env.get(keys::PATH_INFO);
          append_text(out, path, it);
          break;
        }
        case Item::query:
          if (std::string_view q = env.get(keys::QUERY_STRING); !q.empty()) {
            out += '?';
            append_text(out, q, it);
          }
          break;
        case Item::protocol: append_text(out, env.get(keys::SERVER_PROTOCOL), it); break;
        case Item::server_name: append_text(out, env.get(keys::SERVER_NAME), it); break;
        case Item::host_name: {
          std::string_view h = env.get(keys::HTTP_HOST);
          if (h.empty()) h = env.get(keys::SERVER_NAME);
          else if (h.front() != '[') h = h.substr(0, h.find(':'));
          append_text(out, h, it);
          break;
        }
        case Item::request_uri: append_text(out, env.get(keys::REQUEST_URI), it); break;
        case Item::time_iso8601: {
          std::tm tm{};
          localtime_r(&wall, &tm);
          char buf[40];
          std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
          std::string t(buf, n);
          if (t.size() > 2) t.insert(t.size() - 2, ":");  // +0100 → +01:00, as nginx writes it
          append_text(out, t, it);
          break;
        }
        case Item::port: append_text(out, env.get(keys::SERVER_PORT), it); break;
        case Item::env_var: {
          const Value* v = env.find(it.arg);
          if (v && v->is_text()) append_text(out, v->text(), it);
          else if (v && v->type() == Value::Type::integer) out += std::to_string(v->integer());
          else if (v && v->type() == Value::Type::boolean) out += v->truthy() ? "1" : "0";
          else out += it.json ? "null" : "-";
          break;
        }
        case Item::req_header: append_text(out, env.get(it.arg), it); break;
        case Item::request_id: {
          std::string_view id = env.get("request_id.id");
          append_text(out, id.empty() ? env.get("HTTP_X_REQUEST_ID") : id, it);
          break;
        }
        default: p->holes.emplace_back(out.size(), &it); break;
      }
    }
  };

  Response res;
  try {
    res = next_(env);
  } catch (...) {
    render();
    p->status = 500;
    p->captured = true;
    p->emit();
    throw;
  }
  render();
  return on_response(std::move(res), [p](Response& r) -> BodyFilter {
    p->capture(r);
    if (status_has_no_body(r.status)) {
      p->emit();
      return nullptr;
    }
    auto* s = std::get_if<StreamPtr>(&r.body);
    if (!s) {  // complete or file body: the size is known now
      if (auto n = r.known_length(); n && !p->head) p->bytes = *n;
      p->emit();
      return nullptr;
    }
    return [p](std::string_view chunk, bool eof) {
      p->bytes += chunk.size();
      if (eof) p->emit();
      return std::string(chunk);
    };
  });
}

}  // namespace csgi::mw
