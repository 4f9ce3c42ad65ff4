// Python → C++: a WSGI application as a csgi::App, callable from any adapter thread.
//
// Per call the GIL is taken (with the thread state saved by an enclosing csgi call on this thread, or a
// thread state of our own) once, an environ dict is copied from a prebuilt one of the constant wsgi.*
// entries and filled from the Env (text as latin-1 str, booleans and integers as such; csgi.* keys mapped
// to wsgi.*; key str objects interned once, short values reused while they repeat), or the previous
// request's environ is reused when nothing holds it and the app left it unchanged (only the entries that
// differ set), the app is called with a start_response, and the
// result becomes: complete bytes for a list/tuple, or when a generator finishes within its announced
// Content-Length; a FileBody for wsgi.file_wrapper over a real file; otherwise a Stream that takes the GIL
// per chunk. close() of the result is always called. A Python exception before the headers are out is a
// 500 with the traceback in csgi.errors.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/app_failure.hpp"
#include "gil.hpp"
#include "py_streams.hpp"
#ifdef CSGI_PY_MIDDLEWARE
#include "session_view.hpp"
#endif

namespace csgi::python {
namespace {

/// Per-request state shared by start_response and the response being built.
struct CallState {
  bool started = false;       // start_response was called
  bool headers_out = false;   // status and headers were handed to the adapter
  int status = 0;
  Headers headers;
  std::string written;        // what the legacy write() callable received
};

/// The status line and header list of the last start_response call of one StartResponse, by the identity
/// of their objects: str and tuple objects are immutable, and the references kept here keep their addresses
/// from being reused, so the same objects mean the same status and fields (an app's literal status and
/// header tuples are constants of its code: the same objects call after call). Once a list repeats, its
/// fields are sealed (Headers::seal: one reference count per copy, the HTTP/1 form written once) and
/// later calls copy them instead of converting each field again. Used under the GIL.
class HeadCache {
public:
  HeadCache() = default;
  HeadCache(const HeadCache&) = delete;
  HeadCache& operator=(const HeadCache&) = delete;
  ~HeadCache() {
    Py_XDECREF(status_);
    forget_tuples();
  }

  /// The code of status line `s` (a str), or a Python error.
  int status(PyObject* s) {
    if (s == status_) return code_;
    if (!PyUnicode_Check(s)) throw py::type_error("status must be a str");
    std::string_view v = latin1_or_throw(s, "status");
    int code = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + std::min<std::size_t>(v.size(), 3), code);
    if (v.size() < 4 || ec != std::errc() || p != v.data() + 3 || v[3] != ' ' || code < 100 || code > 599)
      throw py::value_error("status must look like \"200 OK\", got " + std::string(py::repr(s)));
    Py_XSETREF(status_, Py_NewRef(s));
    code_ = code;
    return code;
  }

  /// The fields of header list `list` (a list of (str, str) tuples), or a Python error.
  Headers headers(PyObject* list) {
    if (!PyList_Check(list)) throw py::type_error("response headers must be a list");
    if (!same_tuples(list)) {
      Headers out = convert(list);
      forget_tuples();
      Py_ssize_t n = PyList_GET_SIZE(list);
      tuples_.reserve(static_cast<std::size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) tuples_.push_back(Py_NewRef(PyList_GET_ITEM(list, i)));
      known_ = true;
      return out;
    }
    if (!sealed_.sealed()) {  // the first repeat
      sealed_ = convert(list);
      sealed_.seal();
    }
    return sealed_;
  }

private:
  bool same_tuples(PyObject* list) const noexcept {
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (!known_ || static_cast<std::size_t>(n) != tuples_.size()) return false;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (PyList_GET_ITEM(list, i) != tuples_[static_cast<std::size_t>(i)]) return false;
    return true;
  }
  void forget_tuples() noexcept {
    for (PyObject* t : tuples_) Py_DECREF(t);
    tuples_.clear();
    sealed_ = Headers();
    known_ = false;
  }
  /// Each (str, str) tuple of `list` as a field; latin-1 only, no CR, LF or NUL in a value (PEP 3333).
  static Headers convert(PyObject* list) {
    Headers out;
    Py_ssize_t n = PyList_GET_SIZE(list);
    out.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* t = PyList_GET_ITEM(list, i);
      if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ||
          !PyUnicode_Check(PyTuple_GET_ITEM(t, 1)))
        throw py::type_error("each response header must be a (str, str) tuple");
      std::string_view name = latin1_or_throw(PyTuple_GET_ITEM(t, 0), "header name");
      std::string_view value = latin1_or_throw(PyTuple_GET_ITEM(t, 1), "header value");
      for (char c : value)
        if (c == '\r' || c == '\n' || c == '\0') throw py::value_error("control character in response header value");
      out.add(std::string(name), std::string(value));
    }
    return out;
  }

  PyObject* status_ = nullptr;   // the last status line (owned), and its code
  int code_ = 0;
  std::vector<PyObject*> tuples_;  // the last header list's items (owned)
  bool known_ = false;             // tuples_ holds a list that converted without error
  Headers sealed_;                 // their fields, sealed, once they repeated
};

/// start_response(status, headers, exc_info=None) → write
class StartResponse {
public:
  explicit StartResponse(std::shared_ptr<CallState> st) : st_(std::move(st)) {}
  ~StartResponse() { Py_XDECREF(write_); }
  StartResponse(const StartResponse&) = delete;
  StartResponse& operator=(const StartResponse&) = delete;
  /// Serves another request (an object no one else holds, reused).
  void attach(std::shared_ptr<CallState> st) noexcept { st_ = std::move(st); }
  /// The write callable call() returns: a bound method of this object, made once and kept while the
  /// object serves requests (a reference cycle that PyApp breaks, with set_write(nullptr), when a
  /// request ends and the object is not kept for the next one). Steals `w`.
  void set_write(PyObject* w) noexcept { Py_XSETREF(write_, w); }
  PyObject* write_obj() const noexcept { return write_; }

