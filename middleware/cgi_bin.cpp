#include "csgi/middleware/cgi_bin.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <variant>

#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/middleware/cgi_bin_process.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

using cgi_bin_detail::Head;
using cgi_bin_detail::Parsed;
using cgi_bin_detail::Process;
using cgi_bin_detail::Slot;

/// Held by every copy of the app: when the last copy goes, the scripts still running are killed and their
/// workers waited for (bounded), so that none runs on for an app that no longer exists.
struct CgiBin::Lifetime {
  explicit Lifetime(std::shared_ptr<State> s) : st(std::move(s)) {}
  Lifetime(const Lifetime&) = delete;
  Lifetime& operator=(const Lifetime&) = delete;
  std::shared_ptr<State> st;
  ~Lifetime() {
    st->cancel_all();
    std::unique_lock lock(st->mu);
    st->idle.wait_for(lock, std::chrono::seconds(5), [this] { return st->workers == 0; });
  }
};

namespace {

constexpr std::string_view redirects_key = "cgi_bin.redirects";

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return {};
  return buf;
}

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* p = std::getenv("PATH");
  std::string_view path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (!dir.empty()) {
      std::string full = dir + "/" + name;
      struct stat st {};
      if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0) return full;
    }
    if (colon == std::string_view::npos) return {};
    path.remove_prefix(colon + 1);
  }
}

bool valid_env_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

/// What a script's CGI environment is built from: copied from the env on the calling thread, so that a
/// worker never reads the env.
struct Request {
  std::string base;       // SCRIPT_NAME of this app
  std::string path_info;  // below it
  std::string query;
  bool has_length = false;
  bool https = false;
  std::int64_t redirects = 0;
  std::vector<std::pair<std::string, std::string>> vars;  // meta-variables passed as they are, HTTP_*

  void set(std::string_view name, std::string value) {
    for (auto& [k, v] : vars)
      if (k == name) {
        v = std::move(value);
        return;
      }
    vars.emplace_back(std::string(name), std::move(value));
  }
  void drop(std::string_view name) {
    std::erase_if(vars, [&](const auto& kv) { return kv.first == name; });
  }
};

Request snapshot(const CgiBinOptions& o, const Env& env) {
  Request r;
  r.base = env.get(keys::SCRIPT_NAME);
  r.path_info = env.get(keys::PATH_INFO);
  r.query = env.get(keys::QUERY_STRING);
  r.has_length = env.contains(keys::CONTENT_LENGTH);
  r.https = env.get(keys::url_scheme) == "https";
  if (const Value* v = env.find(redirects_key)) r.redirects = v->integer();
  for (std::string_view k : {keys::REQUEST_METHOD, keys::REQUEST_URI, keys::SERVER_NAME, keys::SERVER_PORT,
                             keys::SERVER_PROTOCOL, keys::REMOTE_ADDR, keys::REMOTE_PORT, keys::REMOTE_USER,
                             keys::CONTENT_TYPE, std::string_view("AUTH_TYPE")})
    if (const Value* v = env.find(k); v && v->is_text()) r.vars.emplace_back(std::string(k), std::string(v->text()));
  if (std::string_view ra = env.get(keys::REMOTE_ADDR); !ra.empty()) r.vars.emplace_back("REMOTE_HOST", std::string(ra));
  for (const auto& entry : env) {
    std::string_view k = entry.key;
    if (!header_meta_variable(k) || !entry.value.is_text()) continue;
    if (k == keys::HTTP_AUTHORIZATION && !o.pass_authorization) continue;
    if (!valid_env_name(k)) continue;
    r.vars.emplace_back(std::string(k), std::string(entry.value.text()));
  }
  return r;
}

struct Located {
  std::string file;         // real path of the script
  std::string script_name;  // SCRIPT_NAME for the script: ours + the script's part of PATH_INFO
  std::string path_info;    // what follows the script
  int status = 0;           // non-zero: refuse with this status
  std::string reason;
};

Located refuse(int status, std::string reason) {
  Located l;
  l.status = status;
  l.reason = std::move(reason);
  return l;
}

/// Whether any '/'-separated segment of `path` is "..".
bool has_dot_dot(std::string_view path) {
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(i, end - i) == "..") return true;
    i = end + 1;
  }
  return false;
}

