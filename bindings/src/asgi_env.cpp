// ASGI http scope → csgi env (asgi_env.hpp): the rules of the WSGI bridge without a Python environ.
#include "asgi_env.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "csgi/core/keys.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

namespace csgi::python {

bool bytes_of(PyObject* b, std::string_view& out) noexcept {
  if (PyBytes_Check(b)) {
    out = {PyBytes_AS_STRING(b), static_cast<std::size_t>(PyBytes_GET_SIZE(b))};
    return true;
  }
  if (PyByteArray_Check(b)) {
    out = {PyByteArray_AS_STRING(b), static_cast<std::size_t>(PyByteArray_GET_SIZE(b))};
    return true;
  }
  return false;
}

namespace {

/// The interned keys of an ASGI scope, made once per process (kept for its life).
struct ScopeKeys {
  PyObject *method, *path, *root_path, *query_string, *raw_path, *http_version, *scheme, *headers, *server,
      *client;
};

const ScopeKeys& scope_keys() {
  static const ScopeKeys k = [] {
    auto in = [](const char* s) { return PyUnicode_InternFromString(s); };
    return ScopeKeys{in("method"), in("path"), in("root_path"), in("query_string"), in("raw_path"),
                     in("http_version"), in("scheme"), in("headers"), in("server"), in("client")};
  }();
  return k;
}

/// scope[key] (borrowed), or null when missing; throws on a lookup error.
PyObject* item(PyObject* scope, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(scope, key);
  if (!v && PyErr_Occurred()) throw_python_error();
  return v;
}

/// The UTF-8 bytes of a str, for a check.
std::string_view utf8_of(PyObject* s, const char* what) {
  if (!PyUnicode_Check(s)) throw py::type_error(std::string("ASGI scope: ") + what + " must be a str");
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  if (!c) throw_python_error();
  return {c, static_cast<std::size_t>(n)};
}

// The keys AsgiScope makes one by one; a bit each in fixed_forgotten_.
enum Fixed : int {
  kMethod, kScriptName, kPathInfo, kQueryString, kProtocol, kRequestUri, kServerName, kServerPort, kRemoteAddr,
  kRemotePort, kVersion, kUrlScheme, kMultithread, kMultiprocess, kRunOnce, kNonblocking, kStreaming, kFixedCount
};
constexpr std::array<std::string_view, kFixedCount> kFixed = {
    keys::REQUEST_METHOD, keys::SCRIPT_NAME, keys::PATH_INFO, keys::QUERY_STRING, keys::SERVER_PROTOCOL,
    keys::REQUEST_URI, keys::SERVER_NAME, keys::SERVER_PORT, keys::REMOTE_ADDR, keys::REMOTE_PORT, keys::version,
    keys::url_scheme, keys::multithread, keys::multiprocess, keys::run_once, keys::nonblocking, keys::streaming};

int fixed_index(std::string_view key) noexcept {
  for (int i = 0; i < kFixedCount; ++i)
    if (kFixed[i] == key) return i;
  return -1;
}

// Keys the header fields give: the first one read makes the whole env.
bool from_headers(std::string_view key) noexcept {
  return key.starts_with("HTTP_") || key == keys::CONTENT_TYPE || key == keys::CONTENT_LENGTH;
}

}  // namespace

PyObject* AsgiScope::hold(PyObject* o) {
  held_.push_back(o);
  Py_INCREF(o);
  return o;
}

/// The bytes of a bytes object (held), or a copy of a bytearray's (which may change meanwhile); false for
/// anything else.
bool AsgiScope::held_bytes(PyObject* b, std::string_view& out) {
  if (PyBytes_Check(b)) {
    bytes_of(hold(b), out);
    return true;
  }
  if (!PyByteArray_Check(b)) return false;
  PyObject* copy = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(b), PyByteArray_GET_SIZE(b));
  if (!copy) throw_python_error();
  bytes_of(hold(copy), out);
  Py_DECREF(copy);
  return true;
}

/// The UTF-8 bytes of a str (PEP 3333 hosts give them to the environ as latin-1 code points).
std::string_view AsgiScope::utf8(PyObject* s, const char* what) {
  std::string_view t = utf8_of(s, what);
  hold(s);
  return t;
}