  py::object call(py::handle self, py::handle status, py::handle headers, py::handle exc_info) {
    CallState& st = *st_;
    if (!exc_info.is_none()) {
      if (st.headers_out) {
        if (!PyTuple_Check(exc_info.ptr()) || PyTuple_GET_SIZE(exc_info.ptr()) != 3)
          throw py::type_error("exc_info must be a (type, value, traceback) tuple");
        PyObject* t = PyTuple_GET_ITEM(exc_info.ptr(), 0);
        PyObject* v = PyTuple_GET_ITEM(exc_info.ptr(), 1);
        PyObject* tb = PyTuple_GET_ITEM(exc_info.ptr(), 2);
        Py_INCREF(t);
        Py_INCREF(v);
        Py_INCREF(tb);
        PyErr_Restore(t, v, tb == Py_None ? (Py_DECREF(tb), nullptr) : tb);
        throw_python_error();
      }
    } else if (st.started) {
      throw py::value_error("start_response called a second time without exc_info (PEP 3333)");
    }
    int code = head_.status(status.ptr());
    st.headers = head_.headers(headers.ptr());
    st.status = code;
    st.started = true;
    if (write_) return py::reinterpret_borrow<py::object>(write_);
    return self.attr("write");
  }

  void write(py::bytes data) {
    if (!st_->started) throw py::value_error("write() before start_response()");
    char* p = nullptr;
    Py_ssize_t n = 0;
    PyBytes_AsStringAndSize(data.ptr(), &p, &n);
    st_->written.append(p, static_cast<std::size_t>(n));
  }

private:
  std::shared_ptr<CallState> st_;
  PyObject* write_ = nullptr;  // owned
  HeadCache head_;
};

/// The vectorcall of StartResponse objects (start_response(status, headers, exc_info=None) called without
/// an argument tuple); each object keeps a pointer to it at its type's tp_vectorcall_offset, set by
/// enable_vectorcall() when it is made (bind_from_wsgi makes room for it).
PyObject* start_response_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                                    PyObject* kwnames) noexcept;
void enable_vectorcall(PyObject* obj) noexcept {
  Py_ssize_t at = Py_TYPE(obj)->tp_vectorcall_offset;
  if (at > 0) *reinterpret_cast<vectorcallfunc*>(reinterpret_cast<char*>(obj) + at) = &start_response_vectorcall;
}

/// The start_response of one request: unless PyApp::recycle() keeps it, the end of the request breaks
/// the cycle between it and its write callable.
struct StartResponseRef {
  py::object obj;
  StartResponse* ptr = nullptr;
  StartResponseRef() = default;
  StartResponseRef(const StartResponseRef&) = delete;
  StartResponseRef& operator=(const StartResponseRef&) = delete;
  ~StartResponseRef() {
    if (ptr) ptr->set_write(nullptr);
  }
};

/// wsgi.input and wsgi.errors of one request, with their C++ objects (for detach() without a cast).
struct Streams {
  py::object input, errors;
  InputStream* in = nullptr;
  ErrorsStream* err = nullptr;
  /// The request is over: both raise ValueError from now on.
  void detach() noexcept {
    if (in) in->detach();
    if (err) err->detach();
  }
};

class PyApp;

/// The body of a Python response that streams: each next() takes the GIL for one chunk.
class PyStream final : public Stream {
public:
  PyStream(std::shared_ptr<PyApp> app, PyObject* result, PyObject* iter, std::string first,
           Streams io, ErrorStream& err_out)
      : app_(std::move(app)), result_(result), iter_(iter), first_(std::move(first)), io_(std::move(io)),
        err_out_(err_out) {}
  ~PyStream() override;
  bool next(std::string& chunk) override;
  void close() override;

private:
  void close_locked();
  std::shared_ptr<PyApp> app_;
  PyObject* result_;  // owned
  PyObject* iter_;    // owned
  std::string first_;
  bool have_first_ = true;
  bool closed_ = false;
  Streams io_;
  ErrorStream& err_out_;
};

/// The str objects of environ keys and of their recent values, made once and shared by requests (a str is
/// immutable, so an app cannot tell). Open addressing over the whole key; bounded, so that header names a
/// client makes up cannot grow it without end (past the bound such a key is a fresh str per request).
/// Each slot also says what the environ template (PyApp::template_) holds for its key. Used under the GIL
/// only.
class KeyTable {
public:
  struct Slot {
    std::uint64_t hash = 0;
    std::string key;
    PyObject* str = nullptr;    // interned; owned
    // The value of the last request that had this key: its type, bytes (text) or number, and object.
    Value::Type type = Value::Type::object;
    std::int64_t num = 0;
    std::string last;
    PyObject* value = nullptr;  // owned
    PyObject* in_template = nullptr;  // what the environ template holds for the key (borrowed), or null
    PyObject* fallback = nullptr;     // the template's entry when a request lacks the key (owned), or null
    std::uint64_t seen = 0;           // the last request (PyApp's count) whose env had the key
    std::uint64_t own_value = 0;      // the last request whose environ got its own value for the key:
                                      // one the template (then) did not hold
    Slot* mirror = nullptr;           // csgi.url_scheme and the like: the wsgi.* key that mirrors it
    bool mirror_known = false;
  };

  KeyTable() = default;
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;
  ~KeyTable() { clear(); }
  /// Drops every str (needs the GIL).
  void clear() noexcept {
    for (Slot& s : slots_) {
      Py_CLEAR(s.str);
      Py_CLEAR(s.value);
      Py_CLEAR(s.fallback);
      s.in_template = nullptr;
    }
  }
  /// Forgets the str objects without releasing them (the interpreter is gone).
  void abandon() noexcept {
    for (Slot& s : slots_) s.str = s.value = s.fallback = s.in_template = nullptr;
  }

