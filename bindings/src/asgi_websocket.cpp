// The ASGI websocket scope on the csgi servers. One AsgiSocket per handshake, shared by three threads:
//  - the app thread that got the upgrade request: queues the socket for the loop and waits (without the
//    GIL) for the app's answer, then returns 101 with a csgi::websocket::Handler, or 403 / 500 / 503;
//  - the connection's callbacks (where the adapter runs apps): messages and the close go into the socket's
//    event list and wake the loop through the socket's own eventfd; they never take the GIL;
//  - the event loop (GIL held): scope(), take() for receive(), accept/send/close for send().
// The socket's state is under its mutex; the connection's members are called without it held.
#include "asgi_websocket.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "csgi/core/io.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/websocket.hpp"

namespace csgi::python {

class AsgiSocket : public std::enable_shared_from_this<AsgiSocket> {
 public:
  /// How long the handshake waits for websocket.accept or websocket.close.
  static constexpr std::chrono::seconds kAnswerWait{30};
  /// Messages received and not yet taken by the app, in bytes: past this the app is not reading and the
  /// connection is closed with 1011 (the adapter has no way to stop reading without holding its thread).
  static constexpr std::size_t kMaxUnread = 16u << 20;

  explicit AsgiSocket(Env& env) : env_(&env) {
    fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~AsgiSocket() {
    if (fd_ >= 0) ::close(fd_);
  }

  // --- the app thread ---
  Response wait_answer(Env& env);

  // --- the event loop (GIL held) ---
  py::dict scope();
  int fileno() {
    std::lock_guard lock(mu_);
    return fd_;
  }
  py::list take();
  void accept(py::object subprotocol, py::object headers);
  bool send(py::handle data);
  void close(int code, std::string reason);
  void fail(const std::string& message);
  std::size_t buffered() {
    std::lock_guard lock(mu_);
    return conn_ ? conn_->buffered_amount() : 0;
  }
  /// The app returned: a handshake it did not answer is refused, an open connection closed (1000); the
  /// eventfd is closed and later events are dropped.
  void detach();

 private:
  enum class Answer { pending, accepted, refused, failed, late };
  struct Event {
    enum Kind { text, binary, disconnect } kind;
    std::string data;
    int code = 0;
  };
  void opened(websocket::Connection& c);
  void message(websocket::Connection& c, std::string_view data, bool binary);
  void closed(int code, std::string_view reason);
  void push(Event e);  // under mu_
  void log(const std::string& message) {
    if (env_)
      env_->errors().write(message);
    else
      stderr_stream().write(message);
  }

  std::mutex mu_;
  std::condition_variable answered_;
  Env* env_;  // during the handshake only
  Answer answer_ = Answer::pending;
  std::string subprotocol_;
  Headers extra_headers_;
  std::shared_ptr<websocket::Connection> conn_;  // from on_open to on_close
  bool open_ = false, ended_ = false, detached_ = false;
  std::vector<std::pair<std::string, bool>> early_;  // sent before on_open
  std::optional<std::pair<int, std::string>> early_close_;
  std::vector<Event> events_;
  std::size_t unread_ = 0;
  int fd_ = -1;
};

bool asgi_websocket_request(const Env& env) {
  // The Upgrade header first: a plain request is told apart by one lookup.
  return !env.get("HTTP_UPGRADE").empty() && env.object<websocket::Handshake>(keys::x::websocket) &&
         websocket::handshake_problem(env).empty();
}

Response asgi_websocket_call(Env& env, const std::shared_ptr<AsgiSocketQueue>& queue) {
  auto socket = std::make_shared<AsgiSocket>(env);
  queue->push(socket);
  return socket->wait_answer(env);
}

Response AsgiSocket::wait_answer(Env& env) {
  std::unique_lock lock(mu_);
  bool got = answered_.wait_for(lock, kAnswerWait, [&] { return answer_ != Answer::pending; });
  env_ = nullptr;  // the loop no longer reads the env
  if (!got) {
    answer_ = Answer::late;
    lock.unlock();
    env.errors().write("csgi: the ASGI app did not answer a WebSocket handshake within " +
                       std::to_string(kAnswerWait.count()) + " s (websocket.accept or websocket.close)");
    return Response::error(503, "the app did not answer the WebSocket handshake");
  }
  if (answer_ == Answer::refused) return Response::error(403);
  if (answer_ != Answer::accepted) return Response::error(500);
  websocket::Handler h;
  auto self = shared_from_this();
  h.on_open = [self](websocket::Connection& c) { self->opened(c); };
  h.on_message = [self](websocket::Connection& c, std::string_view d, bool binary) { self->message(c, d, binary); };
  h.on_close = [self](websocket::Connection&, int code, std::string_view reason) { self->closed(code, reason); };
  std::string subprotocol = subprotocol_;
  Headers extra = std::move(extra_headers_);
  lock.unlock();
  Response r = websocket::accept(env, std::move(h));
  if (r.status != 101) {
    closed(websocket::close_code::abnormal, {});
    return r;
  }
  if (!subprotocol.empty()) r.headers.add("Sec-WebSocket-Protocol", std::move(subprotocol));
  for (auto& [name, value] : extra) r.headers.add(std::move(name), std::move(value));
  return r;
}

py::dict AsgiSocket::scope() {
  std::lock_guard lock(mu_);
  if (!env_) throw std::logic_error("the WebSocket handshake is over");
  py::dict s = asgi_http_scope(*env_);
  s["type"] = "websocket";
  if (PyDict_DelItemString(s.ptr(), "method") < 0) PyErr_Clear();
  s["scheme"] = env_->get(keys::url_scheme) == "https" ? "wss" : "ws";
  py::list protocols;
  std::string_view offered = env_->get("HTTP_SEC_WEBSOCKET_PROTOCOL");
  while (!offered.empty()) {
    std::size_t comma = offered.find(',');
    std::string_view one = trim_ows(offered.substr(0, comma));
    if (!one.empty()) protocols.append(py::str(std::string(one)));
    offered = comma == std::string_view::npos ? std::string_view() : offered.substr(comma + 1);
  }
  s["subprotocols"] = protocols;
  return s;
}

py::list AsgiSocket::take() {
  std::vector<Event> got;
  {
    std::lock_guard lock(mu_);
    std::uint64_t v = 0;
    if (fd_ >= 0) [[maybe_unused]]
      auto n = ::read(fd_, &v, sizeof v);
    got.swap(events_);
    unread_ = 0;
  }
  py::list out;
  for (Event& e : got) {
    py::dict m;
    if (e.kind == Event::disconnect) {
      m["type"] = "websocket.disconnect";
      m["code"] = e.code;
      m["reason"] = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(e.data.data(), static_cast<Py_ssize_t>(e.data.size()), "replace"));
    } else {
      m["type"] = "websocket.receive";
      if (e.kind == Event::text)
        m["text"] = py::reinterpret_steal<py::object>(
            PyUnicode_DecodeUTF8(e.data.data(), static_cast<Py_ssize_t>(e.data.size()), "strict"));
      else
        m["bytes"] = py::bytes(e.data);
    }
    out.append(std::move(m));
  }
  return out;
}

void AsgiSocket::accept(py::object subprotocol, py::object headers) {
  std::string sub = subprotocol.is_none() ? std::string() : subprotocol.cast<std::string>();
  Headers extra;
  if (!headers.is_none())
    for (py::handle item : headers) {
      py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
      if (pair.size() != 2 || !PyBytes_Check(pair[0].ptr()) || !PyBytes_Check(pair[1].ptr()))
        throw py::type_error("an ASGI header is a (name, value) pair of bytes");
      extra.add(py::cast<std::string>(pair[0]), py::cast<std::string>(pair[1]));
    }
  std::lock_guard lock(mu_);
  if (answer_ == Answer::late) throw std::runtime_error("websocket.accept after the handshake timed out");
  if (answer_ != Answer::pending) throw std::runtime_error("websocket.accept sent twice, or after websocket.close");
  subprotocol_ = std::move(sub);
  extra_headers_ = std::move(extra);
  answer_ = Answer::accepted;
  answered_.notify_all();
}

bool AsgiSocket::send(py::handle data) {
  std::string bytes;
  bool binary = PyBytes_Check(data.ptr());
  if (binary) {
    bytes.assign(PyBytes_AS_STRING(data.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(data.ptr())));
  } else {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(data.ptr(), &n);
    if (!p) throw_python_error();
    bytes.assign(p, static_cast<std::size_t>(n));
  }
  std::shared_ptr<websocket::Connection> c;
  {
    std::lock_guard lock(mu_);
    if (answer_ != Answer::accepted) throw std::runtime_error("websocket.send before websocket.accept");
    if (ended_ || early_close_) return false;
    if (!open_) {
      early_.emplace_back(std::move(bytes), binary);
      return true;
    }
    c = conn_;
  }
  return c && (binary ? c->send_binary(bytes) : c->send_text(bytes));
}

void AsgiSocket::close(int code, std::string reason) {
  std::shared_ptr<websocket::Connection> c;
  {
    std::lock_guard lock(mu_);
    if (answer_ == Answer::pending) {  // websocket.close before websocket.accept: the handshake is refused
      answer_ = Answer::refused;
      answered_.notify_all();
      return;
    }
    if (answer_ != Answer::accepted || ended_) return;
    if (!open_) {
      if (!early_close_) early_close_.emplace(code, std::move(reason));
      return;
    }
    c = conn_;
  }
  if (c) c->close(code, reason);
}

void AsgiSocket::fail(const std::string& message) {
  {
    std::lock_guard lock(mu_);
    log(message);
    if (answer_ == Answer::pending) {
      answer_ = Answer::failed;
      answered_.notify_all();
      return;
    }
  }
  close(websocket::close_code::internal_error, {});
}

void AsgiSocket::detach() {
  {
    std::lock_guard lock(mu_);
    detached_ = true;
    events_.clear();
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (answer_ == Answer::pending) {  // returned without an answer: 500, as uvicorn and hypercorn do
      log("csgi: the ASGI app returned without answering a WebSocket handshake (websocket.accept or "
          "websocket.close)");
      answer_ = Answer::failed;
      answered_.notify_all();
      return;
    }
  }
  close(websocket::close_code::normal, {});
}

void AsgiSocket::opened(websocket::Connection& c) {
  // Messages the app sent before the connection opened go first; open_ is set once none wait, so that a
  // send() meanwhile queues behind them.
  for (;;) {
    std::vector<std::pair<std::string, bool>> early;
    std::optional<std::pair<int, std::string>> close_now;
    {
      std::lock_guard lock(mu_);
      if (early_.empty()) {
        open_ = true;
        conn_ = c.shared_from_this();
        close_now = std::move(early_close_);
        early_close_.reset();
      } else {
        early.swap(early_);
      }
    }
    for (auto& [data, binary] : early) binary ? c.send_binary(data) : c.send_text(data);
    if (!early.empty()) continue;
    if (close_now) c.close(close_now->first, close_now->second);
    return;
  }
}

void AsgiSocket::message(websocket::Connection& c, std::string_view data, bool binary) {
  std::size_t waiting = 0;
  {
    std::lock_guard lock(mu_);
    if (detached_ || ended_) return;
    if (unread_ + data.size() <= kMaxUnread) {
      unread_ += data.size();
      push({binary ? Event::binary : Event::text, std::string(data), 0});
      return;
    }
    waiting = unread_;
  }
  stderr_stream().write("csgi: the ASGI app does not read its WebSocket messages (" + std::to_string(waiting) +
                        " bytes wait): closing with 1011");
  c.close(websocket::close_code::internal_error);
}

void AsgiSocket::closed(int code, std::string_view reason) {
  std::shared_ptr<websocket::Connection> last;
  std::lock_guard lock(mu_);
  ended_ = true;
  last.swap(conn_);  // the handler's callbacks hold this socket: no cycle through the connection
  if (!detached_) push({Event::disconnect, std::string(reason), code});
}

void AsgiSocket::push(Event e) {
  events_.push_back(std::move(e));
  if (fd_ >= 0) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
  }
}