/// scope["server"] / scope["client"]: (host, port), each as str() gives it; a port None is "".
void AsgiScope::address(PyObject* pair, Address& out) {
  out = Address{};
  if (!pair || pair == Py_None) return;
  PyObject* seq = PySequence_Fast(pair, "ASGI scope: server and client are (host, port) pairs");
  if (!seq) throw_python_error();
  struct Drop {
    PyObject* o;
    ~Drop() { Py_DECREF(o); }
  } drop{seq};
  if (PySequence_Fast_GET_SIZE(seq) != 2) throw py::value_error("ASGI scope: server and client are (host, port) pairs");
  auto text = [&](PyObject* o) {
    if (PyUnicode_Check(o)) return utf8(o, "host");
    PyObject* s = PyObject_Str(o);
    if (!s) throw_python_error();
    std::string_view t = utf8(s, "str()");
    Py_DECREF(s);  // held
    return t;
  };
  out.given = true;
  out.host = text(PySequence_Fast_GET_ITEM(seq, 0));
  PyObject* port = PySequence_Fast_GET_ITEM(seq, 1);
  int overflow = 0;
  long long n = PyLong_CheckExact(port) ? PyLong_AsLongLongAndOverflow(port, &overflow) : -1;
  if (PyLong_CheckExact(port) && !overflow && !(n == -1 && PyErr_Occurred())) {
    auto [p, ec] = std::to_chars(out.port_text, out.port_text + sizeof out.port_text, n);
    out.port = {out.port_text, static_cast<std::size_t>(p - out.port_text)};
  } else {
    PyErr_Clear();
    out.port = port == Py_None ? std::string_view() : text(port);
  }
}

void AsgiScope::start(Env& env, PyObject* scope) {
  const ScopeKeys& k = scope_keys();
  PyObject* method = item(scope, k.method);
  PyObject* path = item(scope, k.path);
  if (!method || !path) throw py::key_error("ASGI scope: method and path are required");
  method_ = utf8(method, "method");
  PyObject* root = item(scope, k.root_path);
  root_ = root ? utf8(root, "root_path") : std::string_view();
  path_ = utf8(path, "path");
  query_ = {};
  if (PyObject* q = item(scope, k.query_string); q && !held_bytes(q, query_))
    throw py::type_error("ASGI scope: query_string must be bytes");
  PyObject* version = item(scope, k.http_version);
  version_ = version ? utf8(version, "http_version") : std::string_view("1.1");
  raw_ = {};
  if (PyObject* r = item(scope, k.raw_path); r && r != Py_None && !held_bytes(r, raw_))
    throw py::type_error("ASGI scope: raw_path must be bytes");
  address(item(scope, k.server), server_);
  address(item(scope, k.client), client_);
  PyObject* scheme = item(scope, k.scheme);
  scheme_ = scheme ? utf8(scheme, "scheme") : std::string_view("http");
  if (PyObject* headers = item(scope, k.headers)) {
    PyObject* seq = PySequence_Fast(headers, "ASGI scope: headers must be a sequence of (name, value) pairs");
    if (!seq) throw_python_error();
    hold(seq);
    Py_DECREF(seq);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    headers_.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* pair = PySequence_Fast_GET_ITEM(seq, i);
      std::string_view name, value;
      if (!(PyTuple_Check(pair) || PyList_Check(pair)) || PySequence_Size(pair) != 2 ||
          !held_bytes(PyTuple_Check(pair) ? PyTuple_GET_ITEM(pair, 0) : PyList_GET_ITEM(pair, 0), name) ||
          !held_bytes(PyTuple_Check(pair) ? PyTuple_GET_ITEM(pair, 1) : PyList_GET_ITEM(pair, 1), value))
        throw py::type_error("ASGI scope: a header is a (name, value) pair of bytes");
      headers_.emplace_back(name, value);
    }
  }
  env.attach(*this, kFixedCount + headers_.size() + 2);
}

void AsgiScope::reset() noexcept {
  for (PyObject* o : held_) Py_DECREF(o);
  held_.clear();
  headers_.clear();
  method_ = path_ = root_ = query_ = raw_ = version_ = scheme_ = {};
  server_ = client_ = Address{};
  fixed_forgotten_ = 0;
  forgotten_.clear();
}