  /// The slot of key `k` (its interned str in slot->str), or null when the table is full and `k` new.
  /// Most env keys are string literals: a front cache indexed by the key's address answers them without
  /// hashing (the bytes are still compared: an address may hold another key by the next request).
  Slot* find(std::string_view k) {
    Front& f = front_[(reinterpret_cast<std::uintptr_t>(k.data()) >> 3 ^ k.size()) % front_.size()];
    if (f.data == k.data() && f.slot && same_bytes(f.slot->key, k)) return f.slot;
    Slot* s = find_hashed(k);
    if (s) f = {k.data(), s};
    return s;
  }

  Slot* find_hashed(std::string_view k) {
    std::uint64_t h = hash_of(k);
    for (std::size_t i = h & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
      Slot& s = slots_[i];
      if (!s.str) {
        if (used_ >= kMaxUsed) return nullptr;
        PyObject* str = latin1_str(k);
        if (!str) throw_python_error();
        PyUnicode_InternInPlace(&str);
        s.hash = h;
        s.key.assign(k);
        s.str = str;
        ++used_;
        return &s;
      }
      if (s.hash == h && same_bytes(s.key, k)) return &s;
    }
  }

  /// A borrowed reference to the interned str of `k` (for keys known to fit: the fixed wsgi.* names).
  PyObject* key(std::string_view k) {
    Slot* s = find(k);
    if (!s) throw std::logic_error("csgi: environ key table full");
    return s->str;
  }

  /// A new reference to an object of `v` for the key of `slot`: the previous request's when equal
  /// (`reused` says so). Null with a Python error set.
  static PyObject* value(Slot& slot, const Value& v, bool& reused) {
    reused = same_value(slot, v);
    if (reused) return Py_NewRef(slot.value);
    PyObject* obj = fresh(v);
    if (obj && (v.type() != Value::Type::text || v.text().size() <= kMaxValue)) {
      Py_XSETREF(slot.value, Py_NewRef(obj));
      slot.type = v.type();
      if (v.type() == Value::Type::text) slot.last.assign(v.text());
      else slot.num = v.type() == Value::Type::boolean ? static_cast<std::int64_t>(v.truthy()) : v.integer();
    }
    return obj;
  }

  /// True when slot.value is an object of `v`.
  static bool same_value(const Slot& slot, const Value& v) noexcept {
    if (!slot.value || slot.type != v.type()) return false;
    switch (v.type()) {
      case Value::Type::text: return same_bytes(slot.last, v.text());
      case Value::Type::boolean: return slot.num == static_cast<std::int64_t>(v.truthy());
      case Value::Type::integer: return slot.num == v.integer();
      case Value::Type::object: break;
    }
    return false;
  }

  /// A new object of `v` (text as a latin-1 str); null with a Python error set.
  static PyObject* fresh(const Value& v) {
    switch (v.type()) {
      case Value::Type::text: return latin1_str(v.text());
      case Value::Type::boolean: return PyBool_FromLong(v.truthy());
      case Value::Type::integer: return PyLong_FromLongLong(v.integer());
      case Value::Type::object: break;
    }
    return Py_NewRef(Py_None);
  }

  /// The N bytes at p as a number.
  template <std::size_t N>
  static std::conditional_t<N == 8, std::uint64_t, std::uint32_t> word(const char* p) noexcept {
    std::conditional_t<N == 8, std::uint64_t, std::uint32_t> w;
    std::memcpy(&w, p, N);
    return w;
  }
  /// a == b, inline for the short strings of an environ (a library memcmp costs more than the compare).
  static bool same_bytes(std::string_view a, std::string_view b) noexcept {
    std::size_t n = a.size();
    if (n != b.size()) return false;
    const char *p = a.data(), *q = b.data();
    if (n >= 8) {  // whole words, the last one overlapping the one before
      for (std::size_t i = 0; i + 8 < n; i += 8)
        if (word<8>(p + i) != word<8>(q + i)) return false;
      return word<8>(p + n - 8) == word<8>(q + n - 8);
    }
    if (n >= 4) return word<4>(p) == word<4>(q) && word<4>(p + n - 4) == word<4>(q + n - 4);
    for (; n > 0; ++p, ++q, --n)
      if (*p != *q) return false;
    return true;
  }

private:
  static constexpr std::size_t kSlots = 512, kMaxUsed = 384, kMaxValue = 256;
  static std::uint64_t hash_of(std::string_view k) noexcept {
    std::uint64_t h = 0x9E3779B97F4A7C15u ^ k.size();
    const char* p = k.data();
    std::size_t n = k.size();
    for (; n >= 8; p += 8, n -= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xC2B2AE3D27D4EB4Fu;
      h ^= h >> 29;
    }
    std::uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xC2B2AE3D27D4EB4Fu;
    return h ^ (h >> 32);
  }
  struct Front {
    const char* data = nullptr;
    Slot* slot = nullptr;
  };
  std::array<Slot, kSlots> slots_{};
  std::array<Front, 128> front_{};
  std::size_t used_ = 0;
};

class PyApp : public std::enable_shared_from_this<PyApp> {
public:
  static constexpr Py_ssize_t kTemplateRoom = 48;
  PyApp(py::object app) : app_(app.release().ptr()), interp_(PyThreadState_Get()->interp) {}
  ~PyApp() {
    AcquireGil gil(interp_);
    if (!gil) {  // the interpreter is gone: leave the references
      keys_.abandon();
      spare_input_.obj.release();
      spare_errors_.obj.release();
      spare_start_response_.obj.release();
      spare_environ_ = nullptr;
      return;
    }
    if (spare_start_response_.obj) spare_start_response_.ptr->set_write(nullptr);
    spare_input_.obj = py::object();
    spare_errors_.obj = py::object();
    spare_start_response_.obj = py::object();
    Py_CLEAR(spare_environ_);
    Py_CLEAR(app_);
    Py_CLEAR(template_);
    Py_CLEAR(file_wrapper_);
    keys_.clear();
  }
  PyInterpreterState* interp() const noexcept { return interp_; }
  PyObject* app() const noexcept { return app_; }