Located locate(const CgiBin::State& st, std::string_view script_name, std::string_view path_info) {
  if (path_info.empty() || path_info.front() != '/') return refuse(404, "no script named");
  // The part after the script becomes PATH_TRANSLATED (root + it): no segment may climb out of root.
  if (has_dot_dot(path_info)) return refuse(404, "a '..' segment in the path");
  std::string fs = st.root;
  std::size_t i = 0;
  while (i < path_info.size()) {
    std::size_t start = i + 1;
    std::size_t end = path_info.find('/', start);
    if (end == std::string_view::npos) end = path_info.size();
    std::string_view seg = path_info.substr(start, end - start);
    if (seg.empty() || seg.front() == '.' || seg.find('\0') != std::string_view::npos ||
        seg.find('\\') != std::string_view::npos)
      return refuse(404, "an empty, dot or hidden segment in the script's path");
    fs += '/';
    fs += seg;
    struct stat sb {};
    if (::stat(fs.c_str(), &sb) != 0) return refuse(404, "no such script");
    if (S_ISREG(sb.st_mode)) {
      std::string real = real_path(fs);
      if (real.empty() || real.compare(0, st.root.size() + 1, st.root + "/") != 0)
        return refuse(403, "the script is outside the script directory");
      Located loc;
      loc.file = real;
      loc.script_name = std::string(script_name) + std::string(path_info.substr(0, end));
      loc.path_info = std::string(path_info.substr(end));
      return loc;
    }
    if (!S_ISDIR(sb.st_mode)) return refuse(403, "not a regular file");
    i = end;
  }
  return refuse(404, "a directory, not a script");
}

std::vector<std::string> cgi_environment(const CgiBin::State& st, const Request& req, const Located& loc,
                                         std::size_t body_size) {
  const auto& o = st.options;
  std::vector<std::string> e;
  e.reserve(24 + req.vars.size() + o.extra_env.size());
  auto add = [&e](std::string_view k, std::string_view v) {
    if (v.find('\0') != std::string_view::npos) return;
    std::string s;
    s.reserve(k.size() + v.size() + 1);
    s.append(k).append("=").append(v);
    e.push_back(std::move(s));
  };
  add("GATEWAY_INTERFACE", "CGI/1.1");
  add("SERVER_SOFTWARE", o.server_software);
  add("PATH", o.path);
  add("SCRIPT_NAME", loc.script_name);
  add("SCRIPT_FILENAME", loc.file);
  add("DOCUMENT_ROOT", st.root);
  add("REDIRECT_STATUS", "200");
  if (!loc.path_info.empty()) {
    add("PATH_INFO", loc.path_info);
    add("PATH_TRANSLATED", st.root + loc.path_info);
  }
  add("QUERY_STRING", req.query);
  if (body_size > 0 || req.has_length) add("CONTENT_LENGTH", std::to_string(body_size));
  if (req.https) add("HTTPS", "on");
  for (const auto& [k, v] : req.vars) add(k, v);
  for (const auto& [k, v] : o.extra_env) add(k, v);
  return e;
}

/// A located script and how to run it.
struct Script {
  Located loc;
  std::vector<std::string> argv;
  std::string dir;
};

std::variant<Script, Response> prepare(const CgiBin::State& st, const Request& req) {
  Script s;
  s.loc = locate(st, req.base, req.path_info);
  if (s.loc.status) return Response::error(s.loc.status, s.loc.reason);
  const std::string& file = s.loc.file;
  auto dot = file.rfind('.');
  auto slash = file.rfind('/');
  std::string ext = dot != std::string::npos && dot > slash ? file.substr(dot) : std::string();
  if (auto it = st.options.interpreters.find(ext); it != st.options.interpreters.end()) {
    s.argv = it->second;
  } else if (::access(file.c_str(), X_OK) != 0) {
    return Response::error(403, "not executable, and no interpreter for its extension");
  }
  s.argv.push_back(file);
  s.dir = file.substr(0, slash == 0 ? 1 : slash);
  return s;
}

Response busy() {
  Response r = Response::error(503, "too many CGI scripts running");
  r.headers.add("Retry-After", "1");
  return r;
}

