// The app on a pool of threads (--app-threads, ServerOptions::app_threads): the io threads keep serving
// while the app blocks, and everything the app does with the connection (csgi.input, interim responses,
// streamed responses) still works from the pool thread.
#include <poll.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "csgi/core/extensions.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/response.hpp"
#include "csgi/core/server_stats.hpp"
#include "csgi/core/worker_board.hpp"
#include "running.hpp"

using namespace std::chrono_literals;
using csgi::Env;
using csgi::Response;
using csgi::standalone_test::connect_tcp;
using csgi::standalone_test::recv_until;
using csgi::standalone_test::send_all;
using csgi::standalone_test::Running;

namespace {

// One io thread; the app on `app_threads` threads.
csgi::standalone::ServerOptions one_io_thread(unsigned app_threads) {
  csgi::standalone::ServerOptions opt;
  opt.threads = 1;
  opt.app_threads = app_threads;
  return opt;
}

// A GET on a connection of its own; its answer within `wait` (what came by then), "" when the connect
// failed. Client threads call it: it asserts nothing.
std::string get(int port, std::string_view path, std::chrono::milliseconds wait = 5000ms) {
  int fd = csgi::standalone_test::try_connect_tcp(port);
  if (fd < 0) return {};
  send_all(fd, "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string r = recv_until(fd, "\x01", wait);
  ::close(fd);
  return r;
}

// With one io thread: /slow blocks its app until /fast, on another connection, has been answered in full
// (or 1.5 s have passed). True when /fast was answered while /slow was blocked.
bool fast_answered_while_slow_blocks(unsigned app_threads) {
  std::promise<void> entered, release;
  auto entered_f = entered.get_future();
  std::shared_future<void> release_f = release.get_future().share();
  Running run(
      [&](Env& env) {
        if (env.get(csgi::keys::PATH_INFO) == "/slow") {
          entered.set_value();
          bool released = release_f.wait_for(1500ms) == std::future_status::ready;
          return Response::text(200, released ? "slow done" : "slow gave up");
        }
        return Response::text(200, "fast");
      },
      one_io_thread(app_threads));
  int slow = connect_tcp(run.port);
  send_all(slow, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
  REQUIRE(entered_f.wait_for(5s) == std::future_status::ready);
  std::string fast = get(run.port, "/fast", 1000ms);
  bool answered = fast.find("\r\n\r\nfast") != std::string::npos;
  release.set_value();
  std::string s = recv_until(slow, "slow ");
  CHECK(s.rfind("HTTP/1.1 200", 0) == 0);
  ::close(slow);
  return answered;
}

}  // namespace

TEST_CASE("pool: an app that blocks holds no io thread; inline it holds its own") {
  CHECK(fast_answered_while_slow_blocks(4));
  // Inline, the one io thread is inside /slow's app: /fast waits until that gives up.
  CHECK_FALSE(fast_answered_while_slow_blocks(csgi::standalone_test::app_inline));
}

namespace {

// The app of the app_inline_first tests: /fast answers at once, /slow sleeps 300 ms (it blocks), /spin
// computes for 20 ms of its thread's CPU time; each records the thread it ran on. `entered` counts the
// /slow and /spin calls begun, `slow_done` the /slow calls ended.
struct InlineFirstApp {
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> entered{0};
  std::atomic<int> slow_done{0};

  static double thread_cpu_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }

  Response operator()(Env& env) {
    {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    std::string_view path = env.get(csgi::keys::PATH_INFO);
    if (path == "/slow") {
      ++entered;
      std::this_thread::sleep_for(300ms);
      ++slow_done;
    } else if (path == "/spin") {
      ++entered;
      double until = thread_cpu_seconds() + 0.02;
      volatile std::uint64_t x = 0;
      while (thread_cpu_seconds() < until) x = x + 1;
    }
    return Response::text(200, std::string(path.substr(1)));
  }
  std::size_t thread_count() {
    std::lock_guard lock(mu);
    return threads.size();
  }
};

csgi::standalone::ServerOptions inline_first() {
  auto opt = one_io_thread(4);
  opt.app_inline_first = true;
  return opt;
}

// Whether /fast, on a connection of its own, is answered while a /slow call is in the app.
bool fast_answered_during_slow(int port, InlineFirstApp& app) {
  int before = app.entered.load();
  int slow = connect_tcp(port);
  send_all(slow, "GET /slow HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  for (int i = 0; i < 5000 && app.entered.load() == before; ++i) std::this_thread::sleep_for(1ms);
  int done = app.slow_done.load();
  bool fast = get(port, "/fast", 2000ms).find("\r\n\r\nfast") != std::string::npos;
  bool during = app.slow_done.load() == done;
  CHECK(recv_until(slow, "\r\n\r\nslow").find("\r\n\r\nslow") != std::string::npos);
  ::close(slow);
  return fast && during;
}

}  // namespace

TEST_CASE("pool: app_inline_first runs a quick app on the io thread, a blocking one on the pool once it blocked") {
  InlineFirstApp app;
  Running run([&](Env& env) { return app(env); }, inline_first());
  // Quick calls, from several connections at once: all on the one io thread.
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      for (int i = 0; i < 10; ++i)
        if (get(run.port, "/fast").find("\r\n\r\nfast") != std::string::npos) ++answered;
    });
  for (auto& t : clients) t.join();
  CHECK(answered == 40);
  CHECK(app.thread_count() == 1);
  // A first slow call (a set-up, maybe) leaves it inline; the next call that blocks past the limit moves
  // it; from then on a blocked call holds no io thread.
  for (int i = 0; i < 2; ++i) CHECK(get(run.port, "/slow").find("\r\n\r\nslow") != std::string::npos);
  CHECK(app.thread_count() == 1);
  CHECK(fast_answered_during_slow(run.port, app));
  CHECK(fast_answered_during_slow(run.port, app));
  CHECK(app.thread_count() > 1);
}

TEST_CASE("pool: app_inline_first moves an app whose call computes past the limit to the pool") {
  InlineFirstApp app;
  Running run([&](Env& env) { return app(env); }, inline_first());
  for (int i = 0; i < 2; ++i) CHECK(get(run.port, "/spin").find("\r\n\r\nspin") != std::string::npos);
  CHECK(app.thread_count() == 1);
  CHECK(fast_answered_during_slow(run.port, app));
}

TEST_CASE("pool: without app_inline_first the pool serves from the first call") {
  InlineFirstApp app;
  Running run([&](Env& env) { return app(env); }, one_io_thread(4));
  CHECK(fast_answered_during_slow(run.port, app));
}

TEST_CASE("pool: a slow chunked body read by the app does not stall another connection") {
  Running run(
      [](Env& env) {
        if (env.get(csgi::keys::PATH_INFO) == "/fast") return Response::text(200, "fast");
        return Response::text(200, "read " + env.input().read_all());
      },
      one_io_thread(2));
  int slow = connect_tcp(run.port);
  send_all(slow, "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  std::this_thread::sleep_for(100ms);  // the app is reading, waiting for the next chunk
  CHECK(get(run.port, "/fast", 2000ms).find("\r\n\r\nfast") != std::string::npos);
  send_all(slow, "2\r\nde\r\n0\r\n\r\n");
  CHECK(recv_until(slow, "read abcde").find("\r\n\r\nread abcde") != std::string::npos);
  ::close(slow);
}

TEST_CASE("pool: a slow body read by the app times out with 408") {
  auto opt = one_io_thread(2);
  opt.body_timeout = 300ms;
  opt.body_buffer_bytes = 4;  // read by the app, not before it runs
  Running run([](Env& env) { return Response::text(200, env.input().read_all()); }, opt);
  int fd = connect_tcp(run.port);
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab");
  std::string got = recv_until(fd, "\x01");
  CHECK(got.rfind("HTTP/1.1 408", 0) == 0);
  ::close(fd);
}

TEST_CASE("pool: Expect: 100-continue is answered when the app reads the body") {
  Running run([](Env& env) { return Response::text(200, "got " + env.input().read_all()); }, one_io_thread(2));
  int fd = connect_tcp(run.port);
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  std::string interim = recv_until(fd, "\r\n\r\n");
  REQUIRE(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  send_all(fd, "hello");
  CHECK(recv_until(fd, "got hello").find("\r\n\r\ngot hello") != std::string::npos);
  ::close(fd);
}

TEST_CASE("pool: an interim response (103) from the pool thread goes out before the final one") {
  Running run(
      [](Env& env) {
        auto* info = env.object<csgi::Informational>(csgi::keys::x::informational);
        bool sent = info && info->send(103, csgi::Headers{{"Link", "</a.css>; rel=preload"}});
        return Response::text(200, sent ? "sent" : "not sent");
      },
      one_io_thread(2));
  std::string r = get(run.port, "/");
  CHECK(r.rfind("HTTP/1.1 103", 0) == 0);
  CHECK(r.find("Link: </a.css>") != std::string::npos);
  CHECK(r.find("\r\n\r\nsent") != std::string::npos);
}

TEST_CASE("pool: pull streams, delayed responses and Writers answer from the pool") {
  std::atomic<bool> stream_closed{false};
  Running run(
      [&](Env& env) {
        std::string_view path = env.get(csgi::keys::PATH_INFO);
        if (path == "/stream") {
          Response r = Response::text(200, "");
          int n = 0;
          r.body = csgi::make_stream(
              [n]() mutable -> std::optional<std::string> {
                if (n == 3) return std::nullopt;
                return std::string(1, static_cast<char>('a' + n++)) + std::string(100000, '.');
              },
              [&] { stream_closed = true; });
          return r;
        }
        if (path == "/writer") {
          return Response::delayed([](csgi::Responder r) {
            auto w = r.start(200, {{"Content-Type", "text/plain"}});
            w->write("one ");
            w->write("two");
            w->close();
          });
        }
        return Response::delayed([](csgi::Responder r) { r.respond(Response::text(200, "answered")); });
      },
      one_io_thread(2));
  std::string s = get(run.port, "/stream");
  CHECK(s.find("Transfer-Encoding: chunked") != std::string::npos);
  CHECK(s.find("a....") != std::string::npos);
  CHECK(s.find("c....") != std::string::npos);
  CHECK(s.size() > 300000);
  CHECK(s.find("\r\n0\r\n\r\n") != std::string::npos);
  CHECK(stream_closed);
  std::string w = get(run.port, "/writer");
  CHECK(w.find("one ") != std::string::npos);
  CHECK(w.find("two") != std::string::npos);
  CHECK(w.find("0\r\n\r\n") != std::string::npos);
  CHECK(get(run.port, "/delayed").find("\r\n\r\nanswered") != std::string::npos);
}

TEST_CASE("pool: an app exception is a 500 and is logged") {
  std::string log = "/tmp/csgi-pool-errors-" + std::to_string(::getpid()) + ".log";
  ::unlink(log.c_str());
  auto opt = one_io_thread(2);
  opt.error_log = log;
  {
    Running run([](Env&) -> Response { throw std::runtime_error("app broke"); }, opt);
    CHECK(get(run.port, "/x").rfind("HTTP/1.1 500", 0) == 0);
  }
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str().find("app broke") != std::string::npos);
  ::unlink(log.c_str());
}

TEST_CASE("pool: a client that closes while the app runs leaves the env to the app until it returns", "[APP-4]") {
  std::promise<void> entered, release;
  auto entered_f = entered.get_future();
  std::shared_future<void> release_f = release.get_future().share();
  std::promise<std::string> seen;
  auto seen_f = seen.get_future();
  Running run(
      [&](Env& env) {
        if (env.get(csgi::keys::PATH_INFO) == "/ok") return Response::text(200, "ok");
        entered.set_value();
        (void)release_f.wait_for(5s);
        // The env (views into the connection's buffer) is still the request's.
        seen.set_value(std::string(env.get(csgi::keys::REQUEST_URI)) + " " + std::string(env.get("HTTP_X_TAG")));
        return Response::text(200, std::string(100000, 'z'));
      },
      one_io_thread(2));
  int fd = connect_tcp(run.port);
  send_all(fd, "GET /gone?q=1 HTTP/1.1\r\nHost: t\r\nX-Tag: kept\r\n\r\n");
  REQUIRE(entered_f.wait_for(5s) == std::future_status::ready);
  ::close(fd);
  // Other connections reuse the io thread (and its buffers) meanwhile.
  for (int i = 0; i < 5; ++i) CHECK(get(run.port, "/ok").find("\r\n\r\nok") != std::string::npos);
  release.set_value();
  REQUIRE(seen_f.wait_for(5s) == std::future_status::ready);
  CHECK(seen_f.get() == "/gone?q=1 kept");
  CHECK(get(run.port, "/ok").find("\r\n\r\nok") != std::string::npos);
}

TEST_CASE("pool: a client that closes before the end of its body never reaches the app, nor stops the server") {
  std::atomic<int> called{0};
  auto opt = one_io_thread(2);
  opt.body_buffer_bytes = 16;
  Running run(
      [&](Env& env) {
        if (env.get(csgi::keys::PATH_INFO) == "/ok") return Response::text(200, "ok");
        ++called;
        return Response::text(200, "?");
      },
      opt);
  int fd = connect_tcp(run.port);
  send_all(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'b'));
  std::this_thread::sleep_for(100ms);
  ::close(fd);
  CHECK(get(run.port, "/ok").find("\r\n\r\nok") != std::string::npos);
  CHECK(called == 0);
}

TEST_CASE("pool: a graceful stop waits for the request in the pool") {
  std::promise<void> entered;
  auto entered_f = entered.get_future();
  auto app = [&](Env&) {
    entered.set_value();
    std::this_thread::sleep_for(300ms);
    return Response::text(200, "finished");
  };
  auto run = std::make_unique<Running>(app, one_io_thread(2));
  int fd = connect_tcp(run->port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  REQUIRE(entered_f.wait_for(5s) == std::future_status::ready);
  run->server.stop();
  std::string got = recv_until(fd, "finished");
  CHECK(got.find("\r\n\r\nfinished") != std::string::npos);
  CHECK(got.find("Connection: close") != std::string::npos);
  ::close(fd);
  run->thread.join();
  CHECK(run->result.get() == 0);
}

TEST_CASE("pool: csgix.io hands the connection to the app on the pool thread") {
  Running run(
      [](Env& env) {
        auto* io = env.object<csgi::Hijack>(csgi::keys::x::io);
        std::string pending;
        int fd = io ? io->take(pending) : -1;
        if (fd < 0) return Response::text(200, "take failed");
        std::string reply = "RAW " + pending;
        ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        ::close(fd);
        return Response::text(200, "ignored");
      },
      one_io_thread(2));
  int fd = connect_tcp(run.port);
  send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\nextra");
  std::string got = recv_until(fd, "\x01");
  ::close(fd);
  CHECK(got == "RAW extra");
}

TEST_CASE("pool: the server's WorkerBoard shows requests waiting for an app thread and the busy threads") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> entered{0};
  Running run(
      [&](Env&) {
        entered.fetch_add(1);
        released.wait();
        return Response::text(200, "done");
      },
      one_io_thread(1));
  const csgi::WorkerBoard* board = run.server.stats().board();
  REQUIRE(board != nullptr);
  int a = connect_tcp(run.port), b = connect_tcp(run.port);
  send_all(a, "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  send_all(b, "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  csgi::WorkerBoard::Totals t;
  for (int i = 0; i < 200; ++i) {  // one request in the app, the other queued behind it
    t = board->totals();
    if (entered.load() == 1 && t.app_queued == 1) break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(t.workers == 1);
  CHECK(t.app_busy == 1);
  CHECK(t.app_queued == 1);
  CHECK(t.connections_open == 2);
  release.set_value();
  CHECK(recv_until(a, "done").find("\r\n\r\ndone") != std::string::npos);
  CHECK(recv_until(b, "done").find("\r\n\r\ndone") != std::string::npos);
  ::close(a);
  ::close(b);
  for (int i = 0; i < 200 && (board->totals().app_busy || board->totals().connections_open); ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(board->totals().app_busy == 0);
  CHECK(board->totals().app_queued == 0);
  CHECK(board->totals().connections_open == 0);
}
