// Python → C++: an ASGI application as a csgi::App, without the GIL on the server's threads.
//
// The App answers every request with a delayed response whose Responder goes, with the env, into an
// AsgiQueue: the server's thread never touches Python. The queue wakes the event loop thread of the
// process through an eventfd (written only when the loop is not already due to drain it), and the loop
// (csgi/_asgi_host.py) takes the requests in batches: take() makes one AsgiCall per request, its scope
// built here from the env (interned keys, a copied template of the constant entries, the last scope's
// server tuple and client host reused while unchanged). AsgiCall's
// receive() and send() are C: the request body message, http.response.start and a complete
// http.response.body are answered at once with a ready awaitable (no coroutine, no future); what has to
// wait (a second receive(), a streamed body, errors) goes to the Python subclass's _receive_slow() and
// _send_slow(). A complete response goes through the Responder from the loop thread, at the end of the
// loop's pass with the others of that pass (one wake-up of the io thread for the lot); a streamed one
// through a Writer whose writes run on a pool thread, since write() waits under back-pressure; so does one
// whose http.response.start announced trailers, which end it through Writer::set_trailers() (the scope
// offers the http.response.trailers extension).
// The request body is read by the App itself, before it returns (the adapter's csgi.input is not
// readable once a delayed response was returned), on the server's app thread, within the server's
// body limit; the env stays valid until the response is answered or its writer closed (APP-4).
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "asgi_websocket.hpp"
#include "awaitable.hpp"
#include "common.hpp"
#include "csgi/core/app_failure.hpp"
#include "csgi/core/keys.hpp"
#include "gil.hpp"
#include "sched_policy.hpp"
#include "session_view.hpp"
#include "structmember.h"