  Response call(Env& env);

private:
  PyObject* build_environ(Env& env, Streams& io);
  /// The environ template every request's environ is copied from (PyDict_Copy of a dict without deleted
  /// entries is a copy of its table): the wsgi.* constants, and each env entry whose value was the same
  /// in the last two requests that had its key. Made on first use with room for a usual request's keys.
  PyObject* environ_template();
  /// Puts an env entry with the key of `s` into environ `d`: nothing when `d` holds its value already;
  /// a value seen again joins the template, a changed one leaves it. `d` is a copy of the template, or the
  /// environ of request reused_from_ (spare_environ_), which holds the template's entries but for the
  /// keys of last_own_ (values of that request's own).
  void put(PyObject* d, KeyTable::Slot& s, const Value& v) {
    if (s.seen == request_) return;  // an env has each key once
    s.seen = request_;
    if (s.in_template && s.in_template != s.fallback) ++matched_;
    bool stale = reused_from_ && s.own_value == reused_from_;  // d holds the last request's value
    if (!stale && s.in_template && s.in_template == s.value && KeyTable::same_value(s, v)) return;  // d has it
    put_changed(d, s, v, stale);
  }
  void put_changed(PyObject* d, KeyTable::Slot& s, const Value& v, bool stale);
  /// The keys the reused environ `d` held values of their own for (last_own_) and this request's env
  /// lacks: back to the template's entry, or removed.
  void restore_stale(PyObject* d);
  /// Entries of the template that this request's env lacks: removed from `d` and the template (or put
  /// back to their fallback).
  void drop_missing(PyObject* d);
  /// The template again, without the room its deleted entries took.
  void compact_template();
  Response finish(Env& env, CallState& st, PyObject* result, Streams& io);
  /// The Python objects of a request (wsgi.input, wsgi.errors, start_response) are reused by the next one
  /// when, at the end of a request, nothing but this holds them (their refcount is 1): making a bound
  /// object costs more than the rest of the bridge. Used under the GIL.
  template <class T>
  struct Spare {
    py::object obj;
    T* ptr = nullptr;
    void keep(py::object& o, T* p) {
      if (!obj && o && Py_REFCNT(o.ptr()) == 1) {
        obj = std::move(o);
        ptr = p;
      }
    }
  };
  void start_response(std::shared_ptr<CallState> st, StartResponseRef& sr);
  void recycle(Streams& io, StartResponseRef& sr, py::object& environ, std::uint64_t request,
               std::shared_ptr<CallState>& st);
  /// A new Python object owning `obj`, of the bound class T (its pybind11 type looked up once).
  template <class T>
  py::object wrap(T* obj, const py::detail::type_info*& type) {
    std::unique_ptr<T> owned(obj);
    if (!type) type = py::detail::get_type_info(typeid(T), true);
    py::handle h = py::detail::type_caster_generic::cast(obj, py::return_value_policy::take_ownership, {}, type,
                                                         nullptr, nullptr);
    if (!h) throw_python_error();
    owned.release();
    return py::reinterpret_steal<py::object>(h);
  }

  PyObject* app_;
  PyInterpreterState* interp_;
  PyObject* template_ = nullptr;
  std::vector<KeyTable::Slot*> in_template_;  // the slots whose in_template is set (and stale ones)
  std::size_t template_count_ = 0;          // slots whose in_template is set and not their fallback
  std::size_t matched_ = 0;                 // of those, the ones the current request's env has
  std::uint64_t request_ = 0;               // requests begun (Slot::seen)
  bool template_holes_ = false;             // the template had entries deleted
  std::array<KeyTable::Slot*, 64> order_{};  // the slots of the last request's env keys, in its order
  // The environ of the last request built, when it ended with nothing else holding it and unchanged (its
  // dict version the one it had when built): the next request's environ is it, with the entries that
  // differ set, instead of a copy of the template (a copy and a deallocation of the whole dict). Its
  // wsgi.input and wsgi.errors are spare_input_ and spare_errors_ (kept together).
  PyObject* spare_environ_ = nullptr;  // owned
  std::uint64_t reused_from_ = 0;      // while building from a reused environ: the request that built it
  std::vector<KeyTable::Slot*> own_;       // the slots of the environ being built whose value is its own
  std::vector<KeyTable::Slot*> last_own_;  // those of the environ built before it
  bool foreign_keys_ = false;              // the last environ built had keys outside the key table
  bool session_ = false;                   // the last env built from had csgix.session
  std::uint64_t built_version_ = 0;        // the last environ built: its dict version when done
  PyObject* file_wrapper_ = nullptr;  // csgi._csgi.FileWrapper, looked up once
  KeyTable keys_;
  const py::detail::type_info* input_type_ = nullptr;
  const py::detail::type_info* errors_type_ = nullptr;
  const py::detail::type_info* start_response_type_ = nullptr;
  Spare<InputStream> spare_input_;
  Spare<ErrorsStream> spare_errors_;
  Spare<StartResponse> spare_start_response_;
  std::shared_ptr<CallState> spare_state_;  // the last request's, when nothing else held it at its end
};

Response python_failure(Env& env, PyObject* result, Streams& io);

void set_item(PyObject* d, PyObject* k, PyObject* v) {
  if (!v) throw_python_error();
  int rc = PyDict_SetItem(d, k, v);
  Py_DECREF(v);
  if (rc < 0) throw_python_error();
}

PyObject* PyApp::environ_template() {
  if (template_) return template_;
  if (!file_wrapper_) file_wrapper_ = py::object(py::module_::import("csgi._csgi").attr("FileWrapper")).release().ptr();
  PyObject* d = _PyDict_NewPresized(kTemplateRoom);
  if (!d) throw_python_error();
  py::object guard = py::reinterpret_steal<py::object>(d);
  set_item(d, keys_.key("wsgi.version"), Py_BuildValue("(ii)", 1, 0));
  set_item(d, keys_.key("wsgi.input_terminated"), PyBool_FromLong(1));
  set_item(d, keys_.key("wsgi.file_wrapper"), Py_NewRef(file_wrapper_));
  // The csgi.* keys the wsgi.* ones mirror: their defaults until a request's env says otherwise.
  auto fallback = [&](const char* key, const Value& v) {
    KeyTable::Slot& s = *keys_.find(key);
    bool reused = false;
    PyObject* obj = KeyTable::value(s, v, reused);
    if (!obj) throw_python_error();
    s.in_template = obj;
    s.fallback = Py_NewRef(obj);
    in_template_.push_back(&s);
    set_item(d, s.str, obj);
  };
  fallback("wsgi.url_scheme", Value::of_text("http"));
  for (const char* b : {"wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"}) fallback(b, Value::of_bool(false));
  template_ = guard.release().ptr();
  return template_;
}

