// What the app holds of a delayed response (the Responder, a started Writer) stays safe to use and to drop
// after the connection, the io thread and the whole server are gone (spec §5.3: any thread, now or later).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "csgi/adapters/standalone/server.hpp"
#include "running.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;

namespace {

// Serves `app` until stop(); destroying it destroys the server (its io threads and their io_contexts).
struct Served {
  csgi::standalone::Server server;
  std::thread thread;
  int port = 0;
  explicit Served(csgi::App app)
      : server(std::move(app), [] {
          csgi::standalone::ServerOptions opt;
          opt.handle_signals = false;
          opt.listen = {"127.0.0.1:0"};
          opt.graceful_timeout = 200ms;
          opt.app_threads = csgi::standalone_test::default_app_threads();
          opt.on_listening = [](const std::string&) {};
          return opt;
        }()) {
    thread = std::thread([this] { server.run(); });
    REQUIRE(server.wait_listening());
    auto a = server.addresses().front();
    port = std::stoi(a.substr(a.rfind(':') + 1));
  }
  ~Served() {
    server.stop();
    if (thread.joinable()) thread.join();
  }
};

int connect_send(int port, std::string_view request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  return fd;
}

bool readable_within(int fd, std::chrono::milliseconds t) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(t.count())) == 1;
}

// Serves one request whose delayed response is handed to `late` on a thread of the app's own, which
// runs it only once the server has been stopped and destroyed. `late` gets the Responder.
void after_server(std::function<void(csgi::Responder)> late) {
  std::promise<void> gone;
  std::shared_future<void> server_gone = gone.get_future().share();
  std::promise<std::thread> worker;
  auto worker_f = worker.get_future();
  {
    Served s([&](Env&) {
      return Response::delayed([&](csgi::Responder r) {
        worker.set_value(std::thread([r = std::move(r), server_gone, late]() mutable {
          server_gone.wait();
          late(std::move(r));
        }));
      });
    });
    int fd = connect_send(s.port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    REQUIRE(worker_f.wait_for(5s) == std::future_status::ready);
    readable_within(fd, 50ms);  // a started writer's head may come; an unanswered responder sends nothing
    ::close(fd);
  }
  gone.set_value();
  std::thread t = worker_f.get();
  t.join();
}

}  // namespace

TEST_CASE("standalone: a Responder answered after the server is gone does nothing") {
  after_server([](csgi::Responder r) { r.respond(Response::text(200, "late")); });
}

TEST_CASE("standalone: a Responder dropped after the server is gone does nothing") {
  after_server([](csgi::Responder r) { std::optional<csgi::Responder> drop(std::move(r)); });
}

TEST_CASE("standalone: a Responder started after the server is gone gives a Writer whose writes fail") {
  after_server([](csgi::Responder r) {
    auto w = r.start(200, {{"Content-Type", "text/plain"}});
    CHECK_FALSE(w->write("late"));
    w->close();
  });
}