namespace csgi::python {
namespace {

/// Runs f(); None, or the C++ exception as the Python error.
template <class F>
PyObject* guarded_none(F&& f) noexcept {
  try {
    f();
    Py_RETURN_NONE;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// Complete responses of the loop's current pass, answered together by one callback that the loop runs
/// next (call_soon): their posts to the io thread come in one burst, which it mostly takes in one wake-up
/// rather than one per response. One per loop thread (each loop runs on its own), used with the GIL held.
struct Outbox {
  std::vector<std::pair<Responder, Response>> items;
};
thread_local Outbox t_outbox;
/// Responses held at most: a pass of slow requests answers the first ones before it ends.
constexpr std::size_t outbox_limit = 16;
PyObject* g_flush = nullptr;  // _flush_responses: answers this thread's outbox

void flush_outbox() {
  std::vector<std::pair<Responder, Response>> items;
  items.swap(t_outbox.items);
  for (auto& [res, r] : items) res.respond(std::move(r));
  items.clear();
  if (t_outbox.items.empty()) t_outbox.items.swap(items);  // keeps the capacity for the next pass
}

PyObject* flush_responses(PyObject*, PyObject*) {
  return guarded_none(flush_outbox);
}

/// Answers `r` through `res` at the end of the loop's pass (at once without a loop, or when the loop
/// cannot take the callback).
void outbox_push(Responder res, Response r, PyObject* loop) {
  if (!loop || !g_flush) {
    res.respond(std::move(r));
    return;
  }
  t_outbox.items.emplace_back(std::move(res), std::move(r));
  if (t_outbox.items.size() >= outbox_limit) {
    flush_outbox();  // a long pass: the first of them waited long enough (the callback finds none left)
    return;
  }
  if (t_outbox.items.size() > 1) return;
  static PyObject* call_soon = PyUnicode_InternFromString("call_soon");
  PyObject* h = call_soon ? PyObject_CallMethodOneArg(loop, call_soon, g_flush) : nullptr;
  if (h) {
    Py_DECREF(h);
    return;
  }
  PyErr_Clear();  // a closed loop: answer now
  flush_outbox();
}

/// One request on its way through the ASGI app: used on the loop thread, but for write(), which runs on a
/// pool thread (the writer is shared under a lock with the loop's close() and fail()).
class AsgiRequest {
public:
  AsgiRequest(Env& env, std::string body) : env_(&env), body_(std::move(body)) {}
  void set_responder(Responder r) { responder_ = std::move(r); }

  /// The scope of the request; `state` (or null) is copied into it, and a csgix.session view behind
  /// csgi.mw.sessions. Needs the GIL.
  PyObject* scope(PyObject* state) const;
  /// The request body (once; read by the App before the request was queued).
  PyObject* take_body() {
    PyObject* b = PyBytes_FromStringAndSize(body_.data(), static_cast<Py_ssize_t>(body_.size()));
    std::string().swap(body_);
    return b;
  }
  /// A complete response. Posting it to the io thread only takes the mailbox's lock: the GIL is kept.
  void respond(int status, PyObject* headers, PyObject* body) {
    Response r;
    r.status = status;
    r.headers = to_headers(headers);
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(body, &data, &len) < 0) throw_python_error();
    r.body = std::string(data, static_cast<std::size_t>(len));
    Responder res = std::move(responder_);
    if (!res) throw std::logic_error("the response was answered already");
    answered();
    outbox_push(std::move(res), std::move(r), loop_);
  }
  void set_loop(PyObject* loop) noexcept { loop_ = loop; }
  void start(int status, PyObject* headers) {
    Headers h = to_headers(headers);
    Responder res = std::move(responder_);
    if (!res) throw std::logic_error("the response was answered already");
    ReleaseGil nogil;
    WriterPtr w = res.start(status, std::move(h));
    std::lock_guard lock(writer_mu_);
    writer_ = std::move(w);
  }
  /// False once the client has gone. May wait (back-pressure): called on a pool thread.
  bool write(PyObject* chunk) {
    WriterPtr w = writer();
    if (!w) return false;
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(chunk, &data, &len) < 0) throw_python_error();
    ReleaseGil nogil;
    return w->write(std::string_view(data, static_cast<std::size_t>(len)));
  }
  /// The trailer fields of a streamed response (before close()); the adapter drops what it cannot send.
  void set_trailers(PyObject* fields) {
    Headers h = to_headers(fields);
    if (WriterPtr w = writer()) w->set_trailers(std::move(h));
  }
  void close() {
    answered();
    if (WriterPtr w = take_writer()) {
      ReleaseGil nogil;
      w->close();
    }
  }
  /// Ends the response as failed: a 500 before it started, an aborted body after (ADP-4). `reason` is
  /// logged in the adapters' one format (core/app_failure.hpp).
  void fail(const std::string& reason) {
    log(env_ ? app_failure_line(*env_, responder_ ? 500 : 0, reason) : "csgi: " + reason);
    if (responder_) {
      Responder res = std::move(responder_);
      answered();
      ReleaseGil nogil;
      res.respond(Response::error(500));
      return;
    }
    answered();
    WriterPtr w = take_writer();
    ReleaseGil nogil;
    w.reset();  // dropped without close() (the last reference once a write in flight returns): failed
  }
  void log(const std::string& message) {
    if (env_) {
      ReleaseGil nogil;
      env_->errors().write(message);
    } else {
      stderr_stream().write(message);
    }
  }

private:
  Env& env() const {
    if (!env_) throw std::logic_error("the request is over");
    return *env_;
  }
  void answered() noexcept { env_ = nullptr; }
  // The writer is taken by the loop thread (close, fail) while a pool thread may be writing.
  WriterPtr writer() {
    std::lock_guard lock(writer_mu_);
    return writer_;
  }
  WriterPtr take_writer() {
    std::lock_guard lock(writer_mu_);
    return std::move(writer_);
  }
  static Headers to_headers(PyObject* list) {
    Headers h;
    PyObject* seq = PySequence_Fast(list, "ASGI headers are a sequence of (name, value) pairs");
    if (!seq) throw_python_error();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    h.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* pair = items[i];
      PyObject *name = nullptr, *value = nullptr;
      if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
        name = PyTuple_GET_ITEM(pair, 0);
        value = PyTuple_GET_ITEM(pair, 1);
      } else if (PyList_CheckExact(pair) && PyList_GET_SIZE(pair) == 2) {
        name = PyList_GET_ITEM(pair, 0);
        value = PyList_GET_ITEM(pair, 1);
      }
      if (!name) {
        Py_DECREF(seq);
        throw py::value_error("an ASGI header is a (name, value) pair of bytes");
      }
      if (!PyBytes_Check(name) || !PyBytes_Check(value)) {
        Py_DECREF(seq);
        throw py::type_error("ASGI header names and values are bytes");
      }
      h.add(std::string(PyBytes_AS_STRING(name), static_cast<std::size_t>(PyBytes_GET_SIZE(name))),
            std::string(PyBytes_AS_STRING(value), static_cast<std::size_t>(PyBytes_GET_SIZE(value))));
    }
    Py_DECREF(seq);
    return h;
  }

  Env* env_;
  PyObject* loop_ = nullptr;  // borrowed from the host
  std::string body_;
  Responder responder_;
  std::mutex writer_mu_;
  WriterPtr writer_;
};

// ------------------------------------------------------------------------------------------------ scope

/// Hashes a std::string key by its bytes, so that a map keyed by std::string is searched by string_view.
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// A header of the scope: its name as bytes, and the (name, value) tuple of the last request that sent
/// it, reused while the value is the same (a tuple of bytes is immutable, so an app cannot tell).
struct HeaderSlot {
  PyObject* name = nullptr;   // b"x-foo"; owned
  PyObject* tuple = nullptr;  // (name, value) of `last`; owned, or null
  std::string last;
};

/// The object made from the last text seen in one place of the scope, reused while the text is the same.
struct LastObject {
  std::string text;
  PyObject* obj = nullptr;  // owned, or null
};

