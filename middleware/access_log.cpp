#include "csgi/middleware/access_log.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <stdexcept>

#include "csgi/core/access_log_line.hpp"
#include "csgi/core/extensions.hpp"
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

/// A line being built. An append checks for room once and copies: none of std::string's bookkeeping per
/// piece, and a line has many small pieces.
class Line {
public:
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return buf_.size(); }
  std::string_view view() const noexcept { return {buf_.data(), size_}; }
  void clear() noexcept { size_ = 0; }
  void append(const char* p, std::size_t n) {
    if (n == 0) return;  // p may be null then
    if (n > buf_.size() - size_) grow(n);
    std::memcpy(buf_.data() + size_, p, n);
    size_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void push_back(char c) {
    if (size_ == buf_.size()) grow(1);
    buf_[size_++] = c;
  }
  Line& operator+=(std::string_view s) {
    append(s);
    return *this;
  }
  Line& operator+=(char c) {
    push_back(c);
    return *this;
  }

private:
  void grow(std::size_t n) { buf_.resize(std::max(buf_.size() * 2, size_ + n + 256)); }
  std::string buf_;  // its size is the room; size_ bytes are used
  std::size_t size_ = 0;
};

/// A text field escaped once for every access log (core/access_log_line.hpp).
void append_escaped_bytes(Line& out, std::string_view s) { append_log_escaped(out, s); }

/// A JSON string (nlohmann's escaping); a byte of no valid UTF-8 sequence becomes U+FFFD, so every
/// line parses as JSON.
void append_json_string(Line& out, std::string_view s) {
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Text made of `parts` as the item wants it: escaped ("-" when empty) or a JSON string.
void append_text(Line& out, std::initializer_list<std::string_view> parts, const Item& item) {
  if (item.json) {
    std::string whole;
    for (std::string_view p : parts) whole += p;
    append_json_string(out, whole);
    return;
  }
  bool empty = true;
  for (std::string_view p : parts) {
    append_escaped_bytes(out, p);
    empty = empty && p.empty();
  }
  if (empty) out.push_back('-');
}

void append_text(Line& out, std::string_view s, const Item& item) {
  if (item.json) append_json_string(out, s);
  else if (s.empty()) out.push_back('-');
  else append_escaped_bytes(out, s);
}

template <class Int>
void append_int(Line& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

/// Seconds with millisecond resolution, as nginx's $request_time: "0.013".
void append_seconds(Line& out, std::int64_t us) {
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(us / 1000000),
                        static_cast<long long>(us / 1000 % 1000));
  out.append(buf, static_cast<std::size_t>(n));
}

std::int64_t micros_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from).count();
}