void PyApp::put_changed(PyObject* d, KeyTable::Slot& s, const Value& v, bool stale) {
  bool reused = false;
  PyObject* obj = KeyTable::value(s, v, reused);
  if (!obj) throw_python_error();
  py::object ref = py::reinterpret_steal<py::object>(obj);
  if (obj == s.in_template) {  // the template's entry: a copy has it
    if (stale && PyDict_SetItem(d, s.str, obj) < 0) throw_python_error();
    return;
  }
  if (PyDict_SetItem(d, s.str, obj) < 0) throw_python_error();
  if (!reused) {  // a value of this request's own (the template holds another, or nothing)
    s.own_value = request_;
    own_.push_back(&s);
  }
  if (reused) {
    // The same value twice in a row: from now on it comes with the template.
    if (PyDict_SetItem(template_, s.str, obj) < 0) throw_python_error();
    if (!s.in_template) in_template_.push_back(&s);
    if (!s.in_template || s.in_template == s.fallback) ++template_count_;
    s.in_template = obj;
  } else if (s.in_template && s.in_template != s.fallback) {
    // A value that changes: set per request.
    --template_count_;
    if (s.fallback) {
      if (PyDict_SetItem(template_, s.str, s.fallback) < 0) throw_python_error();
      s.in_template = s.fallback;
    } else {
      if (PyDict_DelItem(template_, s.str) < 0) throw_python_error();
      s.in_template = nullptr;
      template_holes_ = true;
    }
  }
}

void PyApp::drop_missing(PyObject* d) {
  for (KeyTable::Slot* s : in_template_) {
    if (!s->in_template || s->in_template == s->fallback || s->seen == request_) continue;
    --template_count_;
    if (s->fallback) {
      if (PyDict_SetItem(d, s->str, s->fallback) < 0 || PyDict_SetItem(template_, s->str, s->fallback) < 0)
        throw_python_error();
      s->in_template = s->fallback;
    } else {
      if (PyDict_DelItem(d, s->str) < 0 || PyDict_DelItem(template_, s->str) < 0) throw_python_error();
      s->in_template = nullptr;
      template_holes_ = true;
    }
  }
}

void PyApp::restore_stale(PyObject* d) {
  for (KeyTable::Slot* s : last_own_) {
    if (s->own_value != reused_from_ || s->seen == request_) continue;
    s->own_value = 0;
    if (s->in_template ? PyDict_SetItem(d, s->str, s->in_template) < 0 : PyDict_DelItem(d, s->str) < 0)
      throw_python_error();
  }
}

void PyApp::compact_template() {
  template_holes_ = false;
  std::erase_if(in_template_, [](KeyTable::Slot* s) { return !s->in_template; });
  PyObject* t = _PyDict_NewPresized(std::max<Py_ssize_t>(kTemplateRoom, PyDict_GET_SIZE(template_) + 16));
  if (!t) throw_python_error();
  if (PyDict_Update(t, template_) < 0) {
    Py_DECREF(t);
    throw_python_error();
  }
  Py_SETREF(template_, t);
}

/// The wsgi.* key that mirrors csgi key `k`, or null.
const char* mirror_of(std::string_view k) noexcept {
  if (!k.starts_with("csgi.")) return nullptr;
  std::string_view c = k.substr(5);
  return c == "url_scheme"     ? "wsgi.url_scheme"
         : c == "multithread"  ? "wsgi.multithread"
         : c == "multiprocess" ? "wsgi.multiprocess"
         : c == "run_once"     ? "wsgi.run_once"
                               : nullptr;
}

/// The version of dict `d` (PEP 509: a new one at each change), or 0 where this Python has none to read.
std::uint64_t dict_version(PyObject* d) noexcept {
#if PY_VERSION_HEX < 0x030C0000
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag;
#else
  (void)d;
  return 0;
#endif
}