bool AsgiScope::lookup(Env& env, int fixed, Value& out) noexcept {
  auto text = [&out](std::string_view t) {
    out = Value::of_text(t);
    return true;
  };
  try {
    switch (fixed) {
      case kMethod: return text(method_);
      case kScriptName: return text(root_);
      case kPathInfo: return text(path_);
      case kQueryString: return text(query_);
      case kProtocol: {
        char* p = env.allocate(5 + version_.size());
        std::memcpy(p, "HTTP/", 5);
        if (!version_.empty()) std::memcpy(p + 5, version_.data(), version_.size());
        return text({p, 5 + version_.size()});
      }
      case kRequestUri: {
        std::string uri;
        if (!raw_.empty()) {
          uri.assign(raw_);
        } else {
          percent_encode_to(uri, root_, uri::path);
          percent_encode_to(uri, path_, uri::path);
          if (uri.empty()) uri = "/";
        }
        if (!query_.empty()) uri.append("?").append(query_);
        return text(env.intern(uri));
      }
      case kServerName: return server_.given && text(server_.host);
      case kServerPort: return server_.given && text(server_.port);
      case kRemoteAddr: return client_.given && text(client_.host);
      case kRemotePort: return client_.given && text(client_.port);
      case kVersion: return text(keys::spec_version);
      case kUrlScheme: return text(scheme_ == "https" ? "https" : "http");
      // What set_server_flags sets for an ASGI host: multithread, one process, streaming.
      case kMultithread: out = Value::of_bool(true); return true;
      case kMultiprocess: case kRunOnce: case kNonblocking: out = Value::of_bool(false); return true;
      case kStreaming: out = Value::of_bool(true); return true;
      default: return false;
    }
  } catch (...) {  // out of memory: the entry reads as absent
    return false;
  }
}

bool AsgiScope::forgotten(std::string_view key) const noexcept {
  int i = fixed_index(key);
  if (i >= 0) return fixed_forgotten_ >> i & 1;
  for (const std::string& f : forgotten_)
    if (f == key) return true;
  return false;
}

bool AsgiScope::fetch(Env& env, std::string_view key) noexcept {
  if (from_headers(key)) return false;
  int i = fixed_index(key);
  if (i < 0) return true;
  if ((i == kServerName || i == kServerPort) && !server_.given) return false;  // from Host
  Value v;
  if (!(fixed_forgotten_ >> i & 1) && lookup(env, i, v) && env.emplace(kFixed[i], v, false).second)
    count_env_conversion();
  return true;
}

void AsgiScope::fetch_all(Env& env) noexcept {
  try {
    for (int i = 0; i < kFixedCount; ++i) {
      Value v;
      if (!(fixed_forgotten_ >> i & 1) && lookup(env, i, v) && env.emplace(kFixed[i], v, false).second)
        count_env_conversion();
    }
    add_headers(env);
    if (!server_.given) server_from_host(env);
  } catch (...) {  // out of memory growing the env: it keeps what it got
  }
}

// The request headers by the one rule of every adapter (add_header: names with '_', Proxy and
// HTTP_CONTENT_* get no key; repeats joined with ", ", "; " for cookies); a key the app set or erased
// itself is left as it is; an empty CONTENT_TYPE / CONTENT_LENGTH is left out.
void AsgiScope::add_headers(Env& env) {
  std::vector<char> skip(headers_.size());
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    std::string_view key = header_key(env, headers_[i].first);
    skip[i] = key.empty() || forgotten(key) || env.contains(key);
  }
  bool content = false;
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    if (skip[i]) continue;
    auto [name, value] = headers_[i];
    if (add_header(env, name, value)) count_env_conversion();
    content |= iequals(name, "content-type") || iequals(name, "content-length");
  }
  if (content)
    for (std::string_view key : {keys::CONTENT_LENGTH, keys::CONTENT_TYPE})
      if (const Value* v = env.find(key); v && v->is_text() && v->text().empty()) env.erase(key);
}

// SERVER_NAME and SERVER_PORT of a scope without "server": from Host, as the WSGI adapters do (from the
// env's HTTP_HOST, which the app may have set before it read any header key), else localhost and the
// scheme's port. A key the app set or erased itself is left as it is.
void AsgiScope::server_from_host(Env& env) {
  bool name_free = !(fixed_forgotten_ >> kServerName & 1) && !env.contains(keys::SERVER_NAME);
  bool port_free = !(fixed_forgotten_ >> kServerPort & 1) && !env.contains(keys::SERVER_PORT);
  if (!name_free && !port_free) return;
  const Value* name = env.find(keys::SERVER_NAME);
  const Value* port = env.find(keys::SERVER_PORT);
  std::optional<Value> app_name = name ? std::optional<Value>(*name) : std::nullopt;
  std::optional<Value> app_port = port ? std::optional<Value>(*port) : std::nullopt;
  env.set_view(keys::SERVER_NAME, "localhost");
  set_server_from_host(env, scheme_ == "https" ? "443" : "80");
  auto restore = [&env](std::string_view key, bool free, const std::optional<Value>& app) {
    if (free) {
      count_env_conversion();
    } else if (app) {
      env.set_value(key, *app);
    } else {
      env.erase(key);
    }
  };
  restore(keys::SERVER_NAME, name_free, app_name);
  restore(keys::SERVER_PORT, port_free, app_port);
}