void append_clf_time(Line& out, std::time_t t) {
  struct Cached {
    std::time_t t = -1;
    char text[40];
    std::size_t n = 0;
  };
  thread_local Cached cached;
  if (t != cached.t) {
    std::tm tm{};
    localtime_r(&t, &tm);
    cached.n = std::strftime(cached.text, sizeof cached.text, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    cached.t = t;
  }
  out.append(cached.text, cached.n);
}

void append_time_fmt(Line& out, std::string_view fmt, std::time_t wall) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  if (fmt.substr(0, 6) == "begin:") fmt.remove_prefix(6);
  if (fmt == "sec") {
    append_int(out, wall);
  } else if (fmt == "msec") {
    append_int(out, std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  } else if (fmt == "usec") {
    append_int(out, std::chrono::duration_cast<std::chrono::microseconds>(now).count());
  } else {
    std::tm tm{};
    localtime_r(&wall, &tm);
    char buf[256];
    std::size_t n = std::strftime(buf, sizeof buf, std::string(fmt).c_str(), &tm);
    out.append(buf, n);
  }
}

void append_iso8601(Line& out, std::time_t wall, const Item& it) {
  std::tm tm{};
  localtime_r(&wall, &tm);
  char buf[40];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  std::string t(buf, n);
  if (t.size() > 2) t.insert(t.size() - 2, ":");  // +0100 → +01:00, as nginx writes it
  append_text(out, t, it);
}

void append_env_value(Line& out, const Env& env, const Item& it) {
  const Value* v = env.find(it.arg);
  if (v && v->is_text()) append_text(out, v->text(), it);
  else if (v && v->type() == Value::Type::integer) append_int(out, v->integer());
  else if (v && v->type() == Value::Type::boolean) out += v->truthy() ? "1" : "0";
  else out += it.json ? "null" : "-";
}

/// %r: "METHOD URI PROTOCOL" (never empty, so never "-").
void append_request_line(Line& out, const Env& env, const Item& it) {
  std::string_view method = env.get(keys::REQUEST_METHOD), uri = env.get(keys::REQUEST_URI);
  std::string_view proto = env.get(keys::SERVER_PROTOCOL);
  if (it.json) {
    std::string line(method);
    line += ' ';
    line += uri;
    if (!proto.empty()) line.append(" ").append(proto);
    append_json_string(out, line);
    return;
  }
  append_escaped_bytes(out, method);
  out += ' ';
  append_escaped_bytes(out, uri);
  if (!proto.empty()) {
    out += ' ';
    append_escaped_bytes(out, proto);
  }
}

/// A request-side item, read from the env (after the inner app ran) and the request's start.
void append_request_item(Line& out, const Item& it, const Env& env, std::time_t wall) {
  switch (it.kind) {
    case Item::literal: out += it.arg; break;
    case Item::remote_addr: append_text(out, env.get(keys::REMOTE_ADDR), it); break;
    case Item::logname: out += '-'; break;
    case Item::user: append_text(out, env.get(keys::REMOTE_USER), it); break;
    case Item::time: append_clf_time(out, wall); break;
    case Item::time_fmt: append_time_fmt(out, it.arg, wall); break;
    case Item::request_line: append_request_line(out, env, it); break;
    case Item::method: append_text(out, env.get(keys::REQUEST_METHOD), it); break;
    case Item::url_path: append_text(out, {env.get(keys::SCRIPT_NAME), env.get(keys::PATH_INFO)}, it); break;
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
    case Item::time_iso8601: append_iso8601(out, wall, it); break;
    case Item::port: append_text(out, env.get(keys::SERVER_PORT), it); break;
    case Item::env_var: append_env_value(out, env, it); break;
    case Item::req_header: append_text(out, env.get(it.arg), it); break;
    case Item::request_id: {
      std::string_view id = env.get("request_id.id");
      append_text(out, id.empty() ? env.get("HTTP_X_REQUEST_ID") : id, it);
      break;
    }
    default: break;
  }
}

/// What the response-side items print.
struct Outcome {
  int status = 0;
  std::uint64_t bytes = 0;
  Clock::time_point start;       // the call
  Clock::time_point head_known;  // when the response's status and headers were known
  Clock::time_point end;         // the line
};

/// A response-side item; `header` is the value of a %{Name}o item's header ("" when missing).
void append_response_item(Line& out, const Item& it, const Outcome& o, std::string_view header) {
  std::int64_t us = micros_between(o.start, o.end);
  switch (it.kind) {
    case Item::status: append_int(out, o.status); break;
    case Item::bytes_clf:
      if (o.bytes) append_int(out, o.bytes);
      else out += '-';
      break;
    case Item::bytes: append_int(out, o.bytes); break;
    case Item::micros: append_int(out, us); break;
    case Item::elapsed: append_int(out, it.arg == "us" ? us : it.arg == "ms" ? us / 1000 : us / 1000000); break;
    case Item::resp_header: append_text(out, header, it); break;
    case Item::seconds: append_seconds(out, us); break;
    case Item::header_seconds: append_seconds(out, micros_between(o.start, o.head_known)); break;
    case Item::msec:
      append_seconds(out, std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count());
      break;
    default: break;
  }
}

/// Renders the items in order: the request side from the env, a response-side item through
/// `response_item(out, item)`.
template <class ResponseItem>
void render(Line& out, const std::vector<Item>& items, const Env& env, std::time_t wall,
            ResponseItem&& response_item) {
  for (const Item& it : items) {
    if (it.kind == Item::literal) out += it.arg;
    else if (it.response_side()) response_item(out, it);
    else append_request_item(out, it, env, wall);
  }
}

/// The request as the log line needs it from before the inner app ran.
struct Started {
  Clock::time_point start;
  std::time_t wall;
  bool head;  // HEAD: no body goes out whatever the body holds
};

/// The body bytes of a response whose body is not a stream (known from the response alone).
std::uint64_t known_bytes(const Response& r, bool head) {
  if (status_has_no_body(r.status)) return 0;
  auto n = r.known_length();
  return n && !head ? *n : 0;
}

/// The calling thread's buffer for a line, empty: a line is copied into the writer's queue, so the buffer
/// is used again by the thread's next line.
Line& line_buffer() {
  thread_local Line line;
  if (line.capacity() > 65536) line = Line();  // after a line with huge headers
  line.clear();
  return line;
}

/// A line waiting for its response: request-side text rendered, holes for the response-side items.
struct Pending {
  std::shared_ptr<const std::vector<Item>> items;
  std::shared_ptr<LogWriter> writer;
  Line text;
  std::vector<std::pair<std::size_t, const Item*>> holes;
  std::vector<std::string> resp_headers;  // values of the %{Name}o items, in hole order
  Outcome outcome;
  bool logged = false;
  bool captured = false;  // the response's status and headers are known

  void capture(const Response& res) {
    captured = true;
    outcome.head_known = Clock::now();
    outcome.status = res.status;
    for (auto& [pos, item] : holes)
      if (item->kind == Item::resp_header) resp_headers.emplace_back(res.headers.get(item->arg).value_or(""));
  }

  void emit() {
    if (logged) return;
    logged = true;
    outcome.end = Clock::now();
    Line& line = line_buffer();
    std::size_t at = 0, hdr = 0;
    for (auto& [pos, item] : holes) {
      line.append(text.view().substr(at, pos - at));
      at = pos;
      append_response_item(line, *item, outcome, item->kind == Item::resp_header ? resp_headers[hdr++] : "");
    }
    line.append(text.view().substr(at));
    writer->push(line.view());
  }
  ~Pending() {
    try {
      if (captured) emit();  // a stream abandoned before its end: log what was sent
    } catch (...) {
    }
  }
};

// The whole line in one pass; %{Name}o items read `headers` (none: "").
void log_now(const std::vector<Item>& items, LogWriter& writer, const Env& env, const Started& req, const Outcome& outcome,
             const Headers* headers) {
  Line& line = line_buffer();
  render(line, items, env, req.wall, [&](Line& out, const Item& it) {
    std::string_view header;
    if (it.kind == Item::resp_header && headers) header = headers->get(it.arg).value_or("");
    append_response_item(out, it, outcome, header);
  });
  writer.push(line.view());
}

// The inner app's response; an exception from it is logged as 500 and goes on.
Response call_next(const App& next, Env& env, const std::vector<Item>& items, LogWriter& writer, const Started& req) {
  try {
    return next(env);
  } catch (...) {
    auto now = Clock::now();
    log_now(items, writer, env, req, Outcome{500, 0, req.start, now, now}, nullptr);
    throw;
  }
}

// A delayed response or a stream: the request side now, the rest when the response answers or ends.
Response log_later(std::shared_ptr<const std::vector<Item>> items, std::shared_ptr<LogWriter> writer, const Env& env,
                   const Started& req, Response res) {
  auto p = std::make_shared<Pending>();
  p->items = std::move(items);
  p->writer = std::move(writer);
  p->outcome.start = req.start;
  render(p->text, *p->items, env, req.wall, [&](Line& out, const Item& it) { p->holes.emplace_back(out.size(), &it); });
  bool head = req.head;
  return on_response(std::move(res), [p, head](Response& r) -> BodyFilter {
    p->capture(r);
    if (status_has_no_body(r.status) || !std::holds_alternative<StreamPtr>(r.body)) {
      p->outcome.bytes = known_bytes(r, head);
      p->emit();
      return nullptr;
    }
    return [p](std::string_view chunk, bool eof) {
      p->outcome.bytes += chunk.size();
      if (eof) p->emit();
      return std::string(chunk);
    };
  });
}

// Under an adapter that runs cleanup handlers (EXT-4) the line is written by one, once the response went
// out: with the status and body bytes the adapter reports it sent (fewer than the body when the client
// left first), else those this layer saw; the request side is read then, values set inside included.
struct Late {
  Outcome seen;
  Headers headers;  // the response's, for %{Name}o items (copied only when the format has some)
  bool captured = false;

  void capture(const Response& r, bool copy_headers) {
    captured = true;
    seen.status = r.status;
    seen.head_known = Clock::now();
    if (copy_headers) headers = r.headers;
  }
};

Response log_at_cleanup(const std::shared_ptr<const std::vector<Item>>& items, const std::shared_ptr<LogWriter>& writer,
                        bool copy_headers, const App& next, Env& env, const Started& req, CleanupHandlers& handlers) {
  auto late = std::make_shared<Late>();
  late->seen.start = req.start;
  late->seen.status = 500;  // until the app answers: an exception is the adapter's 500
  handlers.add([items, writer, late, req](Env& env) {
    Outcome o = late->seen;
    if (auto* h = env.object<CleanupHandlers>(keys::x::cleanup_handlers))
      if (auto sent = h->sent()) {
        o.status = sent->status;
        o.bytes = sent->body_bytes;
      }
    o.end = Clock::now();
    if (!late->captured) o.head_known = o.end;
    log_now(*items, *writer, env, req, o, late->captured ? &late->headers : nullptr);
  });
  Response res = next(env);
  bool head = req.head;
  if (!res.is_delayed() && (status_has_no_body(res.status) || !std::holds_alternative<StreamPtr>(res.body))) {
    late->capture(res, copy_headers);
    try {
      late->seen.bytes = known_bytes(res, head);
    } catch (...) {  // a file body that cannot be sized: the adapter's answer says
    }
    return res;
  }
  return on_response(std::move(res), [late, copy_headers, head](Response& r) -> BodyFilter {
    late->capture(r, copy_headers);
    if (status_has_no_body(r.status) || !std::holds_alternative<StreamPtr>(r.body)) {
      late->seen.bytes = known_bytes(r, head);
      return nullptr;
    }
    return [late](std::string_view chunk, bool) {
      late->seen.bytes += chunk.size();
      return std::string(chunk);
    };
  });
}

}  // namespace