/// Starts `s`; a refusal response when it cannot run.
std::variant<std::shared_ptr<Process>, Response> spawn(const std::shared_ptr<CgiBin::State>& st, const Request& req,
                                                        const Script& s, std::string body, ErrorStream* errors) {
  auto proc = std::make_shared<Process>(st, s.loc.script_name, errors);
  std::vector<std::string> cgi_env = cgi_environment(*st, req, s.loc, body.size());
  int rc = proc->spawn(s.argv, cgi_env, s.dir, std::move(body));
  if (rc != 0) {
    proc->log(std::string("cannot run: ") + std::strerror(rc));
    proc->close();
    if (rc == EACCES || rc == ENOEXEC) return Response::error(403, "the script cannot be run");
    return Response::error(500);
  }
  return proc;
}

bool is_local_redirect(const Parsed& p) { return !p.location.empty() && p.location.front() == '/' && p.status == 0; }

/// Status and headers of the response; Content-Type added when a body may follow, removed when none may.
Response head_response(Parsed& p) {
  Response res;
  res.status = p.status ? p.status : !p.location.empty() ? 302 : 200;
  res.headers = std::move(p.headers);
  if (status_has_no_body(res.status))
    res.headers.remove("Content-Type");
  else if (!p.content_type)
    res.headers.add("Content-Type", "application/octet-stream");
  return res;
}

/// `path` without "." and ".." segments (RFC 3986 §5.2.4); nullopt when ".." climbs above "/".
std::optional<std::string> remove_dot_segments(std::string_view path) {
  std::vector<std::string_view> out;
  bool trailing = false;
  std::size_t i = 1;
  while (true) {
    std::size_t end = path.find('/', i);
    bool last = end == std::string_view::npos;
    std::string_view seg = path.substr(i, last ? std::string_view::npos : end - i);
    if (seg == ".") {
      trailing = last;
    } else if (seg == "..") {
      if (out.empty()) return std::nullopt;
      out.pop_back();
      trailing = last;
    } else {
      out.push_back(seg);
      trailing = false;
    }
    if (last) break;
    i = end + 1;
  }
  std::string r;
  for (std::string_view s : out) r.append("/").append(s);
  if (trailing || r.empty()) r += '/';
  return r;
}

/// A local redirect outside this app: where it goes.
struct Outside {
  std::string path;
  std::string query;
  std::string location;
};

/// What a local redirect (`Location: /path` without Status) becomes: a response to send, the same request
/// re-run as GET at another script of this app, or a request for `redirect_app`.
std::variant<Response, Request, Outside> plan_redirect(const CgiBinOptions& o, const Request& req,
                                                       const std::string& location, ErrorStream* errors) {
  if (req.redirects >= o.max_local_redirects) {
    if (errors) errors->write("cgi_bin: too many local redirects, at " + location);
    return Response::error(500);
  }
  std::string_view loc = location;
  std::string_view query;
  if (auto q = loc.find('?'); q != std::string_view::npos) {
    query = loc.substr(q + 1);
    loc = loc.substr(0, q);
  }
  std::optional<std::string> path;
  try {
    path = remove_dot_segments(percent_decode(loc));
  } catch (const std::exception&) {
  }
  if (!path) {
    if (errors) errors->write("cgi_bin: bad local redirect to " + location);
    return Response::error(502, "bad local redirect");
  }
  const std::string& base = req.base;
  bool ours = within_prefix(*path, base);
  if (ours) {
    Request next = req;
    next.path_info = path->substr(base.size());
    next.query = query;
    next.has_length = false;
    next.redirects = req.redirects + 1;
    next.set(keys::REQUEST_METHOD, "GET");
    next.set(keys::REQUEST_URI, location);
    next.drop(keys::CONTENT_TYPE);
    return next;
  }
  if (!o.redirect_app) {
    Response r = Response::text(302, "Found\n");
    r.headers.add("Location", location);
    return r;
  }
  return Outside{std::move(*path), std::string(query), location};
}

/// Makes `env` the request of a local redirect to `to` (for redirect_app).
void redirect_env(Env& env, const Outside& to, std::int64_t depth) {
  env.set_int(redirects_key, depth + 1);
  env.set(keys::REQUEST_METHOD, "GET");
  env.set(keys::QUERY_STRING, to.query);
  env.set(keys::REQUEST_URI, to.location);
  env.erase(keys::CONTENT_LENGTH);
  env.erase(keys::CONTENT_TYPE);
  env.set(keys::SCRIPT_NAME, "");
  env.set(keys::PATH_INFO, to.path);
}

// ---------------------------------------------------------------------------------------------------
// On the calling thread: the body is a pull stream over the script's stdout.

