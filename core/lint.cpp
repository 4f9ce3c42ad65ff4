#include "csgi/core/lint.hpp"

#include <sys/stat.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "csgi/core/broadcast.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/on_response.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/text.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi {

namespace {

constexpr std::array<std::string_view, 51> kRules = {
    "ENV-1",  "ENV-2",  "ENV-3",  "ENV-4",   "ENV-5",   "ENV-6",  "ENV-7",  "ENV-8",  "ENV-9",  "ENV-10", "ENV-11",
    "ENV-12", "ENV-13", "ENV-14", "ENV-15",  "ENV-16",  "ENV-17", "ENV-18", "ENV-19", "CORE-1", "CORE-2", "CORE-3",
    "CORE-4", "CORE-5", "CORE-6", "INPUT-1", "INPUT-2", "EXT-1",  "EXT-3",  "EXT-4",  "EXT-5",  "EXT-7",  "EXT-8",
    "EXT-9",  "EXT-12", "RES-1",  "RES-2",   "RES-4",   "RES-5",  "RES-6",  "RES-7",  "RES-8",  "RES-9",  "RES-10",
    "RES-11", "RES-12", "RES-13", "RES-14",  "RES-15",  "MW-3",   "MW-5",
};

[[noreturn]] void fail(std::string_view rule, std::string_view detail) { throw LintError(rule, detail); }

/// A value for an error message: quoted, non-printable bytes as \xNN, cut after 80 bytes.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex_lower[c >> 4];
      out += hex_lower[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "...";
  out += '"';
  return out;
}

template <class... Parts>
std::string str(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

bool is_digits(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

std::string_view type_name(const Value& v) {
  switch (v.type()) {
    case Value::Type::text: return "text";
    case Value::Type::integer: return "an integer";
    case Value::Type::boolean: return "a boolean";
    case Value::Type::object: return "an object";
  }
  return "?";
}

// ---- env -------------------------------------------------------------------------------------------------

const Value& need(const Env& env, std::string_view key, std::string_view rule) {
  const Value* v = env.find(key);
  if (!v) fail(rule, str(key, " is missing from the env"));
  return *v;
}

std::string_view need_text(const Env& env, std::string_view key, std::string_view rule) {
  const Value& v = need(env, key, rule);
  if (!v.is_text()) fail(rule, str(key, " must be text, got ", type_name(v)));
  return v.text();
}

void need_bool(const Env& env, std::string_view key, std::string_view rule) {
  const Value& v = need(env, key, rule);
  if (v.type() != Value::Type::boolean) fail(rule, str(key, " must be a boolean (set_bool), got ", type_name(v)));
}

constexpr std::array<std::string_view, 9> kCoreKeys = {keys::version,   keys::url_scheme,   keys::input,
                                                       keys::errors,    keys::multithread,  keys::multiprocess,
                                                       keys::run_once,  keys::nonblocking,  keys::streaming};
constexpr std::array<std::string_view, 14> kExtKeys = {keys::x::io,
                                                       keys::x::input_buffered,
                                                       keys::x::logger,
                                                       keys::x::session,
                                                       keys::x::session_options,
                                                       keys::x::harakiri,
                                                       keys::x::harakiri_commit,
                                                       keys::x::cleanup,
                                                       keys::x::cleanup_handlers,
                                                       keys::x::informational,
                                                       keys::x::request_body_limit,
                                                       keys::x::server_stats,
                                                       keys::x::websocket,
                                                       keys::x::broadcast};

template <std::size_t N>
bool known(const std::array<std::string_view, N>& list, std::string_view key) {
  for (std::string_view k : list)
    if (k == key) return true;
  return false;
}

/// ENV-14 / ENV-15 on the way in, MW-5 on the way out.
void check_keys(const Env& env, std::string_view namespace_rule) {
  for (const Env::Entry& e : env) {
    if (e.key.empty()) fail("ENV-14", "an env key is empty");
    bool dotted = e.key.find('.') != std::string_view::npos;
    if (!dotted && !e.value.is_text())
      fail("ENV-14", str("CGI key ", e.key, " (no dot) must hold text, got ", type_name(e.value)));
    if (e.key.starts_with("csgi.") && !known(kCoreKeys, e.key) && !e.key.starts_with("csgi.request."))
      fail(namespace_rule, str(e.key, " is not a csgi.* key of this spec: csgi. is reserved for the core keys"));
    if (e.key.starts_with("csgix.") && !known(kExtKeys, e.key))
      fail(namespace_rule,
           str(e.key, " is not a csgix.* extension of this spec: keep your own keys under <name>., or add the "
                      "extension to spec/csgi.md and Lint"));
  }
}

template <class T>
void need_object(const Env& env, std::string_view key, std::string_view type, std::string_view rule) {
  const Value* v = env.find(key);
  if (!v) return;
  if (!v->object<T>())
    fail(rule, str(key, " must hold a non-null ", type, " stored as that type (set_object<", type, ">)"));
}

void check_extensions(const Env& env) {
  for (std::string_view k : {keys::x::input_buffered, keys::x::harakiri, keys::x::harakiri_commit, keys::x::cleanup}) {
    if (const Value* v = env.find(k); v && v->type() != Value::Type::boolean)
      fail("EXT-1", str(k, " must be a boolean, got ", type_name(*v)));
  }
  if (const Value* v = env.find(keys::x::request_body_limit);
      v && (v->type() != Value::Type::integer || v->integer() < 0))
    fail("EXT-1", str(keys::x::request_body_limit, " must be a non-negative integer, got ", type_name(*v)));
  need_object<Hijack>(env, keys::x::io, "csgi::Hijack", "EXT-1");
  need_object<Logger>(env, keys::x::logger, "csgi::Logger", "EXT-1");
  need_object<Broadcast>(env, keys::x::broadcast, "csgi::Broadcast", "EXT-12");
  need_object<Session>(env, keys::x::session, "csgi::Session", "EXT-1");
  need_object<SessionOptions>(env, keys::x::session_options, "csgi::SessionOptions", "EXT-1");
  need_object<CleanupHandlers>(env, keys::x::cleanup_handlers, "csgi::CleanupHandlers", "EXT-1");
  need_object<Informational>(env, keys::x::informational, "csgi::Informational", "EXT-1");
  need_object<ServerStats>(env, keys::x::server_stats, "csgi::ServerStats", "EXT-7");
  need_object<websocket::Handshake>(env, keys::x::websocket, "csgi::websocket::Handshake", "EXT-8");
  if (env.flag(keys::x::cleanup) && !env.object<CleanupHandlers>(keys::x::cleanup_handlers))
    fail("EXT-4", "csgix.cleanup is true but csgix.cleanup.handlers is missing");
}

// ---- response heads --------------------------------------------------------------------------------------

bool no_body_status(int status) noexcept { return status_has_no_body(status); }

/// ENV-17 / ENV-18: HTTPS and the TLS keys (named as Apache mod_ssl does).
void check_tls_keys(const Env& env, std::string_view scheme) {
  std::string_view https = env.get(keys::HTTPS);
  bool on = iequals(https, "on") || https == "1";
  if (on && scheme != "https")
    fail("ENV-17", str("HTTPS is ", quote(https), " but csgi.url_scheme is ", quote(scheme)));
  static constexpr std::string_view tls_keys[] = {keys::SSL_PROTOCOL, keys::SSL_CIPHER, keys::SSL_TLS_SNI,
                                                  keys::SSL_CLIENT_VERIFY, keys::SSL_CLIENT_S_DN, keys::SSL_CLIENT_CERT};
  for (std::string_view k : tls_keys)
    if (env.contains(k) && scheme != "https") fail("ENV-18", str(k, " is set but csgi.url_scheme is ", quote(scheme)));
  if (const Value* v = env.find(keys::SSL_PROTOCOL); v && !(v->text().starts_with("TLSv") || v->text().starts_with("SSLv")))
    fail("ENV-18", str("SSL_PROTOCOL must name a protocol such as TLSv1.3, got ", quote(v->text())));
  if (const Value* v = env.find(keys::SSL_CLIENT_VERIFY)) {
    std::string_view t = v->text();
    if (t != "SUCCESS" && t != "NONE" && t != "GENEROUS" && !t.starts_with("FAILED:"))
      fail("ENV-18", str("SSL_CLIENT_VERIFY must be SUCCESS, NONE, GENEROUS or FAILED:reason, got ", quote(t)));
  }
  if (const Value* v = env.find(keys::SSL_CLIENT_CERT); v && !v->text().empty() &&
                                                       !v->text().starts_with("-----BEGIN CERTIFICATE-----"))
    fail("ENV-18", "SSL_CLIENT_CERT must be a PEM certificate (-----BEGIN CERTIFICATE-----)");
}

void check_fields(const Headers& headers) {
  for (const Header& h : headers) {
    std::string_view n = h.name;
    bool ok = !n.empty() && is_alpha(n.front()) && n.back() != '-' && n.back() != '_';
    for (char c : n) ok = ok && (is_alpha(c) || is_digit(c) || c == '-' || c == '_');
    if (!ok)
      fail("RES-2", str("header name ", quote(n),
                        " must start with a letter, hold only letters, digits, '-' and '_', and not end in '-' or '_'"));
    if (iequals(n, "Status")) fail("RES-2", "a response must not carry a Status header (the status is Response::status)");
    if (has_ctl(h.value, true))
      fail("RES-4", str("header ", n, " has a control character in its value ", quote(h.value)));
  }
}

/// Checks a final response head; returns the declared Content-Length.
std::optional<std::uint64_t> check_final_head(int status, const Headers& headers) {
  if (status < 100 || status > 599) fail("RES-1", str("status must be 100...599, got ", std::to_string(status)));
  if (status < 200 && status != 101)
    fail("RES-1", str("a final response cannot have status ", std::to_string(status),
                      ": send interim responses through csgix.informational"));
  check_fields(headers);
  for (std::string_view hop : {"Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Proxy-Connection"}) {
    if (headers.has(hop)) fail("RES-14", str("hop-by-hop header ", hop, " must not be set by the app: framing is the adapter's"));
  }
  if (status != 101 && status != 426 && headers.has("Upgrade"))
    fail("RES-14", "Upgrade is only allowed with status 101 or 426");
  auto lengths = headers.get_all("Content-Length");
  if (no_body_status(status)) {
    if (headers.has("Content-Type"))
      fail("RES-7", str("status ", std::to_string(status), " must not have a Content-Type header"));
    if (!lengths.empty())
      fail("RES-7", str("status ", std::to_string(status), " must not have a Content-Length header"));
    return std::nullopt;
  }
  if (!headers.has("Content-Type"))
    fail("RES-5", str("status ", std::to_string(status), " needs a Content-Type header"));
  if (lengths.empty()) return std::nullopt;
  if (lengths.size() > 1) fail("RES-13", "more than one Content-Length header");
  if (!is_digits(lengths.front()) || lengths.front().size() > 19)
    fail("RES-13", str("Content-Length must be decimal digits, got ", quote(lengths.front())));
  return std::stoull(std::string(lengths.front()));
}

/// Checks the trailer fields of a stream or writer body.
void check_trailers(const Headers& trailers) {
  check_fields(trailers);
  for (const Header& h : trailers) {
    if (trailer_field_forbidden(h.name))
      fail("RES-15", str(h.name, " must not be a trailer field: it frames, routes, authenticates or controls the "
                         "response, or says how to process its content (RFC 9110 6.5.1)"));
  }
}

/// A stream body whose trailers are checked when the adapter asks for them.
class TrailerCheckStream final : public Stream {
public:
  explicit TrailerCheckStream(StreamPtr inner) : inner_(std::move(inner)) {}
  bool next(std::string& chunk) override { return inner_->next(chunk); }
  void close() override { inner_->close(); }
  Headers trailers() override {
    Headers t = inner_->trailers();
    check_trailers(t);
    return t;
  }

private:
  StreamPtr inner_;
};

// ---- per-request state -----------------------------------------------------------------------------------

/// What Lint remembers about one request. Shared by the wrappers of that request only.
struct Exchange {
  std::mutex mu;
  bool head_request = false;
  bool answered = false;        // the Responder was used
  bool final_started = false;   // the final response was handed to the adapter
  bool ws_taken = false;        // csgix.websocket took a handler
};

void check_length(std::uint64_t declared, std::uint64_t actual, bool head_request) {
  if (!head_request && declared != actual)
    fail("RES-13", str("Content-Length says ", std::to_string(declared), " bytes but the body has ", std::to_string(actual)));
}

/// Counts stream bytes; checked chunk by chunk through on_response.
struct StreamCount {
  int status;
  std::optional<std::uint64_t> declared;
  bool head_request;
  std::uint64_t sent = 0;
};

/// Checks a complete response (returned, or given to Responder::respond). The returned filter checks a
/// stream body as it is read; other kinds are checked at once and pass untouched.
BodyFilter check_response(Response& r, bool head_request) {
  auto declared = check_final_head(r.status, r.headers);
  bool nobody = no_body_status(r.status);
  auto complete = [&](std::uint64_t n) {
    if (nobody && n > 0) fail("RES-6", str("status ", std::to_string(r.status), " must have an empty body"));
    if (declared) check_length(*declared, n, head_request);
  };
  if (auto* s = std::get_if<std::string>(&r.body)) {
    complete(s->size());
    return nullptr;
  }
  if (auto* b = std::get_if<SharedBytes>(&r.body)) {
    if (!*b) fail("RES-12", "a SharedBytes body must not be null");
    complete((*b)->size());
    return nullptr;
  }
  if (auto* f = std::get_if<FileBody>(&r.body)) {
    if (!f->file && f->path.empty()) fail("RES-11", "a FileBody needs an open file or a path");
    if (f->file && f->file->fd() < 0) fail("RES-11", "a FileBody's FileHandle holds no descriptor");
    struct stat st {};
    int rc = f->file ? ::fstat(f->file->fd(), &st) : ::stat(f->path.c_str(), &st);
    if (rc != 0) fail("RES-11", str("the file of a FileBody cannot be read: ", quote(f->path)));
    if (!S_ISREG(st.st_mode)) fail("RES-11", str("a FileBody must be a regular file: ", quote(f->path)));
    auto total = static_cast<std::uint64_t>(st.st_size);
    if (f->offset > total)
      fail("RES-11", str("FileBody offset ", std::to_string(f->offset), " is past the end of ", quote(f->path)));
    if (f->length != FileBody::npos && f->length > total - f->offset)
      fail("RES-11", str("FileBody offset+length runs past the end of ", quote(f->path), " (",
                         std::to_string(total), " bytes)"));
    complete(f->length == FileBody::npos ? total - f->offset : f->length);
    return nullptr;
  }
  if (auto* p = std::get_if<StreamPtr>(&r.body)) {
    if (!*p) fail("RES-9", "a stream body must not be a null StreamPtr");
    *p = std::make_shared<TrailerCheckStream>(std::move(*p));
    auto count = std::make_shared<StreamCount>(StreamCount{r.status, declared, head_request});
    return [count](std::string_view chunk, bool eof) {
      if (!chunk.empty() && no_body_status(count->status))
        fail("RES-6", str("status ", std::to_string(count->status), " must have an empty body"));
      count->sent += chunk.size();
      if (count->declared && !count->head_request && count->sent > *count->declared)
        check_length(*count->declared, count->sent, false);
      if (eof && count->declared) check_length(*count->declared, count->sent, count->head_request);
      return std::string(chunk);
    };
  }
  fail("RES-8", "Responder::respond() must not be given a delayed body");
}

class LintWriter final : public Writer {
public:
  LintWriter(WriterPtr inner, int status, std::optional<std::uint64_t> declared, bool head_request)
      : inner_(std::move(inner)), status_(status), declared_(declared), head_request_(head_request) {}
  bool write(std::string_view chunk) override {
    {
      std::lock_guard lock(mu_);
      if (closed_) fail("RES-10", "Writer::write() after close()");
      if (!chunk.empty() && no_body_status(status_))
        fail("RES-6", str("status ", std::to_string(status_), " must have an empty body"));
      sent_ += chunk.size();
      if (declared_ && !head_request_ && sent_ > *declared_) check_length(*declared_, sent_, false);
    }
    return inner_->write(chunk);
  }
  void close() override {
    std::uint64_t sent;
    {
      std::lock_guard lock(mu_);
      if (closed_) fail("RES-10", "Writer::close() called twice");
      closed_ = true;
      sent = sent_;
    }
    inner_->close();
    if (declared_) check_length(*declared_, sent, head_request_);
  }
  void set_trailers(Headers trailers) override {
    {
      std::lock_guard lock(mu_);
      if (closed_) fail("RES-15", "Writer::set_trailers() after close(): trailers go before close()");
    }
    check_trailers(trailers);
    inner_->set_trailers(std::move(trailers));
  }

private:
  std::mutex mu_;
  WriterPtr inner_;
  int status_;
  std::optional<std::uint64_t> declared_;
  bool head_request_;
  bool closed_ = false;
  std::uint64_t sent_ = 0;
};

class LintResponder final : public ResponderImpl {
public:
  LintResponder(Responder outer, std::shared_ptr<Exchange> ex) : outer_(std::move(outer)), ex_(std::move(ex)) {}
  void respond(Response r) override {
    claim();
    if (std::holds_alternative<Delayed>(r.body)) fail("RES-8", "Responder::respond() must not be given a delayed body");
    bool head = ex_->head_request;
    Response checked = on_response(std::move(r), [head](Response& res) { return check_response(res, head); });
    outer_.respond(std::move(checked));
  }
  WriterPtr start(int status, Headers headers) override {
    claim();
    auto declared = check_final_head(status, headers);
    WriterPtr w = outer_.start(status, std::move(headers));
    if (!w) fail("RES-10", "the adapter's Responder::start() returned no Writer");
    return std::make_shared<LintWriter>(std::move(w), status, declared, ex_->head_request);
  }

private:
  void claim() {
    std::lock_guard lock(ex_->mu);
    if (ex_->answered) fail("RES-8", "the Responder was already used: respond()/start() may be called once");
    ex_->answered = true;
    ex_->final_started = true;
  }
  Responder outer_;
  std::shared_ptr<Exchange> ex_;
};

class LintInput final : public Input {
public:
  /// `held` is the env value that held `inner`: keeping it keeps an env-owned input alive.
  LintInput(Input& inner, Value held, std::optional<std::uint64_t> length)
      : in_(inner), held_(std::move(held)), length_(length) {}
  std::size_t read(char* buf, std::size_t n) override {
    if (n == 0) fail("INPUT-1", "csgi.input read() asked for 0 bytes (0 is the end-of-input answer)");
    std::size_t r = in_.read(buf, n);
    if (r > n) fail("INPUT-1", "csgi.input read() returned more bytes than asked");
    if (eof_ && r != 0) fail("INPUT-1", "csgi.input read() returned bytes after it had returned 0 (end)");
    if (r == 0) {
      eof_ = true;
      if (length_ && total_ < *length_)
        fail("INPUT-1", str("csgi.input ended after ", std::to_string(total_), " of CONTENT_LENGTH ",
                            std::to_string(*length_), " bytes: a cut body must make read() throw"));
    }
    total_ += r;
    if (length_ && total_ > *length_)
      fail("INPUT-1", str("csgi.input gave more than CONTENT_LENGTH (", std::to_string(*length_), ") bytes"));
    return r;
  }
  bool seekable() const override { return in_.seekable(); }
  void rewind() override {
    in_.rewind();
    total_ = 0;
    eof_ = false;
  }

private:
  Input& in_;
  Value held_;
  std::optional<std::uint64_t> length_;
  std::uint64_t total_ = 0;
  bool eof_ = false;
};

class LintInformational final : public Informational {
public:
  LintInformational(Informational& inner, Value held, std::shared_ptr<Exchange> ex)
      : inner_(inner), held_(std::move(held)), ex_(std::move(ex)) {}
  bool send(int status, const Headers& headers) override {
    if (status < 100 || status > 199 || status == 101)
      fail("EXT-5", str("csgix.informational sends 1xx statuses other than 101, got ", std::to_string(status)));
    check_fields(headers);
    {
      std::lock_guard lock(ex_->mu);
      if (ex_->final_started) fail("EXT-5", "csgix.informational used after the final response was started");
    }
    return inner_.send(status, headers);
  }

private:
  Informational& inner_;
  Value held_;
  std::shared_ptr<Exchange> ex_;
};

class LintHandshake final : public websocket::Handshake {
public:
  LintHandshake(websocket::Handshake& inner, Value held, std::shared_ptr<Exchange> ex)
      : inner_(inner), held_(std::move(held)), ex_(std::move(ex)) {}
  bool take(websocket::Handler handler) override {
    std::lock_guard lock(ex_->mu);
    if (ex_->final_started) fail("EXT-9", "csgix.websocket used after the app returned its response");
    if (ex_->ws_taken) fail("EXT-9", "csgix.websocket's take() called twice for one request");
    ex_->ws_taken = inner_.take(std::move(handler));
    return ex_->ws_taken;
  }
  const std::vector<std::string>& allowed_origins() const override { return inner_.allowed_origins(); }

private:
  websocket::Handshake& inner_;
  Value held_;
  std::shared_ptr<Exchange> ex_;
};

/// EXT-9: a handler taken means a 101 answer, and a WebSocket 101 needs a handler taken.
void check_ws_handshake(const Response& res, const Exchange& ex) {
  bool ws101 = res.status == 101 && iequals(res.headers.get("Upgrade").value_or(""), "websocket");
  if (ex.ws_taken && res.status != 101)
    fail("EXT-9", str("csgix.websocket took a handler but the response is ", std::to_string(res.status),
                      ", not 101 (return what csgi::websocket::accept returned)"));
  if (ws101 && !ex.ws_taken)
    fail("EXT-9", "a 101 with Upgrade: websocket needs csgix.websocket's take() (csgi::websocket::accept)");
}

// HTTP/2 and HTTP/3 (ENV-16, ENV-19): the authority as HTTP_HOST, no field of an HTTP/1 connection. An
// extended CONNECT for a WebSocket is presented as the HTTP/1.1 handshake, Upgrade and all (EXT-11).
void check_framed(const Env& env, std::string_view proto, std::string_view rule) {
  if (env.get(keys::HTTP_HOST).empty()) fail(rule, str("an ", proto, " request must have HTTP_HOST (from :authority)"));
  bool ws = env.contains(keys::x::websocket);
  for (std::string_view k : {"HTTP_CONNECTION", "HTTP_KEEP_ALIVE", "HTTP_PROXY_CONNECTION", "HTTP_TRANSFER_ENCODING",
                             "HTTP_UPGRADE"})
    if (env.contains(k) && !(ws && (k == "HTTP_CONNECTION" || k == "HTTP_UPGRADE")))
      fail(rule, str(k, " must not exist in an ", proto, " request (connection-specific)"));
  if (const Value* v = env.find("HTTP_TE"); v && v->text() != "trailers")
    fail(rule, str("HTTP_TE of an ", proto, " request can only be \"trailers\", got ", quote(v->text())));
}

}  // namespace

LintError::LintError(std::string_view rule, std::string_view detail)
    : std::logic_error(str("[", rule, "] ", detail)), rule_(rule) {}

Lint::Lint(App next) : next_(std::move(next)) {
  if (!next_) throw std::invalid_argument("Lint: the next app is empty");
}

std::span<const std::string_view> Lint::rules() noexcept { return kRules; }

void Lint::check_env(const Env& env) {
  check_keys(env, "ENV-15");
  std::string_view method = need_text(env, keys::REQUEST_METHOD, "ENV-1");
  if (!is_token(method)) fail("ENV-1", str("REQUEST_METHOD must be a non-empty token, got ", quote(method)));

  std::string_view script = need_text(env, keys::SCRIPT_NAME, "ENV-2");
  std::string_view path = need_text(env, keys::PATH_INFO, "ENV-2");
  std::string_view uri = need_text(env, keys::REQUEST_URI, "ENV-6");
  if (script.empty() && path.empty() && uri != "*")
    fail("ENV-2", str("SCRIPT_NAME and PATH_INFO are both empty for REQUEST_URI ", quote(uri),
                      ": the root is PATH_INFO \"/\""));
  if (!script.empty() && script.front() != '/')
    fail("ENV-3", str("SCRIPT_NAME must be empty or start with '/', got ", quote(script)));
  if (!script.empty() && script.back() == '/')
    fail("ENV-3", str("SCRIPT_NAME must not end with '/' (the slash belongs to PATH_INFO), got ", quote(script)));
  if (!path.empty() && path.front() != '/')
    fail("ENV-4", str("PATH_INFO must be empty or start with '/', got ", quote(path)));
  if (path.find('\0') != std::string_view::npos) fail("ENV-4", str("PATH_INFO must not hold NUL, got ", quote(path)));
  if (has_dot_segment(script) || has_dot_segment(path))
    fail("ENV-5", str("SCRIPT_NAME and PATH_INFO must be canonical (no \".\" or \"..\" segment), got ",
                      quote(script), " and ", quote(path)));

  if (uri.empty() || has_ctl(uri, false) || uri.find(' ') != std::string_view::npos)
    fail("ENV-6", str("REQUEST_URI must be the raw request target, got ", quote(uri)));
  if (uri.front() != '/' && uri != "*" && uri.find("://") == std::string_view::npos)
    fail("ENV-6", str("REQUEST_URI must be origin-form, absolute-form or \"*\", got ", quote(uri)));

  std::string_view query = need_text(env, keys::QUERY_STRING, "ENV-7");
  if (has_ctl(query, false) || query.find_first_of(" #") != std::string_view::npos)
    fail("ENV-7", str("QUERY_STRING must be the raw query (no space, '#' or control bytes), got ", quote(query)));

  if (need_text(env, keys::SERVER_NAME, "ENV-8").empty()) fail("ENV-8", "SERVER_NAME must not be empty");
  std::string_view port = need_text(env, keys::SERVER_PORT, "ENV-8");
  if (!is_digits(port)) fail("ENV-8", str("SERVER_PORT must be decimal digits, got ", quote(port)));

  for (const Env::Entry& e : env) {
    if (!e.key.starts_with("HTTP_")) continue;
    std::string_view rest = e.key.substr(5);
    bool ok = !rest.empty();
    for (char c : rest) ok = ok && ((c >= 'A' && c <= 'Z') || is_digit(c) || c == '_');
    if (!ok) fail("ENV-9", str("header key ", quote(e.key), " must be HTTP_ + the name upper-cased, '-' as '_'"));
    if (!e.value.is_text()) fail("ENV-9", str(e.key, " must hold text"));
    if (has_ctl(e.value.text(), true)) fail("ENV-9", str(e.key, " holds a control character: ", quote(e.value.text())));
  }
  if (env.contains("HTTP_PROXY")) fail("ENV-10", "HTTP_PROXY must not be set (the Proxy header is dropped: httpoxy)");

  for (std::string_view bad : {"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"})
    if (env.contains(bad)) fail("ENV-11", str(bad, " must not exist: use CONTENT_", bad.substr(13)));
  if (const Value* v = env.find(keys::CONTENT_LENGTH); v && !(v->is_text() && is_digits(v->text())))
    fail("ENV-11", str("CONTENT_LENGTH must be decimal digits, got ", quote(v->text())));
  if (const Value* v = env.find(keys::CONTENT_TYPE); v && !v->is_text()) fail("ENV-11", "CONTENT_TYPE must be text");

  std::string_view proto = need_text(env, keys::SERVER_PROTOCOL, "ENV-12");
  bool proto_ok = proto.starts_with("HTTP/") &&
                  ((proto.size() == 6 && is_digit(proto[5])) ||
                   (proto.size() == 8 && is_digit(proto[5]) && proto[6] == '.' && is_digit(proto[7])));
  if (!proto_ok) fail("ENV-12", str("SERVER_PROTOCOL must be HTTP/<major>[.<minor>], got ", quote(proto)));
  if (proto == "HTTP/2") check_framed(env, proto, "ENV-16");
  if (proto == "HTTP/3") {
    check_framed(env, proto, "ENV-19");
    if (env.get(keys::url_scheme) != "https" || env.get(keys::HTTPS) != "on")
      fail("ENV-19", "an HTTP/3 request runs on QUIC's TLS: csgi.url_scheme must be \"https\" and HTTPS \"on\"");
  }

  if (const Value* v = env.find(keys::REMOTE_ADDR); v && v->text().empty())
    fail("ENV-13", "REMOTE_ADDR, when present, must not be empty");
  if (const Value* v = env.find(keys::REMOTE_PORT); v && !is_digits(v->text()))
    fail("ENV-13", str("REMOTE_PORT must be decimal digits, got ", quote(v->text())));

  if (need_text(env, keys::version, "CORE-1") != keys::spec_version)
    fail("CORE-1", str("csgi.version must be \"", keys::spec_version, "\", got ", quote(env.get(keys::version))));
  std::string_view scheme = need_text(env, keys::url_scheme, "CORE-2");
  if (scheme != "http" && scheme != "https")
    fail("CORE-2", str("csgi.url_scheme must be \"http\" or \"https\", got ", quote(scheme)));
  if (!env.object<Input>(keys::input))
    fail("CORE-3", "csgi.input must hold a csgi::Input stored as that type (set_object<csgi::Input>)");
  if (!env.object<ErrorStream>(keys::errors))
    fail("CORE-4", "csgi.errors must hold a csgi::ErrorStream stored as that type (set_object<csgi::ErrorStream>)");
  for (std::string_view k : {keys::multithread, keys::multiprocess, keys::run_once, keys::nonblocking})
    need_bool(env, k, "CORE-5");
  need_bool(env, keys::streaming, "CORE-6");

  check_tls_keys(env, scheme);

  if (env.flag(keys::x::input_buffered) && !env.object<Input>(keys::input)->seekable())
    fail("INPUT-2", "csgix.input.buffered is true but csgi.input is not seekable()");
  check_extensions(env);
}

void Lint::check_head(int status, const Headers& headers) { check_final_head(status, headers); }

Response Lint::operator()(Env& env) const {
  check_env(env);
  auto ex = std::make_shared<Exchange>();
  ex->head_request = env.get(keys::REQUEST_METHOD) == "HEAD";

  std::optional<std::uint64_t> length;
  if (std::string_view cl = env.get(keys::CONTENT_LENGTH); !cl.empty() && cl.size() <= 19)
    length = std::stoull(std::string(cl));
  // The wrappers keep the values they replace, so an input or hint object owned by the env stays alive.
  std::shared_ptr<Input> input =
      std::make_shared<LintInput>(*env.object<Input>(keys::input), *env.find(keys::input), length);
  env.set_object<Input>(keys::input, std::move(input));
  if (auto* info = env.object<Informational>(keys::x::informational)) {
    std::shared_ptr<Informational> wrapped =
        std::make_shared<LintInformational>(*info, *env.find(keys::x::informational), ex);
    env.set_object<Informational>(keys::x::informational, std::move(wrapped));
  }
  if (auto* up = env.object<websocket::Handshake>(keys::x::websocket)) {
    std::shared_ptr<websocket::Handshake> wrapped =
        std::make_shared<LintHandshake>(*up, *env.find(keys::x::websocket), ex);
    env.set_object<websocket::Handshake>(keys::x::websocket, std::move(wrapped));
  }

  std::string_view script = env.get(keys::SCRIPT_NAME), path = env.get(keys::PATH_INFO);
  Response res = next_(env);
  if (env.get(keys::SCRIPT_NAME) != script || env.get(keys::PATH_INFO) != path)
    fail("MW-3", str("SCRIPT_NAME/PATH_INFO were ", quote(script), "/", quote(path)) +
                     str(" before the app and ", quote(env.get(keys::SCRIPT_NAME)), "/", quote(env.get(keys::PATH_INFO))) +
                     " after it: whoever changes them must restore them");
  check_keys(env, "MW-5");
  if (const Value* v = env.find(keys::x::harakiri_commit)) {
    if (v->type() != Value::Type::boolean) fail("EXT-1", "csgix.harakiri.commit must be a boolean");
    if (v->truthy() && !env.flag(keys::x::harakiri))
      fail("EXT-3", "csgix.harakiri.commit set although the adapter does not offer csgix.harakiri");
  }

  {
    std::lock_guard lock(ex->mu);
    check_ws_handshake(res, *ex);
  }
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    if (!*d) fail("RES-8", "a delayed response needs a callable");
    if (!env.flag(keys::streaming)) fail("CORE-6", "a delayed response needs csgi.streaming to be true");
    Delayed inner = std::move(*d);
    res.body = Delayed([inner = std::move(inner), ex](Responder outer) {
      inner(Responder(std::make_shared<LintResponder>(std::move(outer), ex)));
    });
    return res;
  }
  {
    std::lock_guard lock(ex->mu);
    ex->final_started = true;
  }
  bool head = ex->head_request;
  return on_response(std::move(res), [head](Response& r) { return check_response(r, head); });
}

}  // namespace csgi
