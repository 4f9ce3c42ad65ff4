// ASGI http scope → csgi env (asgi_env.hpp): the rules of the WSGI bridge without a Python environ.
#include "asgi_env.hpp"

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

/// The UTF-8 bytes of a str (PEP 3333 hosts give them to the environ as latin-1 code points).
std::string_view utf8_of(PyObject* s, const char* what) {
  if (!PyUnicode_Check(s)) throw py::type_error(std::string("ASGI scope: ") + what + " must be a str");
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  if (!c) throw_python_error();
  return {c, static_cast<std::size_t>(n)};
}

/// str(obj) as UTF-8, into the env's arena.
std::string_view text_of(Env& env, PyObject* obj) {
  PyObject* s = PyObject_Str(obj);
  if (!s) throw_python_error();
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  std::string_view out = c ? env.intern(std::string_view(c, static_cast<std::size_t>(n))) : std::string_view();
  Py_DECREF(s);
  if (!c) throw_python_error();
  return out;
}

/// (host, port) of scope["server"] / scope["client"] into two env keys; false when absent.
bool address(Env& env, PyObject* pair, std::string_view host_key, std::string_view port_key) {
  if (!pair || pair == Py_None) return false;
  PyObject* seq = PySequence_Fast(pair, "ASGI scope: server and client are (host, port) pairs");
  if (!seq) throw_python_error();
  struct Drop {
    PyObject* o;
    ~Drop() { Py_DECREF(o); }
  } drop{seq};
  if (PySequence_Fast_GET_SIZE(seq) != 2) throw py::value_error("ASGI scope: server and client are (host, port) pairs");
  PyObject* host = PySequence_Fast_GET_ITEM(seq, 0);
  PyObject* port = PySequence_Fast_GET_ITEM(seq, 1);
  env.set_view(host_key, text_of(env, host));
  env.set_view(port_key, port == Py_None ? std::string_view() : text_of(env, port));
  return true;
}

/// The request headers into the env by the one rule of every adapter (add_header: names with '_', Proxy
/// and HTTP_CONTENT_* get no key; repeats joined with ", ", "; " for cookies). The values are copied into
/// the env's arena: the env may outlive the scope's bytes objects.
void scope_headers(Env& env, PyObject* headers) {
  if (!headers) return;
  PyObject* seq = PySequence_Fast(headers, "ASGI scope: headers must be a sequence of (name, value) pairs");
  if (!seq) throw_python_error();
  struct Drop {
    PyObject* o;
    ~Drop() { Py_DECREF(o); }
  } drop{seq};
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* pair = PySequence_Fast_GET_ITEM(seq, i);
    std::string_view name, value;
    if (!(PyTuple_Check(pair) || PyList_Check(pair)) || PySequence_Size(pair) != 2 ||
        !bytes_of(PyTuple_Check(pair) ? PyTuple_GET_ITEM(pair, 0) : PyList_GET_ITEM(pair, 0), name) ||
        !bytes_of(PyTuple_Check(pair) ? PyTuple_GET_ITEM(pair, 1) : PyList_GET_ITEM(pair, 1), value))
      throw py::type_error("ASGI scope: a header is a (name, value) pair of bytes");
    char* copy = env.allocate(value.size());
    if (!value.empty()) std::memcpy(copy, value.data(), value.size());
    add_header(env, name, {copy, value.size()});
  }
}

}  // namespace

void scope_to_env(Env& env, std::string& request_uri, PyObject* scope) {
  const ScopeKeys& k = scope_keys();
  PyObject* method = item(scope, k.method);
  PyObject* path = item(scope, k.path);
  if (!method || !path) throw py::key_error("ASGI scope: method and path are required");
  env.set(keys::REQUEST_METHOD, utf8_of(method, "method"));
  PyObject* root = item(scope, k.root_path);
  env.set(keys::SCRIPT_NAME, root ? utf8_of(root, "root_path") : std::string_view());
  env.set(keys::PATH_INFO, utf8_of(path, "path"));
  std::string_view query;
  if (PyObject* q = item(scope, k.query_string); q && !bytes_of(q, query))
    throw py::type_error("ASGI scope: query_string must be bytes");
  env.set(keys::QUERY_STRING, query);
  PyObject* version = item(scope, k.http_version);
  std::string proto = "HTTP/";
  proto += version ? utf8_of(version, "http_version") : std::string_view("1.1");
  env.set(keys::SERVER_PROTOCOL, proto);
  std::string_view raw;
  if (PyObject* r = item(scope, k.raw_path); r && r != Py_None && !bytes_of(r, raw))
    throw py::type_error("ASGI scope: raw_path must be bytes");
  bool has_server = address(env, item(scope, k.server), keys::SERVER_NAME, keys::SERVER_PORT);
  address(env, item(scope, k.client), keys::REMOTE_ADDR, keys::REMOTE_PORT);
  PyObject* scheme_obj = item(scope, k.scheme);
  std::string_view scheme = scheme_obj ? utf8_of(scheme_obj, "scheme") : std::string_view("http");
  scope_headers(env, item(scope, k.headers));
  if (!has_server) {  // from Host, as the WSGI adapters do
    env.set_view(keys::SERVER_NAME, "localhost");
    set_server_from_host(env, scheme == "https" ? "443" : "80");
  }
  for (std::string_view key : {keys::CONTENT_LENGTH, keys::CONTENT_TYPE})
    if (env.get(key).empty()) env.erase(key);
  if (!raw.empty()) {
    std::string& uri = request_uri;
    uri.assign(raw);
    if (!query.empty()) uri.append("?").append(query);
    env.set_view(keys::REQUEST_URI, uri);
  } else {
    std::string& uri = request_uri;
    percent_encode_to(uri, env.get(keys::SCRIPT_NAME), uri::path);
    percent_encode_to(uri, env.get(keys::PATH_INFO), uri::path);
    if (uri.empty()) uri = "/";
    if (!query.empty()) uri.append("?").append(query);
    env.set_view(keys::REQUEST_URI, uri);
  }
  env.set_view(keys::version, keys::spec_version);
  env.set_view(keys::url_scheme, scheme == "https" ? std::string_view("https") : std::string_view("http"));
  set_server_flags(env, {.multithread = true});
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