/// Restores what a local redirect to redirect_app changes in the env.
class EnvRestore {
public:
  explicit EnvRestore(Env& env) : env_(env) {
    for (std::string_view k : names) {
      const Value* v = env.find(k);
      saved_.push_back(v ? std::optional<std::string>(std::string(v->text())) : std::nullopt);
    }
  }
  ~EnvRestore() {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (saved_[i])
        env_.set(names[i], *saved_[i]);
      else
        env_.erase(names[i]);
    }
  }
  EnvRestore(const EnvRestore&) = delete;
  EnvRestore& operator=(const EnvRestore&) = delete;
  static constexpr std::array<std::string_view, 7> names{keys::SCRIPT_NAME, keys::PATH_INFO, keys::QUERY_STRING,
                                                         keys::REQUEST_METHOD, keys::REQUEST_URI,
                                                         keys::CONTENT_LENGTH, keys::CONTENT_TYPE};

private:
  Env& env_;
  std::vector<std::optional<std::string>> saved_;
};

Response run_here(const std::shared_ptr<CgiBin::State>& st, Env& env, const Request& req);

Response answer_here(const std::shared_ptr<CgiBin::State>& st, Env& env, const Request& req,
                     const std::shared_ptr<Process>& proc) {
  Head h = read_head(*proc, st->options.max_header_bytes);
  if (h.failure) return std::move(*h.failure);
  if (is_local_redirect(h.parsed)) {
    proc->close();  // the script's own body is not used (RFC 3875 §6.2.2)
    auto plan = plan_redirect(st->options, req, h.parsed.location, &env.errors());
    if (auto* r = std::get_if<Response>(&plan)) return std::move(*r);
    if (auto* next = std::get_if<Request>(&plan)) return run_here(st, env, *next);
    EnvRestore restore(env);
    redirect_env(env, std::get<Outside>(plan), req.redirects);
    return st->options.redirect_app(env);
  }
  Response res = head_response(h.parsed);
  if (status_has_no_body(res.status)) {
    discard_output(*proc);
    res.body = std::string();
    return res;
  }
  proc->set_pending(std::move(h.rest));
  res.body = StreamPtr(proc);
  return res;
}

/// A local redirect's new script (no request body).
Response run_here(const std::shared_ptr<CgiBin::State>& st, Env& env, const Request& req) {
  auto prep = prepare(*st, req);
  if (auto* r = std::get_if<Response>(&prep)) return std::move(*r);
  Slot slot = Slot::acquire(st);
  if (!slot) return busy();
  auto started = spawn(st, req, std::get<Script>(prep), std::string(), &env.errors());
  if (auto* r = std::get_if<Response>(&started)) return std::move(*r);
  auto proc = std::get<std::shared_ptr<Process>>(std::move(started));
  proc->hold(std::move(slot));
  return answer_here(st, env, req, proc);
}

// ---------------------------------------------------------------------------------------------------
// On a worker thread: a delayed response, its body written as the script writes it.

/// One request answered by a worker: everything it needs, none of it in the env.
struct Job {
  std::shared_ptr<CgiBin::State> st;
  Request req;
  std::shared_ptr<Process> proc;  // holds its slot
  ErrorStream* errors = nullptr;
  std::shared_ptr<Env> env_copy;  // for redirect_app only
};

/// Copies an env (text copied, objects by pointer), with an empty csgi.input; csgi.multithread is true:
/// redirect_app runs on the worker, beside the adapter's own threads.
std::shared_ptr<Env> copy_env(const Env& env) {
  auto c = std::make_shared<Env>();
  for (const auto& e : env) {
    if (e.value.is_text())
      c->set(e.key, e.value.text());
    else
      c->set_value(c->intern(e.key), e.value);
  }
  c->set_object<Input>(keys::input, std::shared_ptr<Input>(std::make_shared<StringInput>()));
  c->set_bool(keys::multithread, true);
  return c;
}

// What redirect_app answers may refer to the env copy it was called with: these keep it alive.
class KeepStream final : public Stream {
public:
  KeepStream(StreamPtr inner, std::shared_ptr<Env> keep) : inner_(std::move(inner)), keep_(std::move(keep)) {}
  bool next(std::string& chunk) override { return inner_->next(chunk); }
  void close() override { inner_->close(); }
  Headers trailers() override { return inner_->trailers(); }

private:
  StreamPtr inner_;
  std::shared_ptr<Env> keep_;
};