/// The objects every scope shares, made once per process (kept for its life: no destructor runs after
/// the interpreter's finalisation).
struct ScopeParts {
  PyObject* k_type;
  PyObject* k_asgi;
  PyObject* k_http_version;
  PyObject* k_method;
  PyObject* k_scheme;
  PyObject* k_path;
  PyObject* k_raw_path;
  PyObject* k_query_string;
  PyObject* k_root_path;
  PyObject* k_headers;
  PyObject* k_server;
  PyObject* k_client;
  PyObject* k_state;
  PyObject* k_body;
  PyObject* k_more_body;
  PyObject* k_status;
  PyObject* k_trailers;
  PyObject* k_extensions;
  PyObject* k_session;
  PyObject* http_response_trailers;
  PyObject* http_response_start;
  PyObject* http_response_body;
  PyObject* scope_template;    // type, asgi, http_version 1.1, scheme http, root_path ""
  PyObject* request_template;  // {"type": "http.request", "body": b"", "more_body": False}
  PyObject* content_type;      // b"content-type"
  PyObject* content_length;    // b"content-length"
  std::unordered_map<std::string, HeaderSlot, TextHash, std::equal_to<>> headers;  // by env key "HTTP_X_FOO"
  std::vector<std::pair<std::string, PyObject*>> methods;
  // The last scope's `server` tuple and `client` host, reused while the next request has the same text
  // (tuples and str are immutable): one listening address, and mostly one client host, per process.
  std::string server_name, server_port, client_host;
  PyObject* server = nullptr;
  PyObject* client_host_str = nullptr;
  // The last `path`, `raw_path` and `query_string`, reused alike: a loop's batch is mostly one route.
  LastObject path, raw_path, query;
};

ScopeParts* g_parts = nullptr;

PyObject* interned(const char* s) {
  PyObject* o = PyUnicode_InternFromString(s);
  if (!o) throw_python_error();
  return o;
}

ScopeParts& parts() {
  if (g_parts) return *g_parts;
  auto* p = new ScopeParts();
  p->k_type = interned("type");
  p->k_asgi = interned("asgi");
  p->k_http_version = interned("http_version");
  p->k_method = interned("method");
  p->k_scheme = interned("scheme");
  p->k_path = interned("path");
  p->k_raw_path = interned("raw_path");
  p->k_query_string = interned("query_string");
  p->k_root_path = interned("root_path");
  p->k_headers = interned("headers");
  p->k_server = interned("server");
  p->k_client = interned("client");
  p->k_state = interned("state");
  p->k_body = interned("body");
  p->k_more_body = interned("more_body");
  p->k_status = interned("status");
  p->k_trailers = interned("trailers");
  p->k_extensions = interned("extensions");
  p->k_session = interned("csgix.session");
  p->http_response_trailers = interned("http.response.trailers");
  p->http_response_start = interned("http.response.start");
  p->http_response_body = interned("http.response.body");
  py::dict asgi;
  asgi["version"] = "3.0";
  asgi["spec_version"] = "2.3";
  py::dict scope;
  scope[p->k_type] = py::reinterpret_steal<py::object>(interned("http"));
  scope[p->k_asgi] = asgi;
  scope[p->k_http_version] = py::str("1.1");
  scope[p->k_scheme] = py::str("http");
  scope[p->k_root_path] = py::str("");
  // The keys set per request, present in the template so that its copies never grow.
  for (PyObject* k : {p->k_method, p->k_path, p->k_raw_path, p->k_query_string, p->k_headers, p->k_server})
    scope[k] = py::none();
  p->scope_template = scope.release().ptr();
  py::dict request;
  request[p->k_type] = py::reinterpret_steal<py::object>(interned("http.request"));
  request[p->k_body] = py::bytes("");
  request[p->k_more_body] = py::bool_(false);
  p->request_template = request.release().ptr();
  p->content_type = py::bytes("content-type").release().ptr();
  p->content_length = py::bytes("content-length").release().ptr();
  for (const char* m : {"GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"})
    p->methods.emplace_back(m, interned(m));
  g_parts = p;
  return *p;
}

struct Ref {  // owns one reference
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {
    if (!o) throw_python_error();
  }
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  PyObject* release() noexcept { return std::exchange(p, nullptr); }
};

/// Stores `value` (a new reference, null: the error set) under the interned `key`.
void put(PyObject* dict, PyObject* key, PyObject* value) {
  Ref v(value);
  if (PyDict_SetItem(dict, key, v.p) < 0) throw_python_error();
}

PyObject* bytes_of(std::string_view s) { return PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())); }