AccessLog::AccessLog(App next, AccessLogOptions o)
    : next_(std::move(next)),
      items_(std::make_shared<const std::vector<Item>>(compile(o.format))),
      writer_(o.writer ? std::move(o.writer) : std::make_shared<LogWriter>(o.path, o.queue_lines)) {
  for (const Item& it : *items_) response_headers_ = response_headers_ || it.kind == Item::resp_header;
  if (!next_) throw std::invalid_argument("AccessLog: no next app");
}

Response AccessLog::operator()(Env& env) {
  Started req{Clock::now(), std::time(nullptr), env.get(keys::REQUEST_METHOD) == "HEAD"};
  if (env.flag(keys::x::cleanup))
    if (auto* handlers = env.object<CleanupHandlers>(keys::x::cleanup_handlers))
      return log_at_cleanup(items_, writer_, response_headers_, next_, env, req, *handlers);
  Response res = call_next(next_, env, *items_, *writer_, req);
  // Status, headers and body size known now (not delayed, no stream to count): the line at once.
  if (!res.is_delayed() && (status_has_no_body(res.status) || !std::holds_alternative<StreamPtr>(res.body))) {
    auto now = Clock::now();
    Outcome done{res.status, 0, req.start, now, now};
    try {
      done.bytes = known_bytes(res, req.head);
    } catch (...) {  // a file body that cannot be sized: logged without bytes, the error goes on
      log_now(*items_, *writer_, env, req, done, &res.headers);
      throw;
    }
    log_now(*items_, *writer_, env, req, done, &res.headers);
    return res;
  }
  return log_later(items_, writer_, env, req, std::move(res));
}

}  // namespace csgi::mw