class KeepWriter final : public Writer {
public:
  KeepWriter(WriterPtr inner, std::shared_ptr<Env> keep) : inner_(std::move(inner)), keep_(std::move(keep)) {}
  bool write(std::string_view chunk) override { return inner_->write(chunk); }
  void close() override { inner_->close(); }
  void set_trailers(Headers trailers) override { inner_->set_trailers(std::move(trailers)); }

private:
  WriterPtr inner_;
  std::shared_ptr<Env> keep_;
};

Response keep_body(Response r, const std::shared_ptr<Env>& keep) {
  if (auto* s = std::get_if<StreamPtr>(&r.body); s && *s) r.body = StreamPtr(std::make_shared<KeepStream>(*s, keep));
  return r;
}

class KeepResponder final : public ResponderImpl {
public:
  KeepResponder(Responder inner, std::shared_ptr<Env> keep) : inner_(std::move(inner)), keep_(std::move(keep)) {}
  void respond(Response r) override { inner_.respond(keep_body(std::move(r), keep_)); }
  WriterPtr start(int status, Headers headers) override {
    return std::make_shared<KeepWriter>(inner_.start(status, std::move(headers)), keep_);
  }

private:
  Responder inner_;
  std::shared_ptr<Env> keep_;
};

void call_redirect_app(Job& job, const Responder& r, const Outside& to) {
  std::shared_ptr<Env> env = std::move(job.env_copy);
  redirect_env(*env, to, job.req.redirects);
  Response res = job.st->options.redirect_app(*env);
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed fn = std::move(*d);
    fn(Responder(std::make_shared<KeepResponder>(r, env)));
    return;
  }
  r.respond(keep_body(std::move(res), env));
}

/// Follows a local redirect. True when a new script runs in job.proc; false once answered.
bool redirect_async(Job& job, const Responder& r, const std::string& location) {
  auto plan = plan_redirect(job.st->options, job.req, location, job.errors);
  if (auto* res = std::get_if<Response>(&plan)) {
    r.respond(std::move(*res));
    return false;
  }
  if (auto* to = std::get_if<Outside>(&plan)) {
    call_redirect_app(job, r, *to);
    return false;
  }
  job.req = std::get<Request>(std::move(plan));
  auto prep = prepare(*job.st, job.req);
  if (auto* res = std::get_if<Response>(&prep)) {
    r.respond(std::move(*res));
    return false;
  }
  Slot slot = Slot::acquire(job.st);
  if (!slot) {
    r.respond(busy());
    return false;
  }
  auto started = spawn(job.st, job.req, std::get<Script>(prep), std::string(), job.errors);
  if (auto* res = std::get_if<Response>(&started)) {
    r.respond(std::move(*res));
    return false;
  }
  job.proc = std::get<std::shared_ptr<Process>>(std::move(started));
  job.proc->hold(std::move(slot));
  return true;
}

/// Sends the head, then stdout as it comes. A timeout drops the writer unclosed: the adapter ends the
/// response as failed, so a truncated body is never taken for a complete one.
void stream_body(Process& proc, const Responder& r, Response head, std::string rest) {
  WriterPtr w = r.start(head.status, std::move(head.headers));
  bool ok = rest.empty() || w->write(rest);
  rest.clear();
  std::string chunk;
  while (ok) {
    chunk.clear();
    switch (proc.pump(chunk)) {
      case Process::Got::data: ok = w->write(chunk); continue;
      case Process::Got::eof:
        proc.finish();
        w->close();
        return;
      case Process::Got::timeout: proc.log("timed out after the headers; killed"); break;
      case Process::Got::cancelled: proc.log("the app was destroyed while the script ran; killed"); break;
    }
    proc.close();
    return;
  }
  proc.log("the client went away; killed");
  proc.close();
  w->close();
}

void work(Job& job, const Responder& r) {
  while (true) {
    Head h = read_head(*job.proc, job.st->options.max_header_bytes);
    if (h.failure) {
      job.proc->close();
      return r.respond(std::move(*h.failure));
    }
    if (is_local_redirect(h.parsed)) {
      job.proc->close();  // the script's own body is not used (RFC 3875 §6.2.2)
      if (redirect_async(job, r, h.parsed.location)) continue;
      return;
    }
    Response res = head_response(h.parsed);
    if (status_has_no_body(res.status)) {
      discard_output(*job.proc);  // its exit status and last stderr lines are logged while the env is valid
      res.body = std::string();
      return r.respond(std::move(res));
    }
    return stream_body(*job.proc, r, std::move(res), std::move(h.rest));
  }
}