bool AsgiScope::forget(std::string_view key) noexcept {
  int i = fixed_index(key);
  if (i >= 0) {
    bool held = !(fixed_forgotten_ >> i & 1) && ((i != kRemoteAddr && i != kRemotePort) || client_.given);
    fixed_forgotten_ |= 1u << i;
    return held;
  }
  if (!from_headers(key)) return false;
  try {
    if (forgotten(key)) return false;
    forgotten_.emplace_back(key);
    if (!scratch_) scratch_ = std::make_unique<Env>();
    for (auto [name, value] : headers_) {
      scratch_->clear();
      // The first field of a key gives it; an empty CONTENT_TYPE / CONTENT_LENGTH is left out.
      if (header_key(*scratch_, name) == key) return !value.empty() || key.starts_with("HTTP_");
    }
    return false;
  } catch (...) {
    return false;
  }
}

/// True for a GET or HEAD whose framing says it has no body (HTTP/1 without Content-Length or
/// Transfer-Encoding, RFC 9112 6.3, or with Content-Length 0): the bridge need not receive() first.
bool scope_has_no_body(PyObject* scope) {
  const ScopeKeys& k = scope_keys();
  PyObject* method = item(scope, k.method);
  if (!method || !PyUnicode_Check(method)) return false;
  std::string_view m = utf8_of(method, "method");
  if (m != "GET" && m != "HEAD") return false;
  PyObject* version = item(scope, k.http_version);
  if (version) {
    std::string_view v = utf8_of(version, "http_version");
    if (v != "1.1" && v != "1.0") return false;
  }
  PyObject* headers = item(scope, k.headers);
  if (!headers) return true;
  PyObject* seq = PySequence_Fast(headers, "ASGI scope: headers must be a sequence of (name, value) pairs");
  if (!seq) throw_python_error();
  bool none = true;
  for (Py_ssize_t i = 0, n = PySequence_Fast_GET_SIZE(seq); i < n && none; ++i) {
    PyObject* pair = PySequence_Fast_GET_ITEM(seq, i);
    std::string_view name, value;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !bytes_of(PyTuple_GET_ITEM(pair, 0), name) ||
        !bytes_of(PyTuple_GET_ITEM(pair, 1), value)) {
      none = false;  // let the general path judge (and refuse) it
    } else if (iequals(name, "transfer-encoding") || (iequals(name, "content-length") && value != "0")) {
      none = false;
    }
  }
  Py_DECREF(seq);
  return none;
}

/// ASGI response headers: (lower-case name, value) pairs of bytes, Content-Length replaced by `length`.
PyObject* asgi_trailers(const Headers& trailers) {
  Headers sendable;
  for (const Header& h : trailers)
    if (!trailer_field_forbidden(h.name) && is_token(h.name) && !has_ctl(h.value, true)) sendable.add(h.name, h.value);
  return asgi_headers(sendable, std::nullopt);
}

PyObject* asgi_headers(const Headers& headers, std::optional<std::uint64_t> length) {
  PyObject* list = PyList_New(0);
  if (!list) throw_python_error();
  auto add = [&](std::string_view name, std::string_view value) {
    std::string lower(name);
    for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    PyObject* n = PyBytes_FromStringAndSize(lower.data(), static_cast<Py_ssize_t>(lower.size()));
    PyObject* v = n ? PyBytes_FromStringAndSize(value.data(), static_cast<Py_ssize_t>(value.size())) : nullptr;
    PyObject* t = v ? PyTuple_Pack(2, n, v) : nullptr;
    Py_XDECREF(n);
    Py_XDECREF(v);
    if (!t || PyList_Append(list, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(list);
      throw_python_error();
    }
    Py_DECREF(t);
  };
  for (const Header& h : headers)
    if (!iequals(h.name, "Content-Length")) add(h.name, h.value);
  if (length) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, *length);
    add("content-length", std::string_view(buf, static_cast<std::size_t>(p - buf)));
  }
  return list;
}

PyObject* bytes_object(std::string_view s) {
  PyObject* b = PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
  if (!b) throw_python_error();
  return b;
}

}  // namespace csgi::python
