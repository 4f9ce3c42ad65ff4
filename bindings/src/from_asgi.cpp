// Python → C++: an ASGI application as a csgi::App, without the GIL on the server's threads.
//
// The App answers every request with a delayed response whose Responder goes, with the env, into an
// AsgiQueue: the server's thread never touches Python. The queue wakes the event loop thread of the
// process through an eventfd (written only when the loop is not already due to drain it), and the loop
// (csgi/_asgi_host.py) takes the requests in batches, builds each scope here from the env and runs the
// app; send() answers through the Responder from the loop thread (a complete body at once; a streamed
// one through a Writer whose writes run on a pool thread, since write() waits under back-pressure).
// The request body is read by the App itself, before it returns (the adapter's csgi.input is not
// readable once a delayed response was returned), on the server's app thread, within the server's
// body limit; the env stays valid until the response is answered or its writer closed (APP-4).
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <mutex>
#include <system_error>
#include <vector>

#include "asgi_websocket.hpp"
#include "common.hpp"
#include "csgi/core/keys.hpp"
#include "gil.hpp"

namespace csgi::python {
namespace {

/// One request on its way through the ASGI app: used on the loop thread, but for write(), which runs on a
/// pool thread (the writer is shared under a lock with the loop's close() and fail()).
class AsgiRequest {
public:
  AsgiRequest(Env& env, std::string body) : env_(&env), body_(std::move(body)) {}
  void set_responder(Responder r) { responder_ = std::move(r); }

  py::dict scope() const;
  /// The request body (once; read by the App before the request was queued).
  py::bytes take_body() {
    py::bytes b(body_.data(), body_.size());
    std::string().swap(body_);
    return b;
  }
  void respond(int status, py::handle headers, py::bytes body) {
    Response r;
    r.status = status;
    r.headers = to_headers(headers);
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(body.ptr(), &data, &len) < 0) throw_python_error();
    r.body = std::string(data, static_cast<std::size_t>(len));
    Responder res = std::move(responder_);
    if (!res) throw std::logic_error("the response was answered already");
    answered();
    ReleaseGil nogil;
    res.respond(std::move(r));
  }
  void start(int status, py::handle headers) {
    Headers h = to_headers(headers);
    Responder res = std::move(responder_);
    if (!res) throw std::logic_error("the response was answered already");
    ReleaseGil nogil;
    WriterPtr w = res.start(status, std::move(h));
    std::lock_guard lock(writer_mu_);
    writer_ = std::move(w);
  }
  /// False once the client has gone. May wait (back-pressure): called on a pool thread.
  bool write(py::bytes chunk) {
    WriterPtr w = writer();
    if (!w) return false;
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(chunk.ptr(), &data, &len) < 0) throw_python_error();
    ReleaseGil nogil;
    return w->write(std::string_view(data, static_cast<std::size_t>(len)));
  }
  void close() {
    answered();
    if (WriterPtr w = take_writer()) {
      ReleaseGil nogil;
      w->close();
    }
  }
  /// Ends the response as failed: a 500 before it started, an aborted body after (ADP-4).
  void fail(const std::string& message) {
    log(message);
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
  static Headers to_headers(py::handle list) {
    Headers h;
    for (py::handle item : list) {
      py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
      if (pair.size() != 2) throw py::value_error("an ASGI header is a (name, value) pair of bytes");
      PyObject* n = pair[0].ptr();
      PyObject* v = pair[1].ptr();
      if (!PyBytes_Check(n) || !PyBytes_Check(v)) throw py::type_error("ASGI header names and values are bytes");
      h.add(std::string(PyBytes_AS_STRING(n), static_cast<std::size_t>(PyBytes_GET_SIZE(n))),
            std::string(PyBytes_AS_STRING(v), static_cast<std::size_t>(PyBytes_GET_SIZE(v))));
    }
    return h;
  }

  Env* env_;
  std::string body_;
  Responder responder_;
  std::mutex writer_mu_;
  WriterPtr writer_;
};

py::str utf8_str(std::string_view bytes) {
  PyObject* s = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace");
  if (!s) throw_python_error();
  return py::reinterpret_steal<py::str>(s);
}

py::bytes bytes_of(std::string_view s) { return py::bytes(s.data(), s.size()); }

/// "HTTP_X_FORWARDED_FOR" → b"x-forwarded-for".
py::bytes header_name(std::string_view key) {
  std::string name(key);
  for (char& c : name) c = c == '_' ? '-' : static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return bytes_of(name);
}

int port_of(std::string_view s) {
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

py::dict AsgiRequest::scope() const { return asgi_http_scope(env()); }

}  // namespace

py::dict asgi_http_scope(const Env& e) {
  py::dict s;
  static PyObject* asgi = [] {  // kept for the life of the process (no destructor after finalisation)
    py::dict d;
    d["version"] = "3.0";
    d["spec_version"] = "2.3";
    return d.release().ptr();
  }();
  s["type"] = "http";
  s["asgi"] = py::reinterpret_borrow<py::object>(asgi);
  std::string_view proto = e.get(keys::SERVER_PROTOCOL);
  s["http_version"] = proto.starts_with("HTTP/") ? py::str(std::string(proto.substr(5))) : py::str("1.1");
  s["method"] = py::str(std::string(e.get(keys::REQUEST_METHOD)));
  s["scheme"] = py::str(std::string(e.get(keys::url_scheme, "http")));
  std::string_view path = e.get(keys::PATH_INFO);
  s["path"] = path.empty() ? py::str("/") : utf8_str(path);
  std::string_view uri = e.get(keys::REQUEST_URI);
  s["raw_path"] = bytes_of(uri.substr(0, uri.find('?')));
  s["query_string"] = bytes_of(e.get(keys::QUERY_STRING));
  s["root_path"] = utf8_str(e.get(keys::SCRIPT_NAME));
  py::list headers;
  for (const Env::Entry& entry : e) {
    if (!entry.value.is_text() || e.find(entry.key) != &entry.value) continue;
    std::string_view k = entry.key;
    if (k.starts_with("HTTP_")) headers.append(py::make_tuple(header_name(k.substr(5)), bytes_of(entry.value.text())));
  }
  if (std::string_view ct = e.get(keys::CONTENT_TYPE); !ct.empty())
    headers.append(py::make_tuple(py::bytes("content-type"), bytes_of(ct)));
  if (std::string_view cl = e.get(keys::CONTENT_LENGTH); !cl.empty())
    headers.append(py::make_tuple(py::bytes("content-length"), bytes_of(cl)));
  s["headers"] = headers;
  s["server"] = py::make_tuple(py::str(std::string(e.get(keys::SERVER_NAME))), port_of(e.get(keys::SERVER_PORT)));
  if (std::string_view addr = e.get(keys::REMOTE_ADDR); !addr.empty())
    s["client"] = py::make_tuple(py::str(std::string(addr)), port_of(e.get(keys::REMOTE_PORT)));
  return s;
}

namespace {

/// Requests waiting for the event loop; its eventfd is readable while any wait. Thread-safe.
class AsgiQueue {
public:
  AsgiQueue() { reset(); }
  ~AsgiQueue() {
    if (fd_ >= 0) ::close(fd_);
  }
  /// A new eventfd (in a forked child: the parent's is shared with it). Needs no lock: called before
  /// the process serves.
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    std::lock_guard lock(mu_);
    queue_.clear();
    signalled_ = false;
  }
  int fd() const noexcept { return fd_; }
  void push(std::shared_ptr<AsgiRequest> r) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(r));
    if (!signalled_) {
      signalled_ = true;
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
    }
  }
  std::vector<std::shared_ptr<AsgiRequest>> take() {
    std::uint64_t v = 0;
    [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
    std::lock_guard lock(mu_);
    signalled_ = false;
    std::vector<std::shared_ptr<AsgiRequest>> out(std::make_move_iterator(queue_.begin()),
                                                 std::make_move_iterator(queue_.end()));
    queue_.clear();
    return out;
  }

private:
  std::mutex mu_;
  std::deque<std::shared_ptr<AsgiRequest>> queue_;
  bool signalled_ = false;
  int fd_ = -1;
};

}  // namespace