/// The worker's whole run. Nothing escapes: a failure before the answer drops the responder, which the
/// adapter answers with a 500 (ADP-11).
/// Once the response is complete the env (csgi.errors with it) may be gone (APP-3): what the script
/// still says after that is not logged.
void run_worker(std::shared_ptr<Job> job, Responder r) noexcept {
  try {
    work(*job, r);
  } catch (const std::exception& e) {
    if (job->proc) job->proc->log(std::string("failed: ") + e.what());
  } catch (...) {
  }
  try {
    if (job->proc) {
      job->proc->forget_errors();
      job->proc->close();
    }
  } catch (...) {
  }
}

/// The delayed response's callable: hands the job to a thread of its own (one per running script, so
/// bounded by max_processes).
void start_worker(const std::shared_ptr<Job>& job, Responder r) {
  std::shared_ptr<CgiBin::State> st = job->st;
  {
    std::lock_guard lock(st->mu);
    ++st->workers;
  }
  try {
    std::thread([job, r]() mutable {
      std::shared_ptr<CgiBin::State> state = job->st;
      run_worker(std::move(job), std::move(r));  // both released before the count drops
      std::lock_guard lock(state->mu);
      --state->workers;
      state->idle.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    {
      std::lock_guard lock(st->mu);
      --st->workers;
    }
    job->proc->log(std::string("cannot start a thread: ") + e.what());
    job->proc->close();
    r.respond(busy());
  }
}

std::string read_body(const Env& env, const CgiBinOptions& o) {
  if (!env.contains(keys::CONTENT_LENGTH) && !env.find(keys::input)) return {};
  return env.input().read_all(o.max_request_body);  // throws HttpError(413) past the limit
}

}  // namespace

CgiBin::CgiBin(CgiBinOptions options) : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  auto& o = state_->options;
  struct stat sb {};
  if (o.root.empty() || ::stat(o.root.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
    throw std::invalid_argument("CgiBin: root is not a directory: " + o.root);
  state_->root = real_path(o.root);
  if (state_->root.empty()) throw std::invalid_argument("CgiBin: cannot resolve root " + o.root);
  if (state_->root == "/") state_->root.clear();  // "/" + segments
  if (o.max_processes == 0 || o.timeout.count() <= 0 || o.max_header_bytes == 0)
    throw std::invalid_argument("CgiBin: max_processes, timeout and max_header_bytes must be positive");
  for (const auto& [k, v] : o.extra_env)
    if (!valid_env_name(k)) throw std::invalid_argument("CgiBin: bad extra_env name: " + k);
  for (auto it = o.interpreters.begin(); it != o.interpreters.end();) {
    if (it->second.empty()) throw std::invalid_argument("CgiBin: empty interpreter for " + it->first);
    std::string found = find_on_path(it->second.front());
    if (found.empty()) {
      it = o.interpreters.erase(it);
      continue;
    }
    it->second.front() = found;
    ++it;
  }
  lifetime_ = std::make_shared<Lifetime>(state_);
}

bool CgiBin::has_interpreter(const std::string& extension) const {
  return state_->options.interpreters.count(extension) != 0;
}

std::size_t CgiBin::running() const noexcept { return state_->running.load(std::memory_order_relaxed); }

Response CgiBin::operator()(Env& env) const {
  const auto& o = state_->options;
  Request req = snapshot(o, env);
  auto prep = prepare(*state_, req);
  if (auto* r = std::get_if<Response>(&prep)) return std::move(*r);
  std::string body = read_body(env, o);
  Slot slot = Slot::acquire(state_);
  if (!slot) return busy();
  auto started = spawn(state_, req, std::get<Script>(prep), std::move(body), &env.errors());
  if (auto* r = std::get_if<Response>(&started)) return std::move(*r);
  auto proc = std::get<std::shared_ptr<Process>>(std::move(started));
  proc->hold(std::move(slot));
  if (!o.async || !env.flag(keys::streaming)) return answer_here(state_, env, req, proc);
  auto job = std::make_shared<Job>();
  job->st = state_;
  job->req = std::move(req);
  job->proc = std::move(proc);
  job->errors = &env.errors();
  if (o.redirect_app) job->env_copy = copy_env(env);
  return Response::delayed([job](Responder r) { start_worker(job, std::move(r)); });
}

}  // namespace csgi::mw