void bind_asgi_websocket(py::module_& m) {
  py::class_<AsgiSocket, std::shared_ptr<AsgiSocket>>(m, "AsgiSocket", py::module_local(),
                                                      "One WebSocket of an ASGI app served by csgi.")
      .def("scope", &AsgiSocket::scope)
      .def("fileno", &AsgiSocket::fileno)
      .def("take", &AsgiSocket::take)
      .def("accept", &AsgiSocket::accept, py::arg("subprotocol") = py::none(), py::arg("headers") = py::none())
      .def("send", &AsgiSocket::send, py::arg("data"))
      .def("close", &AsgiSocket::close, py::arg("code") = 1000, py::arg("reason") = "")
      .def("fail", &AsgiSocket::fail, py::arg("message"))
      .def("buffered", &AsgiSocket::buffered)
      .def("detach", &AsgiSocket::detach);
  py::class_<AsgiSocketQueue, std::shared_ptr<AsgiSocketQueue>>(m, "AsgiSocketQueue", py::module_local(),
                                                                "WebSocket handshakes for an ASGI app's loop.")
      .def(py::init<>())
      .def("fileno", [](AsgiSocketQueue& q) { return q.fd(); })
      .def("reset", [](AsgiSocketQueue& q) { q.reset(); })
      .def("take", [](AsgiSocketQueue& q) {
        py::list out;
        for (auto& s : q.take()) out.append(py::cast(std::move(s)));
        return out;
      });
}

}  // namespace csgi::python