bool is_ascii(std::string_view s) noexcept {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

/// A str of UTF-8 text (invalid sequences replaced); ASCII is copied as is.
PyObject* utf8_str(std::string_view s) {
  if (is_ascii(s)) {
    PyObject* o = PyUnicode_New(static_cast<Py_ssize_t>(s.size()), 127);
    if (o && !s.empty()) std::memcpy(PyUnicode_1BYTE_DATA(o), s.data(), s.size());
    return o;
  }
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
}

PyObject* method_str(ScopeParts& p, std::string_view m) {
  for (auto& [name, obj] : p.methods)
    if (name == m) return Py_NewRef(obj);
  return utf8_str(m);
}

/// A tuple of two new references (null: the Python error set, thrown).
PyObject* pair(PyObject* a, PyObject* b) {
  PyObject* t = a && b ? PyTuple_New(2) : nullptr;
  if (!t) {
    Py_XDECREF(a);
    Py_XDECREF(b);
    throw_python_error();
  }
  PyTuple_SET_ITEM(t, 0, a);
  PyTuple_SET_ITEM(t, 1, b);
  return t;
}

/// Header values up to this size are kept for reuse by the next request.
constexpr std::size_t kMaxKeptValue = 256;
/// Distinct header names kept (past it, a name a client makes up is a fresh object per request).
constexpr std::size_t kMaxKeptNames = 512;

/// The (b"x-forwarded-for", value) tuple of the env entry "HTTP_X_FORWARDED_FOR" (a new reference): the
/// last request's while its value is the same.
PyObject* header_pair(ScopeParts& p, std::string_view key, std::string_view value) {
  auto it = p.headers.find(key);
  if (it != p.headers.end() && it->second.tuple && it->second.last == value) return Py_NewRef(it->second.tuple);
  if (it == p.headers.end()) {
    std::string name(key.substr(5));
    for (char& c : name) c = c == '_' ? '-' : static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    PyObject* b = bytes_of(name);
    if (!b) throw_python_error();
    if (p.headers.size() >= kMaxKeptNames) return pair(b, bytes_of(value));
    it = p.headers.emplace(std::string(key), HeaderSlot{b, nullptr, {}}).first;
  }
  HeaderSlot& slot = it->second;
  PyObject* t = pair(Py_NewRef(slot.name), bytes_of(value));
  if (value.size() <= kMaxKeptValue) {
    Py_XSETREF(slot.tuple, Py_NewRef(t));
    slot.last.assign(value);
  }
  return t;
}

/// make(text) as a new reference: the last one made in this place while the text is the same.
PyObject* reuse(LastObject& last, std::string_view text, PyObject* (*make)(std::string_view)) {
  if (last.obj && last.text == text) return Py_NewRef(last.obj);
  PyObject* o = make(text);
  if (o && text.size() <= kMaxKeptValue) {
    Py_XSETREF(last.obj, Py_NewRef(o));
    last.text.assign(text);
  }
  return o;
}

int port_of(std::string_view s);

/// (SERVER_NAME, SERVER_PORT as an int): the last request's tuple when its text is the same.
PyObject* server_pair(ScopeParts& p, std::string_view name, std::string_view port) {
  if (!p.server || name != p.server_name || port != p.server_port) {
    PyObject* t = pair(utf8_str(name), PyLong_FromLong(port_of(port)));
    Py_XSETREF(p.server, t);
    p.server_name.assign(name);
    p.server_port.assign(port);
  }
  return Py_NewRef(p.server);
}

/// The REMOTE_ADDR str: the last request's when its text is the same.
PyObject* client_host(ScopeParts& p, std::string_view addr) {
  if (!p.client_host_str || addr != p.client_host) {
    PyObject* h = utf8_str(addr);
    if (!h) throw_python_error();
    Py_XSETREF(p.client_host_str, h);
    p.client_host.assign(addr);
  }
  return Py_NewRef(p.client_host_str);
}

int port_of(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

PyObject* headers_list(ScopeParts& p, const Env& e) {
  Ref headers(PyList_New(0));
  for (const Env::Entry& entry : e) {
    std::string_view k = entry.key;
    if (!k.starts_with("HTTP_") || !entry.value.is_text() || e.find(k) != &entry.value) continue;
    Ref t(header_pair(p, k, entry.value.text()));
    if (PyList_Append(headers.p, t.p) < 0) throw_python_error();
  }
  for (auto [key, name] : {std::pair{keys::CONTENT_TYPE, p.content_type}, std::pair{keys::CONTENT_LENGTH, p.content_length}}) {
    std::string_view v = e.get(key);
    if (v.empty()) continue;
    Ref t(pair(Py_NewRef(name), bytes_of(v)));
    if (PyList_Append(headers.p, t.p) < 0) throw_python_error();
  }
  return headers.release();
}

/// A new http scope dict from the env (with a copy of `state` unless it is null or None).
PyObject* http_scope(const Env& e, PyObject* state);

/// {"http.response.trailers": {}}: the extensions an http scope offers (a new dict each time: the app may
/// change its own).
PyObject* http_extensions(ScopeParts& p) {
  Ref ext(PyDict_New());
  put(ext.p, p.http_response_trailers, PyDict_New());
  return ext.release();
}

PyObject* AsgiRequest::scope(PyObject* state) const {
  Ref s(http_scope(env(), state));
  ScopeParts& p = parts();
  put(s.p, p.k_extensions, http_extensions(p));
  if (env().contains(keys::x::session)) put(s.p, p.k_session, session_view(env()).release().ptr());
  return s.release();
}

PyObject* http_scope(const Env& e, PyObject* state) {
  ScopeParts& p = parts();
  Ref s(PyDict_Copy(p.scope_template));
  std::string_view proto = e.get(keys::SERVER_PROTOCOL);
  if (proto != "HTTP/1.1") put(s.p, p.k_http_version, utf8_str(proto.starts_with("HTTP/") ? proto.substr(5) : "1.1"));
  put(s.p, p.k_method, method_str(p, e.get(keys::REQUEST_METHOD)));
  if (std::string_view scheme = e.get(keys::url_scheme, "http"); scheme != "http") put(s.p, p.k_scheme, utf8_str(scheme));
  std::string_view path = e.get(keys::PATH_INFO);
  put(s.p, p.k_path, reuse(p.path, path.empty() ? std::string_view("/") : path, utf8_str));
  std::string_view uri = e.get(keys::REQUEST_URI);
  put(s.p, p.k_raw_path, reuse(p.raw_path, uri.substr(0, uri.find('?')), bytes_of));
  put(s.p, p.k_query_string, reuse(p.query, e.get(keys::QUERY_STRING), bytes_of));
  if (std::string_view root = e.get(keys::SCRIPT_NAME); !root.empty()) put(s.p, p.k_root_path, utf8_str(root));
  put(s.p, p.k_headers, headers_list(p, e));
  put(s.p, p.k_server, server_pair(p, e.get(keys::SERVER_NAME), e.get(keys::SERVER_PORT)));
  if (std::string_view addr = e.get(keys::REMOTE_ADDR); !addr.empty())
    put(s.p, p.k_client, pair(client_host(p, addr), PyLong_FromLong(port_of(e.get(keys::REMOTE_PORT)))));
  if (state && state != Py_None) put(s.p, p.k_state, PyDict_Copy(state));
  return s.release();
}

/// The request body, read whole. With a Content-Length, into one buffer of that size filled in place (no
/// growing copies; the first allocation at most 1 MiB, doubled as data comes, so a false length costs
/// nothing); else as it comes.
std::string read_body(Env& env) {
  std::string_view cl = env.get(keys::CONTENT_LENGTH);
  bool coded = env.contains("HTTP_TRANSFER_ENCODING");
  if ((cl.empty() || cl == "0") && !coded) return {};
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), n);
  if (coded || ec != std::errc() || end != cl.data() + cl.size()) return env.input().read_all();
  std::string body(static_cast<std::size_t>(std::min<std::uint64_t>(n, std::uint64_t{1} << 20)), '\0');
  std::size_t got = 0;
  for (;;) {
    std::size_t r = env.input().read(body.data() + got, body.size() - got);
    if (r == 0) break;
    got += r;
    if (got == body.size()) {
      if (got >= n) break;
      body.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, std::uint64_t{body.size()} * 2)));
    }
  }
  body.resize(got);
  return body;
}