PyObject* PyApp::build_environ(Env& env, Streams& io) {
  PyObject* d = spare_environ_;
  reused_from_ = d ? request_ : 0;
  spare_environ_ = nullptr;
  if (!d) d = PyDict_Copy(environ_template());
  if (!d) throw_python_error();
  py::object guard = py::reinterpret_steal<py::object>(d);
  ++request_;
  last_own_.swap(own_);
  own_.clear();
  foreign_keys_ = false;
  session_ = false;
  matched_ = 0;
  std::size_t expected = template_count_;
  std::size_t at = 0;
  for (const Env::Entry& e : env) {
    if (e.value.type() == Value::Type::object) {  // csgi.input, csgi.errors: C++ objects
      if (e.key == keys::x::session) session_ = true;
      continue;
    }
    std::string_view k = e.key;
    // An adapter puts the keys in the same order request after request: the slot of the key at this
    // place last time is the first guess.
    KeyTable::Slot* s = at < order_.size() ? order_[at] : nullptr;
    if (!s || !KeyTable::same_bytes(s->key, k)) {
      s = keys_.find(k);
      if (at < order_.size()) order_[at] = s;
    }
    ++at;
    if (s) {
      if (!s->mirror_known) {
        s->mirror_known = true;
        if (const char* m = mirror_of(k)) s->mirror = keys_.find(m);
      }
      if (s->mirror) put(d, *s->mirror, e.value);
      put(d, *s, e.value);
      continue;
    }
    if (const char* m = mirror_of(k)) put(d, *keys_.find(m), e.value);
    foreign_keys_ = true;
    PyObject* key = latin1_str(k);
    if (!key) throw_python_error();
    py::object key_ref = py::reinterpret_steal<py::object>(key);
    set_item(d, key, KeyTable::fresh(e.value));
  }
  // Entries of the template the env did not have (a header of the previous requests, say).
  if (matched_ != expected) drop_missing(d);
  if (reused_from_) restore_stale(d);
  if (template_holes_) compact_template();
  if (reused_from_) {  // its wsgi.input and wsgi.errors are the spare ones
    io.input = std::move(spare_input_.obj);
    io.in = spare_input_.ptr;
    io.in->attach(&env.input());
    io.errors = std::move(spare_errors_.obj);
    io.err = spare_errors_.ptr;
    io.err->attach(&env.errors());
    built_version_ = dict_version(d);
    return guard.release().ptr();
  }
  if (spare_input_.obj) {
    io.input = std::move(spare_input_.obj);
    io.in = spare_input_.ptr;
    io.in->attach(&env.input());
  } else {
    io.in = new InputStream(&env.input());
    io.input = wrap(io.in, input_type_);
  }
  if (spare_errors_.obj) {
    io.errors = std::move(spare_errors_.obj);
    io.err = spare_errors_.ptr;
    io.err->attach(&env.errors());
  } else {
    io.err = new ErrorsStream(&env.errors());
    io.errors = wrap(io.err, errors_type_);
  }
  set_item(d, keys_.key("wsgi.input"), io.input.inc_ref().ptr());
  set_item(d, keys_.key("wsgi.errors"), io.errors.inc_ref().ptr());
  built_version_ = dict_version(d);
  return guard.release().ptr();
}

/// Calls result.close() when it has one; a failure there is reported, not raised.
void close_result(PyObject* result, ErrorStream& err) {
  if (!result || PyList_CheckExact(result) || PyTuple_CheckExact(result)) return;  // no close() there
  PyObject* name = PyUnicode_InternFromString("close");
  PyObject* close = nullptr;
  int found = name ? _PyObject_LookupAttr(result, name, &close) : -1;
  Py_XDECREF(name);
  if (found <= 0) {
    PyErr_Clear();
    return;
  }
  PyObject* r = PyObject_CallNoArgs(close);
  Py_DECREF(close);
  if (r) {
    Py_DECREF(r);
    return;
  }
  err.write("csgi: the WSGI iterable's close() raised:\n" + take_python_error_text());
}

std::optional<std::uint64_t> content_length(const Headers& h) {
  auto v = h.get("Content-Length");
  if (!v) return std::nullopt;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return n;
}

void PyApp::start_response(std::shared_ptr<CallState> st, StartResponseRef& sr) {
  if (spare_start_response_.obj) {
    sr.ptr = spare_start_response_.ptr;
    sr.ptr->attach(std::move(st));
    sr.obj = std::move(spare_start_response_.obj);
    return;
  }
  auto* ptr = new StartResponse(std::move(st));
  sr.obj = wrap(ptr, start_response_type_);
  sr.ptr = ptr;
  enable_vectorcall(sr.obj.ptr());
  PyObject* w = PyObject_GetAttrString(sr.obj.ptr(), "write");
  if (!w) throw_python_error();
  ptr->set_write(w);
}

void PyApp::recycle(Streams& io, StartResponseRef& sr, py::object& environ, std::uint64_t request,
                    std::shared_ptr<CallState>& st) {
  // The environ, with its streams, when nothing but this holds them, no environ was built since, and the
  // app did not change it.
  if (!spare_environ_ && !spare_input_.obj && !spare_errors_.obj && request == request_ && !foreign_keys_ &&
      built_version_ != 0 && Py_REFCNT(environ.ptr()) == 1 && dict_version(environ.ptr()) == built_version_ &&
      Py_REFCNT(io.input.ptr()) == 2 && Py_REFCNT(io.errors.ptr()) == 2) {
    spare_environ_ = environ.release().ptr();
    spare_input_.obj = std::move(io.input);
    spare_input_.ptr = io.in;
    spare_errors_.obj = std::move(io.errors);
    spare_errors_.ptr = io.err;
  }
  environ = py::object();
  spare_input_.keep(io.input, io.in);
  spare_errors_.keep(io.errors, io.err);
  // Kept when no one else holds it or its write callable (which holds it too).
  PyObject* w = sr.ptr->write_obj();
  if (!spare_start_response_.obj && w && Py_REFCNT(w) == 1 && Py_REFCNT(sr.obj.ptr()) == 2) {
    sr.ptr->attach(nullptr);  // the request's state is not kept alive
    spare_start_response_.obj = std::move(sr.obj);
    spare_start_response_.ptr = sr.ptr;
    sr.ptr = nullptr;
  }
  if (!spare_state_ && st.use_count() == 1) spare_state_ = std::move(st);
}

Response PyApp::call(Env& env) {
  AcquireGil gil(interp_);
  if (!gil) return Response::error(503, "the Python interpreter is shutting down");
  std::shared_ptr<CallState> st = std::move(spare_state_);
  if (st) *st = CallState();
  else st = std::make_shared<CallState>();
  Streams io;
  PyObject* result = nullptr;
  StartResponseRef sr;
  try {
    py::object environ = py::reinterpret_steal<py::object>(build_environ(env, io));
#ifdef CSGI_PY_MIDDLEWARE
    SessionScope session(session_, env, environ.ptr());
#endif
    std::uint64_t request = request_;
    start_response(st, sr);
    PyObject* args[] = {environ.ptr(), sr.obj.ptr()};
    result = PyObject_Vectorcall(app_, args, 2, nullptr);
    if (!result) throw_python_error();
    Response r = finish(env, *st, result, io);
    recycle(io, sr, environ, request, st);
    return r;
  } catch (PythonErrorSet&) {
    return python_failure(env, result, io);
  } catch (py::error_already_set& e) {
    e.restore();
    return python_failure(env, result, io);
  } catch (const std::exception& e) {
    close_result(result, env.errors());
    Py_XDECREF(result);
    io.detach();
    env.errors().write(app_failure_line(env, 500, std::string("the WSGI app failed: ") + e.what()));
    return Response::error(500);
  }
}

