#include "wsgi_environ.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "asgi_env.hpp"
#include "common.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/request_env.hpp"
#include "gil.hpp"

namespace csgi::python {
namespace {

// The keys this source computes rather than copies; a bit each in fixed_forgotten_.
enum Fixed : int {
  kVersion, kUrlScheme, kMultithread, kMultiprocess, kRunOnce, kNonblocking, kStreaming, kInput, kErrors,
  kPathInfo, kScriptName, kQueryString, kRequestUri, kContentLength, kContentType, kFixedCount
};
constexpr std::array<std::string_view, kFixedCount> kFixed = {
    keys::version, keys::url_scheme, keys::multithread, keys::multiprocess, keys::run_once, keys::nonblocking,
    keys::streaming, keys::input, keys::errors, keys::PATH_INFO, keys::SCRIPT_NAME, keys::QUERY_STRING,
    keys::REQUEST_URI, keys::CONTENT_LENGTH, keys::CONTENT_TYPE};

int fixed_index(std::string_view key) noexcept {
  for (int i = 0; i < kFixedCount; ++i)
    if (kFixed[i].size() == key.size() && std::memcmp(kFixed[i].data(), key.data(), key.size()) == 0) return i;
  return -1;
}

// Environ keys that never become env entries: the host's wsgi.* objects (mapped to csgi.* above) and the
// HTTP_* keys the header rule refuses (HTTP_PROXY, HTTP_CONTENT_*). The host named the keys, so a field
// sent as X_Foo reads as X-Foo unless the host drops it (gunicorn does by default, as csgi serve does).
bool left_out(std::string_view key) noexcept {
  return (key.size() > 5 && key.starts_with("wsgi.")) || (key.starts_with("HTTP_") && !header_meta_variable(key));
}

std::string above_latin1(std::string_view key) {
  return "environ['" + std::string(key) + "'] holds characters above U+00FF (PEP 3333: latin-1 only)";
}

// The str object of a key name, for a dict lookup with the GIL: made once per name (up to 32 names) in the
// main interpreter, interned so that the host's own interned keys match by identity; a new one elsewhere
// (a str belongs to the interpreter that made it). `owned`: the caller drops the reference. Guarded by
// the GIL.
PyObject* key_object(std::string_view name, PyInterpreterState* interp, bool& owned) noexcept {
  static std::vector<std::pair<std::string, PyObject*>> cache;
  bool main = interp == PyInterpreterState_Main();
  if (main)
    for (auto& [n, o] : cache)
      if (n == name) {
        owned = false;
        return o;
      }
  PyObject* o = latin1_str(name);
  if (!o) {
    PyErr_Clear();
    return nullptr;
  }
  owned = true;
  if (main && cache.size() < 32) {
    try {
      PyUnicode_InternInPlace(&o);
      cache.emplace_back(std::string(name), o);
      owned = false;
    } catch (...) {
    }
  }
  return o;
}

}  // namespace

WsgiEnviron::WsgiEnviron(HostStreams& streams) : streams_(streams) { items_.reserve(64); }

void WsgiEnviron::start(Env& env, PyObject* environ, PyInterpreterState* interp) {
  environ_ = environ;
  interp_ = interp;
  // The two keys read on every call, as str objects made once (main interpreter; guarded by the GIL).
  static PyObject* main_keys[2] = {};
  bool main = interp == PyInterpreterState_Main();
  int i = 0;
  for (auto [name, dest] : {std::pair{keys::SCRIPT_NAME, &script_raw_}, std::pair{keys::PATH_INFO, &path_raw_}}) {
    PyObject*& key = main_keys[i++];
    PyObject* v;
    if (main && (key || (key = PyUnicode_InternFromString(std::string(name).c_str())))) {
      v = PyDict_GetItemWithError(environ, key);
      if (!v) PyErr_Clear();
    } else {
      PyErr_Clear();
      v = host_object(name);
    }
    if (v && PyUnicode_Check(v) && !latin1_view(v, *dest)) throw py::value_error(above_latin1(name));
  }
  script_ = script_raw_;
  path_ = path_raw_;
  env.attach(*this, static_cast<std::size_t>(PyDict_GET_SIZE(environ)) + kFixedCount);
}

void WsgiEnviron::canonicalize(Env& env) {
  std::string_view script = script_raw_, path = without_dot_segments(env, path_raw_);
  if (has_dot_segment(script)) {
    script = canonical_script_name(env, script);
    if (script.empty() && path.empty()) path = "/";  // "/app/.." mounted: the root (ENV-2)
  }
  script_ = script;
  path_ = path;
}

void WsgiEnviron::reset() noexcept {
  environ_ = nullptr;
  interp_ = nullptr;
  script_raw_ = path_raw_ = script_ = path_ = {};
  items_.clear();
  snapped_ = false;
  mask_ = 0;
  fixed_forgotten_ = 0;
  bad_key_.clear();
  uri_.clear();
}

std::string WsgiEnviron::bad_key_message() const { return above_latin1(bad_key_); }

PyObject* WsgiEnviron::host_object(std::string_view name) noexcept {
  if (!environ_) return nullptr;
  bool owned = false;
  PyObject* key = key_object(name, interp_, owned);
  if (!key) return nullptr;
  PyObject* v = PyDict_GetItemWithError(environ_, key);
  if (!v) PyErr_Clear();
  if (owned) Py_DECREF(key);
  return v;
}

// The dict's (key, value) pointers, taken once with the GIL so that lookups without it need no GIL.
void WsgiEnviron::snapshot() noexcept {
  if (snapped_) return;
  snapped_ = true;
  AcquireGil gil(interp_);
  if (!gil || !environ_) return;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  try {
    while (PyDict_Next(environ_, &pos, &k, &v)) {
      std::string_view key;
      if (!PyUnicode_Check(k) || !latin1_view(k, key) || key.empty()) continue;
      items_.push_back(Item{key, v, false});
      mask_ |= bit(key);
    }
  } catch (...) {  // out of memory: what was copied is what the env gets
  }
}

const WsgiEnviron::Item* WsgiEnviron::find_item(std::string_view name) const noexcept {
  if (name.empty() || !(mask_ & bit(name))) return nullptr;
  for (const Item& it : items_)
    if (it.key.size() == name.size() && std::memcmp(it.key.data(), name.data(), name.size()) == 0) return &it;
  return nullptr;
}

PyObject* WsgiEnviron::raw(std::string_view name) noexcept {
  if (!snapped_) {
    if (this_thread_holds_gil()) return host_object(name);
    snapshot();
  }
  const Item* it = find_item(name);
  return it ? it->value : nullptr;
}

bool WsgiEnviron::truthy(PyObject* v) noexcept {
  if (!v || v == Py_False || v == Py_None) return false;
  if (v == Py_True) return true;
  AcquireGil gil(interp_);
  if (!gil) return false;
  int r = PyObject_IsTrue(v);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

// A str value as latin-1 bytes; a wider one is noted in bad_key_ and reads as absent.
bool WsgiEnviron::text_of(std::string_view key, PyObject* v, std::string_view& out) noexcept {
  if (!v || !PyUnicode_Check(v)) return false;
  if (latin1_view(v, out)) return true;
  if (bad_key_.empty()) {
    try {
      bad_key_.assign(key);
    } catch (...) {
      bad_key_ = "?";
    }
  }
  return false;
}

bool WsgiEnviron::request_uri(Found& out) noexcept {
  std::string_view t;
  if (text_of(keys::REQUEST_URI, raw(keys::REQUEST_URI), t) ||
      (text_of("RAW_URI", raw("RAW_URI"), t) && !t.empty())) {  // RAW_URI: gunicorn
    out = {keys::REQUEST_URI, Value::of_text(t)};
    return true;
  }
  std::string_view qs;
  text_of(keys::QUERY_STRING, raw(keys::QUERY_STRING), qs);
  try {
    uri_.clear();
    percent_encode_to(uri_, script_raw_, uri::path);
    percent_encode_to(uri_, path_raw_, uri::path);
    if (uri_.empty()) uri_ = "/";
    if (!qs.empty()) uri_.append("?").append(qs);
  } catch (...) {
    return false;
  }
  out = {keys::REQUEST_URI, Value::of_text(uri_)};
  return true;
}

bool WsgiEnviron::lookup(std::string_view key, Found& out) noexcept {
  std::string_view t;
  switch (fixed_index(key)) {
    case -1: return text_entry(key, out);
    case kVersion: out = {keys::version, Value::of_text(keys::spec_version)}; return true;
    case kUrlScheme: {
      PyObject* v = raw("wsgi.url_scheme");
      bool https = v && PyUnicode_Check(v) && latin1_view(v, t) && t == "https";
      out = {keys::url_scheme, Value::of_text(https ? "https" : "http")};
      return true;
    }
    case kMultithread: out = {keys::multithread, Value::of_bool(truthy(raw("wsgi.multithread")))}; return true;
    case kMultiprocess: out = {keys::multiprocess, Value::of_bool(truthy(raw("wsgi.multiprocess")))}; return true;
    case kRunOnce: out = {keys::run_once, Value::of_bool(truthy(raw("wsgi.run_once")))}; return true;
    case kNonblocking: out = {keys::nonblocking, Value::of_bool(false)}; return true;
    case kStreaming: out = {keys::streaming, Value::of_bool(true)}; return true;
    case kInput: {
      PyObject* obj = raw("wsgi.input");
      if (!obj) return false;
      std::int64_t length = 0;
      std::string_view cl;
      bool has_length = text_of(keys::CONTENT_LENGTH, raw(keys::CONTENT_LENGTH), cl) && !cl.empty();
      if (has_length) {
        auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
        if (ec != std::errc() || p != cl.data() + cl.size() || length < 0) length = 0;
      }
      bool unbounded = !has_length && truthy(raw("wsgi.input_terminated"));
      out = {keys::input, Value::of_object<Input>(streams_.open_input(obj, length, unbounded))};
      return true;
    }
    case kErrors: {
      PyObject* obj = raw("wsgi.errors");
      if (!obj) return false;
      out = {keys::errors, Value::of_object<ErrorStream>(streams_.open_errors(obj))};
      return true;
    }
    case kPathInfo: out = {keys::PATH_INFO, Value::of_text(path_)}; return true;
    case kScriptName: out = {keys::SCRIPT_NAME, Value::of_text(script_)}; return true;
    case kQueryString:
      text_of(keys::QUERY_STRING, raw(keys::QUERY_STRING), t);
      out = {keys::QUERY_STRING, Value::of_text(t)};
      return true;
    case kRequestUri: return request_uri(out);
    case kContentLength:
    case kContentType:
      if (!text_of(key, raw(key), t) || t.empty()) return false;
      out = {kFixed[static_cast<std::size_t>(fixed_index(key))], Value::of_text(t)};
      return true;
    default: return false;
  }
}

// Any other key: the environ's str value under the same name.
bool WsgiEnviron::text_entry(std::string_view key, Found& out) noexcept {
  if (left_out(key)) return false;
  std::string_view t;
  if (!snapped_ && this_thread_holds_gil()) {  // one dict lookup; the key is copied into the env
    if (!text_of(key, host_object(key), t)) return false;
    out = {std::string_view(), Value::of_text(t)};
    return true;
  }
  snapshot();
  const Item* it = find_item(key);
  if (!it || it->forgotten || !text_of(key, it->value, t)) return false;
  out = {it->key, Value::of_text(t)};
  return true;
}

bool WsgiEnviron::forgotten(std::string_view key) const noexcept {
  int i = fixed_index(key);
  return i >= 0 && (fixed_forgotten_ >> i & 1);
}

bool WsgiEnviron::fetch(Env& env, std::string_view key) noexcept {
  Found f;
  if (key.empty() || forgotten(key) || !lookup(key, f)) return true;
  try {
    if (env.emplace(f.key.empty() ? key : f.key, f.value, f.key.empty()).second)
      count_env_conversion();
  } catch (...) {  // out of memory copying the key: the entry reads as absent
  }
  return true;
}

void WsgiEnviron::fetch_all(Env& env) noexcept {
  snapshot();
  try {
    for (int i = 0; i < kFixedCount; ++i) {
      Found f;
      if (!(fixed_forgotten_ >> i & 1) && lookup(kFixed[static_cast<std::size_t>(i)], f) &&
          env.emplace(f.key, f.value, false).second)
        count_env_conversion();
    }
    for (const Item& it : items_) {
      std::string_view t;
      if (it.forgotten || left_out(it.key) || fixed_index(it.key) >= 0 || !text_of(it.key, it.value, t)) continue;
      if (env.emplace(it.key, Value::of_text(t), false).second) count_env_conversion();
    }
  } catch (...) {  // out of memory growing the env: it keeps what it got
  }
}

bool WsgiEnviron::forget(std::string_view key) noexcept {
  snapshot();
  Found f;
  int i = fixed_index(key);
  if (i >= 0) {
    bool held = !(fixed_forgotten_ >> i & 1) && lookup(key, f);
    fixed_forgotten_ |= 1u << i;
    return held;
  }
  auto* it = const_cast<Item*>(find_item(key));
  if (!it || it->forgotten) return false;
  bool held = text_entry(key, f);
  it->forgotten = true;
  return held;
}

}  // namespace csgi::python