/// Requests waiting for the event loop (loop_queue.hpp).
class AsgiQueue : public LoopQueue<AsgiRequest> {};


// ----------------------------------------------------------------------------------------------- AsgiCall

/// csgi._csgi.AsgiCall: one request on the loop, subclassed in Python by csgi._asgi_host._Call (which
/// adds run() and the slow paths). Standard layout: the flags are members Python reads and writes.
struct CallObject {
  PyObject_HEAD
  PyObject* host;     // the AsgiHost
  PyObject* scope;
  PyObject* headers;  // of http.response.start
  PyObject* ended;    // a future once a second receive() waits for the end of the exchange
  PyObject* trailer_fields;  // the http.response.trailers headers received so far (a list), or null
  PyObject* session;  // scope["csgix.session"] until the response starts, or null
  int status;
  char body_given;    // the http.request message went to the app
  char started;       // http.response.start received
  char streaming;     // the head is out, the body follows through the writer
  char finished;      // the response is complete (or failed)
  char gone;          // the client left (a write failed)
  char trailers;      // http.response.start said trailers: the body goes through the writer, trailers follow
  char body_ended;    // the last http.response.body of a response with trailers was written
  alignas(std::shared_ptr<AsgiRequest>) unsigned char req_storage[sizeof(std::shared_ptr<AsgiRequest>)];
};

std::shared_ptr<AsgiRequest>& req_of(PyObject* self) {
  return *std::launder(reinterpret_cast<std::shared_ptr<AsgiRequest>*>(reinterpret_cast<CallObject*>(self)->req_storage));
}

CallObject* as_call(PyObject* self) { return reinterpret_cast<CallObject*>(self); }