TEST_CASE("standalone: a started Writer used after the server is gone says the client has gone") {
  // Started on the io thread; written, closed and dropped on the app's thread after the server is gone.
  std::promise<csgi::WriterPtr> started;
  auto w_f = started.get_future();
  std::promise<void> gone;
  std::shared_future<void> server_gone = gone.get_future().share();
  std::thread t;
  {
    Served s([&](Env&) {
      return Response::delayed([&](csgi::Responder r) {
        auto w = r.start(200, {{"Content-Type", "text/plain"}});
        t = std::thread([w, server_gone]() mutable {
          server_gone.wait();
          bool ok = true;
          for (int i = 0; i < 64 && ok; ++i) ok = w->write(std::string(64 * 1024, 'x'));  // past the high water
          CHECK_FALSE(ok);
          w->close();
          w.reset();
        });
        started.set_value(nullptr);
      });
    });
    int fd = connect_send(s.port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    REQUIRE(w_f.wait_for(5s) == std::future_status::ready);
    CHECK(readable_within(fd, 5000ms));  // the head
    ::close(fd);
  }
  gone.set_value();
  t.join();
}

TEST_CASE("standalone: a started Writer dropped unclosed after the server is gone does nothing") {
  std::promise<void> gone;
  std::shared_future<void> server_gone = gone.get_future().share();
  std::promise<std::thread> worker;
  auto worker_f = worker.get_future();
  {
    Served s([&](Env&) {
      return Response::delayed([&](csgi::Responder r) {
        auto w = r.start(200, {{"Content-Type", "text/plain"}});
        worker.set_value(std::thread([w, server_gone]() mutable {
          server_gone.wait();
          w.reset();
        }));
      });
    });
    int fd = connect_send(s.port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    REQUIRE(worker_f.wait_for(5s) == std::future_status::ready);
    ::close(fd);
  }
  gone.set_value();
  std::thread t = worker_f.get();
  t.join();
}

TEST_CASE("standalone: csgi.errors kept by an unanswered delayed response still works after the server is gone") {
  // The env is the app's until it answers (APP-3); an app that logs from its own thread (cgi_bin: the
  // script's stderr) may still be running when the server has gone.
  std::promise<void> gone;
  std::shared_future<void> server_gone = gone.get_future().share();
  std::promise<std::thread> worker;
  auto worker_f = worker.get_future();
  {
    Served s([&](Env& env) {
      csgi::ErrorStream* errors = &env.errors();
      return Response::delayed([&, errors](csgi::Responder r) {
        worker.set_value(std::thread([r = std::move(r), errors, server_gone]() mutable {
          server_gone.wait();
          errors->write("lifetime_test: a line written after the server is gone");
          r.respond(Response::text(200, "late"));
        }));
      });
    });
    int fd = connect_send(s.port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    REQUIRE(worker_f.wait_for(5s) == std::future_status::ready);
    ::close(fd);
  }
  gone.set_value();
  std::thread t = worker_f.get();
  t.join();
}

// APP-4: the env and csgi.input of a delayed response stay the request's until the response is complete,
// also when the client or the whole server has gone before.
namespace {

struct Seen {
  std::string path, uri, header, remote;
  bool match(std::string_view tag) const {
    return path == "/late/" + std::string(tag) && uri == "/late/" + std::string(tag) + "?q=" + std::string(tag) &&
           header == std::string(tag) && remote == "127.0.0.1";
  }
};

Seen read_env(const Env& env) {
  return {std::string(env.get(csgi::keys::PATH_INFO)), std::string(env.get(csgi::keys::REQUEST_URI)),
          std::string(env.get("HTTP_X_TAG")), std::string(env.get(csgi::keys::REMOTE_ADDR))};
}

// With a body of `body` bytes (a POST), larger than the connection's buffer when it is 100 KB.
std::string late_request(std::string_view tag, std::size_t body = 0) {
  std::string length = body ? "Content-Length: " + std::to_string(body) + "\r\n" : "";
  return (body ? "POST" : "GET") + std::string(" /late/") + std::string(tag) + "?q=" + std::string(tag) +
         " HTTP/1.1\r\nHost: t\r\nX-Tag: " + std::string(tag) + "\r\n" + length + "\r\n" + std::string(body, 'b');
}

// Closes with a reset, so that the server's next send fails at once.
void reset_close(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// Requests other envs from the io thread's pool, each with its own values, answered at once.
void other_requests(int port, int n) {
  for (int i = 0; i < n; ++i) {
    std::string tag = "other" + std::to_string(i) + std::string(40, 'z');
    int fd = connect_send(port, "GET /now/" + tag + "?q=" + tag + " HTTP/1.1\r\nHost: t\r\nX-Tag: " + tag + "\r\n\r\n");
    CHECK(readable_within(fd, 5000ms));
    ::close(fd);
  }
}

// The app: /late/* answers late from a thread of its own, which gets the Responder and the env; every
// other request is answered at once. Cleanup handlers record when they run.
struct LateApp {
  std::promise<std::thread> worker;
  std::function<void(csgi::Responder, Env&)> late;
  std::atomic<int> cleaned{0};
  csgi::App app() {
    return [this](Env& env) {
      if (env.get(csgi::keys::PATH_INFO).substr(0, 6) != "/late/") return Response::text(200, "now");
      if (auto* c = env.object<csgi::CleanupHandlers>(csgi::keys::x::cleanup_handlers))
        c->add([this](Env&) { cleaned.fetch_add(1); });
      return Response::delayed([this, &env](csgi::Responder r) {
        worker.set_value(std::thread([this, r = std::move(r), &env]() mutable { late(std::move(r), env); }));
      });
    };
  }
};

}  // namespace

TEST_CASE("standalone: a delayed response answered after the client and the server are gone still reads its env [APP-4]") {
  std::size_t body = GENERATE(std::size_t(0), std::size_t(100000));
  LateApp a;
  std::promise<void> gone;
  std::shared_future<void> server_gone = gone.get_future().share();
  Seen seen;
  int cleaned_before_answer = -1;
  a.late = [&](csgi::Responder r, Env& env) {
    server_gone.wait();
    seen = read_env(env);
    char c;
    CHECK_THROWS(env.input().read(&c, 1));  // the connection is gone: the body cannot be read
    cleaned_before_answer = a.cleaned.load();
    r.respond(Response::text(200, "late"));
  };
  auto worker_f = a.worker.get_future();
  {
    Served s(a.app());
    int fd = connect_send(s.port, late_request("first", body));
    REQUIRE(worker_f.wait_for(5s) == std::future_status::ready);
    reset_close(fd);
    other_requests(s.port, 4);
  }
  gone.set_value();
  std::thread t = worker_f.get();
  t.join();
  CHECK(seen.match("first"));
  CHECK(cleaned_before_answer == 0);  // cleanup handlers run once the response is complete (EXT-4)
  CHECK(a.cleaned.load() == 1);
}

TEST_CASE("standalone: a Writer of a client gone reads its env while other requests reuse the io thread [APP-4]") {
  LateApp a;
  std::promise<void> failed;
  std::promise<void> others_done;
  Seen seen;
  bool write_failed = false;
  int cleaned_before_close = -1;
  a.late = [&](csgi::Responder r, Env& env) {
    auto w = r.start(200, {{"Content-Type", "text/plain"}});
    // The client reset the connection: writes fail once the server has seen it.
    for (int i = 0; i < 500 && !write_failed; ++i) {
      write_failed = !w->write(std::string(1024, 'x'));
      if (!write_failed) std::this_thread::sleep_for(10ms);
    }
    failed.set_value();
    others_done.get_future().wait();
    seen = read_env(env);
    char c;
    CHECK_THROWS(env.input().read(&c, 1));
    cleaned_before_close = a.cleaned.load();
    w->close();
  };
  auto worker_f = a.worker.get_future();
  auto failed_f = failed.get_future();
  std::thread t;
  {
    Served s(a.app());
    int fd = connect_send(s.port, late_request("second"));
    REQUIRE(worker_f.wait_for(5s) == std::future_status::ready);
    t = worker_f.get();
    reset_close(fd);
    REQUIRE(failed_f.wait_for(10s) == std::future_status::ready);
    other_requests(s.port, 4);  // the io thread's pooled envs are taken and filled again
    others_done.set_value();
    t.join();
  }
  CHECK(write_failed);
  CHECK(seen.match("second"));
  CHECK(cleaned_before_close == 0);
  CHECK(a.cleaned.load() == 1);
}