Response python_failure(Env& env, PyObject* result, Streams& io) {
  // A request body the adapter refused (bad chunk, over the limit, too slow) keeps its status: the app only
  // saw a Python RuntimeError from wsgi.input.read().
  int input_status = io.in ? io.in->http_error() : 0;
  std::string tb = take_python_error_text();
  close_result(result, env.errors());
  Py_XDECREF(result);
  if (input_status) {
    std::string reason = io.in->http_error_reason();
    io.detach();
    env.errors().write("csgi: " + std::to_string(input_status) + " for the request body: " + reason);
    return Response::error(input_status, input_status < 500 ? std::string_view(reason) : std::string_view());
  }
  io.detach();
  env.errors().write(app_failure_line(env, 500, "the WSGI app raised:\n" + tb));
  return Response::error(500);
}

Response PyApp::finish(Env& env, CallState& st, PyObject* result, Streams& io) {
  auto complete = [&](std::string body) {
    if (!st.started) throw std::runtime_error("the WSGI app returned without calling start_response");
    if (!PyList_CheckExact(result) && !PyTuple_CheckExact(result)) close_result(result, env.errors());
    Py_DECREF(result);
    io.detach();
    st.headers_out = true;
    Response r;
    r.status = st.status;
    r.headers = std::move(st.headers);
    r.body = std::move(body);
    return r;
  };
  // A list or tuple of bytes: complete.
  if (PyList_CheckExact(result) || PyTuple_CheckExact(result)) {
    PyObject** items = PySequence_Fast_ITEMS(result);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(result);
    std::string body = std::move(st.written);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!PyBytes_Check(items[i])) throw py::type_error("the WSGI iterable yielded a non-bytes item");
      body.append(PyBytes_AS_STRING(items[i]), static_cast<std::size_t>(PyBytes_GET_SIZE(items[i])));
    }
    return complete(std::move(body));
  }
  // wsgi.file_wrapper over a real file: sendfile from an independent descriptor at the file's position.
  if (file_wrapper_ && Py_TYPE(result) == reinterpret_cast<PyTypeObject*>(file_wrapper_) && st.started &&
      st.written.empty()) {
    FileWrapper& w = py::handle(result).cast<FileWrapper&>();
    int src = -1;
    off_t at = 0;
    if (PyObject* r = PyObject_CallMethod(w.filelike.ptr(), "fileno", nullptr)) {
      src = PyLong_Check(r) ? static_cast<int>(PyLong_AsLong(r)) : -1;
      Py_DECREF(r);
      // The logical position (a buffered reader may have read ahead of the descriptor's offset).
      PyObject* t = src >= 0 ? PyObject_CallMethod(w.filelike.ptr(), "tell", nullptr) : nullptr;
      if (t && PyLong_Check(t)) at = static_cast<off_t>(PyLong_AsLongLong(t));
      else src = -1;
      Py_XDECREF(t);
    }
    PyErr_Clear();
    {
      if (src >= 0) {
        std::string proc = "/proc/self/fd/" + std::to_string(src);
        int fd = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          FileBody f;
          f.file = std::make_shared<FileHandle>(fd);
          f.offset = static_cast<std::uint64_t>(at);
          if (auto cl = content_length(st.headers)) f.length = *cl;
          Response r;
          r.status = st.status;
          r.headers = std::move(st.headers);
          r.body = std::move(f);
          close_result(result, env.errors());
          Py_DECREF(result);
          io.detach();
          st.headers_out = true;
          return r;
        }
      }
    }
  }
  // Any other iterable: pull until the first non-empty chunk (that is when generators call
  // start_response). Done within the announced Content-Length → complete; otherwise stream.
  PyObject* iter = PyObject_GetIter(result);
  if (!iter) throw_python_error();
  std::string body = std::move(st.written);
  std::optional<std::uint64_t> cl;
  bool first = true;
  for (;;) {
    PyObject* item = PyIter_Next(iter);
    if (!item) {
      Py_DECREF(iter);
      if (PyErr_Occurred()) throw_python_error();
      return complete(std::move(body));
    }
    if (!PyBytes_Check(item)) {
      Py_DECREF(item);
      Py_DECREF(iter);
      throw py::type_error("the WSGI iterable yielded a non-bytes item");
    }
    body.append(PyBytes_AS_STRING(item), static_cast<std::size_t>(PyBytes_GET_SIZE(item)));
    Py_DECREF(item);
    if (body.empty()) continue;
    if (first) {
      first = false;
      if (!st.started) {
        Py_DECREF(iter);
        throw std::runtime_error("the WSGI app yielded body bytes before calling start_response");
      }
      cl = content_length(st.headers);
    }
    // With a (modest) Content-Length announced, the end is near: keep pulling, so that a framework's
    // generator over a ready body (Flask, Django) still gives a complete response.
    if (cl && *cl <= (1u << 20) && body.size() <= *cl) continue;
    // A real stream: hand status, headers and what came so far to the adapter.
    st.headers_out = true;
    Response r;
    r.status = st.status;
    r.headers = std::move(st.headers);
    r.body = StreamPtr(std::make_shared<PyStream>(shared_from_this(), result, iter, std::move(body), io,
                                                  env.errors()));
    return r;
  }
}

PyStream::~PyStream() {
  AcquireGil gil(app_->interp());
  if (!gil) return;
  close_locked();
  Py_CLEAR(iter_);
  Py_CLEAR(result_);
  io_ = Streams();
}