int call_traverse(PyObject* self, visitproc visit, void* arg) {
  CallObject* c = as_call(self);
  Py_VISIT(c->host);
  Py_VISIT(c->scope);
  Py_VISIT(c->headers);
  Py_VISIT(c->ended);
  Py_VISIT(c->trailer_fields);
  Py_VISIT(c->session);
  return 0;
}

/// Ends scope["csgix.session"]: csgi.mw.sessions saves the session with the response's head, so the app
/// may change it until it sends http.response.start (or fails); then the view raises RuntimeError. Called
/// for that message, and again where the head is handed to the Responder (a start message that is not a
/// plain dict is seen only there) and where the call fails or is dropped.
void end_session(CallObject* c) noexcept {
  if (!c->session) return;
  end_session_view(c->session);
  Py_CLEAR(c->session);
}

int call_clear(PyObject* self) {
  CallObject* c = as_call(self);
  end_session(c);
  Py_CLEAR(c->host);
  Py_CLEAR(c->scope);
  Py_CLEAR(c->headers);
  Py_CLEAR(c->ended);
  Py_CLEAR(c->trailer_fields);
  return 0;
}

void call_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  call_clear(self);
  req_of(self).~shared_ptr();  // an unanswered Responder answers 500 (no Python involved)
  Py_TYPE(self)->tp_free(self);
}

/// Runs f() returning a new reference; a C++ exception becomes the Python error.
template <class F>
PyObject* guarded(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

AsgiRequest& request(PyObject* self) {
  auto& r = req_of(self);
  if (!r) throw std::logic_error("csgi: AsgiCall without a request");
  return *r;
}

bool same_str(PyObject* a, PyObject* b) noexcept {
  if (a == b) return true;
  if (!PyUnicode_CheckExact(a) || PyUnicode_KIND(a) != PyUnicode_1BYTE_KIND) return false;
  Py_ssize_t n = PyUnicode_GET_LENGTH(a);
  return n == PyUnicode_GET_LENGTH(b) && std::memcmp(PyUnicode_1BYTE_DATA(a), PyUnicode_1BYTE_DATA(b), static_cast<std::size_t>(n)) == 0;
}

PyObject* call_method(PyObject* self, const char* name, PyObject* arg = nullptr) {
  PyObject* n = PyUnicode_InternFromString(name);
  if (!n) return nullptr;
  PyObject* r = arg ? PyObject_CallMethodOneArg(self, n, arg) : PyObject_CallMethodNoArgs(self, n);
  Py_DECREF(n);
  return r;
}

/// After the response ended: wakes a receive() waiting for the end of the exchange.
bool ended(PyObject* self) {
  CallObject* c = as_call(self);
  if (!c->ended || c->ended == Py_None) return true;
  PyObject* r = call_method(self, "end");
  Py_XDECREF(r);
  return r != nullptr;
}

/// receive(): the request body at once, in one http.request message; then _receive_slow().
PyObject* call_receive(PyObject* self, PyObject*) {
  CallObject* c = as_call(self);
  if (c->body_given) return call_method(self, "_receive_slow");
  return guarded([&]() -> PyObject* {
    ScopeParts& p = parts();
    c->body_given = 1;
    Ref msg(PyDict_Copy(p.request_template));
    put(msg.p, p.k_body, request(self).take_body());
    return ready(msg.p);
  });
}

/// send(): http.response.start and a complete http.response.body answered at once; the rest (a
/// streamed body, a message out of order) by _send_slow().
PyObject* call_send(PyObject* self, PyObject* message) {
  CallObject* c = as_call(self);
  ScopeParts& p = parts();
  PyObject* type = PyDict_CheckExact(message) ? PyDict_GetItemWithError(message, p.k_type) : nullptr;
  if (PyErr_Occurred()) return nullptr;
  if (type && same_str(type, p.http_response_start)) end_session(c);
  if (type && !c->started && same_str(type, p.http_response_start)) {
    PyObject* status = PyDict_GetItemWithError(message, p.k_status);
    PyObject* headers = status ? PyDict_GetItemWithError(message, p.k_headers) : nullptr;
    PyObject* trailers = status ? PyDict_GetItemWithError(message, p.k_trailers) : nullptr;
    if (PyErr_Occurred()) return nullptr;
    if (status && PyLong_CheckExact(status) && (!trailers || trailers == Py_False)) {
      long st = PyLong_AsLong(status);
      if (st == -1 && PyErr_Occurred()) return nullptr;
      c->started = 1;
      c->status = static_cast<int>(st);
      Py_XSETREF(c->headers, headers ? Py_NewRef(headers) : PyTuple_New(0));
      return ready_none();
    }
  } else if (type && c->started && !c->trailers && !c->streaming && !c->finished && !c->gone &&
             same_str(type, p.http_response_body)) {
    PyObject* body = PyDict_GetItemWithError(message, p.k_body);
    PyObject* more = PyDict_GetItemWithError(message, p.k_more_body);
    if (PyErr_Occurred()) return nullptr;
    if ((!body || PyBytes_CheckExact(body)) && (!more || more == Py_False)) {
      c->finished = 1;
      return guarded([&]() -> PyObject* {
        Ref content(body ? Py_NewRef(body) : PyBytes_FromStringAndSize(nullptr, 0));
        request(self).respond(c->status, c->headers ? c->headers : Py_None, content.p);
        if (!ended(self)) throw_python_error();
        return ready_none();
      });
    }
  }
  return call_method(self, "_send_slow", message);
}

PyObject* call_take_body(PyObject* self, PyObject*) {
  return guarded([&] { return request(self).take_body(); });
}

PyObject* call_respond(PyObject* self, PyObject* body) {
  return guarded([&]() -> PyObject* {
    CallObject* c = as_call(self);
    end_session(c);
    request(self).respond(c->status, c->headers ? c->headers : Py_None, body);
    Py_RETURN_NONE;
  });
}

PyObject* call_start(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    CallObject* c = as_call(self);
    end_session(c);
    request(self).start(c->status, c->headers ? c->headers : Py_None);
    Py_RETURN_NONE;
  });
}