void bind_from_asgi(py::module_& m) {
  py::class_<AsgiRequest, std::shared_ptr<AsgiRequest>>(m, "AsgiRequest", py::module_local(),
                                                         "One request of an ASGI app served by csgi.")
      .def("scope", &AsgiRequest::scope)
      .def("take_body", &AsgiRequest::take_body)
      .def("respond", &AsgiRequest::respond, py::arg("status"), py::arg("headers"), py::arg("body"))
      .def("start", &AsgiRequest::start, py::arg("status"), py::arg("headers"))
      .def("write", &AsgiRequest::write, py::arg("chunk"))
      .def("close", &AsgiRequest::close)
      .def("fail", &AsgiRequest::fail, py::arg("message"))
      .def("log", &AsgiRequest::log, py::arg("message"));
  py::class_<AsgiQueue, std::shared_ptr<AsgiQueue>>(m, "AsgiQueue", py::module_local(),
                                                     "Requests for an ASGI app's event loop.")
      .def(py::init<>())
      .def("fileno", &AsgiQueue::fd)
      .def("reset", &AsgiQueue::reset)
      .def("take", [](AsgiQueue& q) {
        py::list out;
        for (auto& r : q.take()) out.append(py::cast(std::move(r)));
        return out;
      });
  m.def(
      "_asgi_app",
      [](std::shared_ptr<AsgiQueue> q, py::object keep, std::shared_ptr<AsgiSocketQueue> sockets) {
        auto hold = std::make_shared<PyRef>(std::move(keep));  // the Python host, for as long as the app lives
        App app = [q, hold, sockets](Env& env) {
          if (sockets && asgi_websocket_request(env)) return asgi_websocket_call(env, sockets);
          // The body is read here, on the server's thread: the adapter's csgi.input is not readable
          // once the app has returned its delayed response. Bounded by the server's body limit.
          std::string_view cl = env.get(keys::CONTENT_LENGTH);
          std::string body;
          if ((!cl.empty() && cl != "0") || env.contains("HTTP_TRANSFER_ENCODING")) body = env.input().read_all();
          auto req = std::make_shared<AsgiRequest>(env, std::move(body));
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