bool PyStream::next(std::string& chunk) {
  if (have_first_) {
    have_first_ = false;
    chunk = std::move(first_);
    return true;
  }
  AcquireGil gil(app_->interp());
  if (!gil || closed_) return false;
  for (;;) {
    PyObject* item = PyIter_Next(iter_);
    if (!item) {
      if (!PyErr_Occurred()) return false;
      std::string tb = take_python_error_text();
      err_out_.write("csgi: the WSGI iterable raised while streaming:\n" + tb);
      throw std::runtime_error("the WSGI iterable raised while streaming");
    }
    if (!PyBytes_Check(item)) {
      Py_DECREF(item);
      throw std::runtime_error("the WSGI iterable yielded a non-bytes item");
    }
    chunk.assign(PyBytes_AS_STRING(item), static_cast<std::size_t>(PyBytes_GET_SIZE(item)));
    Py_DECREF(item);
    if (!chunk.empty()) return true;
  }
}

void PyStream::close_locked() {
  if (closed_) return;
  closed_ = true;
  close_result(result_, err_out_);
  io_.detach();
}

void PyStream::close() {
  AcquireGil gil(app_->interp());
  if (!gil) return;
  close_locked();
}

}  // namespace

std::string_view latin1_or_throw(PyObject* s, const char* what) {
  std::string_view v;
  if (!latin1_view(s, v)) throw py::value_error(std::string(what) + " holds characters above U+00FF (PEP 3333: latin-1 only)");
  return v;
}

std::string take_python_error_text() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (!type) return "(no Python error)";
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text;
  PyObject* mod = PyImport_ImportModule("traceback");
  PyObject* lines = mod ? PyObject_CallMethod(mod, "format_exception", "OOO", type, value ? value : Py_None,
                                              tb ? tb : Py_None)
                        : nullptr;
  if (lines) {
    Py_ssize_t n = PyList_Size(lines);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (const char* c = PyUnicode_AsUTF8(PyList_GetItem(lines, i))) text += c;
  }
  if (text.empty()) text = Py_TYPE(value ? value : type)->tp_name;
  PyErr_Clear();
  Py_XDECREF(lines);
  Py_XDECREF(mod);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

App from_wsgi(py::object wsgi_app) {
  if (!PyCallable_Check(wsgi_app.ptr())) throw py::type_error("a WSGI app must be callable");
  auto app = std::make_shared<PyApp>(std::move(wsgi_app));
  return [app](Env& env) { return app->call(env); };
}

namespace {

/// True for an `async def` function or method (its code has CO_COROUTINE), without importing anything.
bool is_coroutine_function(PyObject* f) {
  if (PyMethod_Check(f)) f = PyMethod_GET_FUNCTION(f);
  if (!PyFunction_Check(f)) return false;
  PyObject* flags = PyObject_GetAttrString(PyFunction_GET_CODE(f), "co_flags");
  long v = flags ? PyLong_AsLong(flags) : 0;
  Py_XDECREF(flags);
  PyErr_Clear();
  return (v & CO_COROUTINE) != 0;
}

/// An ASGI 3 callable: an `async def` function or an object whose class has an `async def __call__`.
bool is_asgi_app(PyObject* obj) {
  if (is_coroutine_function(obj)) return true;
  if (PyType_Check(obj)) return false;
  PyObject* call = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "__call__");
  bool yes = call && is_coroutine_function(call);
  Py_XDECREF(call);
  PyErr_Clear();
  return yes;
}

}  // namespace

App to_app(py::handle obj) {
  if (py::isinstance<AppHandle>(obj)) return obj.cast<AppHandle&>().app();
  if (is_asgi_app(obj.ptr())) return to_app(py::module_::import("csgi._asgi_host").attr("from_asgi")(obj));
  return from_wsgi(py::reinterpret_borrow<py::object>(obj));
}

namespace {

/// tp_call of StartResponse: start_response(status, headers, exc_info=None) without pybind11's dispatch.
PyObject* start_response_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* exc_info = n == 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
  if (kwargs && PyDict_GET_SIZE(kwargs) != 0) {
    PyObject* kw = PyDict_GetItemString(kwargs, "exc_info");  // borrowed
    if (!kw || PyDict_GET_SIZE(kwargs) != 1 || n != 2) {
      PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
      return nullptr;
    }
    exc_info = kw;
  } else if (n != 2 && n != 3) {
    PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
    return nullptr;
  }
  return call_on_instance<StartResponse>(self, [&](StartResponse& sr) {
    return sr.call(self, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), exc_info).release().ptr();
  });
}

PyObject* start_response_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                                    PyObject* kwnames) noexcept {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  PyObject* exc_info = n == 3 ? args[2] : Py_None;
  if (kwnames && PyTuple_GET_SIZE(kwnames) != 0) {
    // One keyword, exc_info, after status and headers (its value follows the positional arguments).
    if (PyTuple_GET_SIZE(kwnames) != 1 || n != 2 ||
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "exc_info") != 0) {
      PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
      return nullptr;
    }
    exc_info = args[2];
  } else if (n != 2 && n != 3) {
    PyErr_SetString(PyExc_TypeError, "start_response(status, headers, exc_info=None)");
    return nullptr;
  }
  return call_on_instance<StartResponse>(self, [&](StartResponse& sr) {
    return sr.call(self, args[0], args[1], exc_info).release().ptr();
  });
}

}  // namespace

void bind_from_wsgi(py::module_& m) {
  // Room after pybind11's instance for the vectorcall pointer of each object (enable_vectorcall).
  auto room = [](PyHeapTypeObject* heap) {
    PyTypeObject& t = heap->ht_type;
    t.tp_vectorcall_offset = t.tp_basicsize;
    t.tp_basicsize += static_cast<Py_ssize_t>(sizeof(vectorcallfunc));
  };
  py::class_<StartResponse> cls(m, "StartResponse", py::module_local(), py::custom_type_setup(room),
                                "start_response of a request served by csgi.");
  cls.def("__call__",
           [](py::handle self, py::handle status, py::handle headers, py::handle exc_info) {
             return self.cast<StartResponse&>().call(self, status, headers, exc_info);
           },
           py::arg("status"), py::arg("headers"), py::arg("exc_info") = py::none())
      .def("write", &StartResponse::write);
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  type->tp_call = &start_response_tp_call;  // for an object without the pointer, and PyObject_Call
  type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
}

}  // namespace csgi::python