/// On a pool thread: a chunk of a streamed body; False once the client has gone.
PyObject* call_write(PyObject* self, PyObject* chunk) {
  return guarded([&]() -> PyObject* {
    std::shared_ptr<AsgiRequest> r = req_of(self);  // kept while the GIL is released
    if (!r) throw std::logic_error("csgi: AsgiCall without a request");
    return PyBool_FromLong(r->write(chunk));
  });
}

PyObject* call_set_trailers(PyObject* self, PyObject* fields) {
  return guarded([&]() -> PyObject* {
    request(self).set_trailers(fields);
    Py_RETURN_NONE;
  });
}

PyObject* call_close(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    request(self).close();
    Py_RETURN_NONE;
  });
}

std::string text_of(PyObject* s) {
  Py_ssize_t n = 0;
  const char* c = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : nullptr;
  if (!c) throw_python_error();
  return std::string(c, static_cast<std::size_t>(n));
}

PyObject* call_fail(PyObject* self, PyObject* message) {
  return guarded([&]() -> PyObject* {
    end_session(as_call(self));
    request(self).fail(text_of(message));
    Py_RETURN_NONE;
  });
}

PyObject* call_log(PyObject* self, PyObject* message) {
  return guarded([&]() -> PyObject* {
    request(self).log(text_of(message));
    Py_RETURN_NONE;
  });
}

PyMethodDef call_methods[] = {
    {"receive", call_receive, METH_NOARGS, "ASGI receive(): an awaitable of the next message."},
    {"send", call_send, METH_O, "ASGI send(message): an awaitable."},
    {"_take_body", call_take_body, METH_NOARGS, "The request body (once)."},
    {"_respond", call_respond, METH_O, "A complete response: the status and headers received, this body."},
    {"_start", call_start, METH_NOARGS, "Sends the head of a streamed response."},
    {"_write", call_write, METH_O, "Writes a chunk (waits under back-pressure; on a pool thread)."},
    {"_set_trailers", call_set_trailers, METH_O, "The trailer fields of a streamed response (before _close())."},
    {"_close", call_close, METH_NOARGS, "Ends a streamed response."},
    {"_fail", call_fail, METH_O, "Logs the message and ends the response as failed."},
    {"_log", call_log, METH_O, "Writes the message to csgi.errors."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef call_members[] = {
    {"host", T_OBJECT, offsetof(CallObject, host), READONLY, nullptr},
    {"scope", T_OBJECT, offsetof(CallObject, scope), READONLY, nullptr},
    {"headers", T_OBJECT, offsetof(CallObject, headers), 0, nullptr},
    {"ended", T_OBJECT, offsetof(CallObject, ended), 0, nullptr},
    {"trailer_fields", T_OBJECT, offsetof(CallObject, trailer_fields), 0, nullptr},
    {"status", T_INT, offsetof(CallObject, status), 0, nullptr},
    {"body_given", T_BOOL, offsetof(CallObject, body_given), 0, nullptr},
    {"started", T_BOOL, offsetof(CallObject, started), 0, nullptr},
    {"streaming", T_BOOL, offsetof(CallObject, streaming), 0, nullptr},
    {"finished", T_BOOL, offsetof(CallObject, finished), 0, nullptr},
    {"gone", T_BOOL, offsetof(CallObject, gone), 0, nullptr},
    {"trailers", T_BOOL, offsetof(CallObject, trailers), 0, nullptr},
    {"body_ended", T_BOOL, offsetof(CallObject, body_ended), 0, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyTypeObject call_type = [] {
  PyTypeObject t{};  // zeroed; PyType_Ready sets the rest
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
  t.tp_name = "csgi._csgi.AsgiCall";
  t.tp_basicsize = sizeof(CallObject);
  t.tp_dealloc = call_dealloc;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  t.tp_doc = "One request of an ASGI app served by csgi: receive() and send() over its Responder.";
  t.tp_traverse = call_traverse;
  t.tp_clear = call_clear;
  t.tp_methods = call_methods;
  t.tp_members = call_members;
  return t;
}();

/// The waiting requests as instances of `type` (an AsgiCall subclass), each with its scope; a request
/// whose scope cannot be built is answered 500 here.
PyObject* take_calls(AsgiQueue& q, PyObject* type, PyObject* host, PyObject* state) {
  if (!PyType_Check(type) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), &call_type))
    throw py::type_error("take() needs a subclass of AsgiCall");
  auto* t = reinterpret_cast<PyTypeObject*>(type);
  Ref list(PyList_New(0));
  Ref loop(PyObject_GetAttrString(host, "loop"));
  for (auto& req : q.take()) {
    req->set_loop(loop.p == Py_None ? nullptr : loop.p);
    PyObject* scope = nullptr;
    try {
      scope = req->scope(state);
    } catch (...) {
      set_python_error();
      req->fail("cannot build the ASGI scope:\n" + take_python_error_text());
      continue;
    }
    Ref s(scope);
    Ref call(t->tp_alloc(t, 0));
    CallObject* c = as_call(call.p);
    new (c->req_storage) std::shared_ptr<AsgiRequest>(std::move(req));
    c->host = Py_NewRef(host);
    c->scope = s.release();
    c->status = 200;
    c->session = Py_XNewRef(PyDict_GetItemWithError(c->scope, parts().k_session));
    if (!c->session && PyErr_Occurred()) throw_python_error();
    if (PyList_Append(list.p, call.p) < 0) throw_python_error();
  }
  return list.release();
}

}  // namespace

py::dict asgi_http_scope(const Env& env) { return py::reinterpret_steal<py::dict>(http_scope(env, nullptr)); }

void bind_from_asgi(py::module_& m) {
  if (PyType_Ready(&call_type) < 0 || !init_ready_type(m.ptr())) throw_python_error();
  Py_INCREF(&call_type);
  if (PyModule_AddObject(m.ptr(), "AsgiCall", reinterpret_cast<PyObject*>(&call_type)) < 0) {
    Py_DECREF(&call_type);
    throw_python_error();
  }
  parts();
  static PyMethodDef flush_def = {"_flush_responses", flush_responses, METH_NOARGS, "Answers the complete responses of the loop's last pass."};
  g_flush = PyCFunction_New(&flush_def, nullptr);
  if (!g_flush || PyModule_AddObject(m.ptr(), "_flush_responses", Py_NewRef(g_flush)) < 0) throw_python_error();
  m.def(
      "_batch_thread", [] { return batch_this_thread(); },
      "Puts the calling thread (the event loop's) under SCHED_BATCH when it runs under SCHED_OTHER "
      "(sched_policy.hpp); the threads it starts inherit it. True when it did.");
  py::class_<AsgiQueue, std::shared_ptr<AsgiQueue>>(m, "AsgiQueue", py::module_local(),
                                                     "Requests for an ASGI app's event loop.")
      .def(py::init<>())
      .def("fileno", [](AsgiQueue& q) { return q.fd(); })
      .def("reset", [](AsgiQueue& q) { q.reset(); })
      .def(
          "take",
          [](AsgiQueue& q, py::handle type, py::handle host, py::handle state) {
            return py::reinterpret_steal<py::object>(take_calls(q, type.ptr(), host.ptr(), state.ptr()));
          },
          py::arg("type"), py::arg("host"), py::arg("state"),
          "The waiting requests as `type` (an AsgiCall subclass) instances, each with its scope.");
  m.def(
      "_asgi_app",
      [](std::shared_ptr<AsgiQueue> q, py::object keep, std::shared_ptr<AsgiSocketQueue> sockets) {
        auto hold = std::make_shared<PyRef>(std::move(keep));  // the Python host, for as long as the app lives
        App app = [q, hold, sockets](Env& env) {
          if (sockets && asgi_websocket_request(env)) return asgi_websocket_call(env, sockets);
          // The body is read here, on the server's thread: the adapter's csgi.input is not readable
          // once the app has returned its delayed response. Bounded by the server's body limit.
          auto req = std::make_shared<AsgiRequest>(env, read_body(env));
          return Response::delayed([q, req](Responder r) {
            req->set_responder(std::move(r));
            q->push(req);
          });
        };
        return py::cast(new AppHandle(std::move(app)), py::return_value_policy::take_ownership);
      },
      py::arg("queue"), py::arg("host"), py::arg("sockets") = nullptr,
      "The csgi.App that hands requests to `queue` (and WebSocket handshakes to `sockets`).");
}

}  // namespace csgi::python
