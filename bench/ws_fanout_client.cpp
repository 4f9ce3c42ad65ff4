// Broadcast fan-out client of the web_mw suite (bench/suites/web_mw.sh), on Beast, one thread:
//   ws_fanout_client PORT CLIENTS MESSAGES [GAP_MS [PID...]]
// opens CLIENTS WebSockets to ws://127.0.0.1:PORT/ws (web_mw_app.cpp: each is subscribed once it has
// read "ready"), then publishes MESSAGES messages one after the other (POST /publish on a connection of
// its own, GAP_MS apart, default 10), each once the previous one reached every client. Prints one JSON
// object: per message the microseconds from just before the POST was written until the first and the
// last client read it, and the CPU time over the publishing of this process and of each PID (the server's
// processes, from /proc/PID/stat). Exits 1 with the reason when a
// connection fails or a message misses a client for 10 s.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "ws_fanout_client: " << what << "\n";
  std::exit(1);
}

/// utime + stime of process `pid` in microseconds (0 when it is gone).
long pid_cpu_us(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = stat.rfind(')');
  if (at == std::string::npos) return 0;
  std::istringstream fields(stat.substr(at + 2));
  std::string f;
  long ticks = 0;
  for (int i = 3; fields >> f && i <= 15; ++i)  // field 3 is the state; 14 utime, 15 stime
    if (i >= 14) ticks += std::atol(f.c_str());
  return ticks * (1000000L / sysconf(_SC_CLK_TCK));
}

long cpu_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000L + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

struct Message {
  Clock::time_point sent, first, last;
  std::size_t got = 0;
};

struct Run {
  asio::io_context io;
  tcp::endpoint server;
  std::size_t clients = 0, ready = 0, opening = 0, started = 0;
  std::vector<Message> messages;
  std::size_t current = 0;  // the message being published
  bool answered = false;    // its POST was answered
  std::function<void()> delivered;  // the current message reached every client
};

class Client : public std::enable_shared_from_this<Client> {
public:
  explicit Client(Run& run) : run_(run), ws_(run.io) {}
  /// Starts clients while fewer than 64 handshakes are in flight, so that the server's accept queue never
  /// overflows; each one that is ready calls it again.
  static void open_more(Run& run);

  void start() {
    auto self = shared_from_this();
    beast::get_lowest_layer(ws_).async_connect(run_.server, [self](beast::error_code ec) {
      if (ec) fail("connect: " + ec.message());
      self->ws_.async_handshake("127.0.0.1", "/ws", [self](beast::error_code ec) {
        if (ec) fail("handshake: " + ec.message());
        self->read();
      });
    });
  }

private:
  void read() {
    auto self = shared_from_this();
    ws_.async_read(buf_, [self](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    Clock::time_point now = Clock::now();
    if (ec) fail("read: " + ec.message());
    std::string text = beast::buffers_to_string(buf_.data());
    buf_.consume(buf_.size());
    if (text == "ready") {
      ++run_.ready;
      --run_.opening;
      open_more(run_);
    } else {
      std::size_t i = std::strtoul(text.c_str(), nullptr, 10);
      if (i >= run_.messages.size()) fail("unexpected message " + text);
      Message& m = run_.messages[i];
      if (m.got++ == 0) m.first = now;
      m.last = now;
      if (m.got == run_.clients) run_.delivered();
    }
    read();
  }

  Run& run_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buf_;
};

void Client::open_more(Run& run) {
  while (run.started < run.clients && run.opening < 64) {
    ++run.started;
    ++run.opening;
    std::make_shared<Client>(run)->start();
  }
}

/// POSTs each message on one keep-alive connection, GAP_MS after the previous one reached every client.
class Publisher {
public:
  Publisher(Run& run, int gap_ms) : run_(run), stream_(run.io), timer_(run.io), deadline_(run.io), gap_(gap_ms) {}

  void start() {
    stream_.connect(run_.server);
    schedule();
  }

  void schedule() {
    if (run_.current == run_.messages.size()) {
      deadline_.cancel();
      return;
    }
    timer_.expires_after(std::chrono::milliseconds(gap_));
    timer_.async_wait([this](beast::error_code) { send(); });
  }

  /// The next message once the current one reached every client and its POST was answered.
  void complete() {
    if (run_.current == run_.messages.size() || run_.messages[run_.current].got != run_.clients || !run_.answered) return;
    ++run_.current;
    run_.answered = false;
    schedule();
  }

private:
  void send() {
    req_ = {http::verb::post, "/publish", 11};
    req_.set(http::field::host, "127.0.0.1");
    req_.set(http::field::content_type, "text/plain");
    req_.body() = std::to_string(run_.current);
    req_.prepare_payload();
    deadline_.expires_after(std::chrono::seconds(10));
    deadline_.async_wait([this](beast::error_code ec) {
      if (!ec)
        fail("message " + std::to_string(run_.current) + " reached " + std::to_string(run_.messages[run_.current].got) +
             " of " + std::to_string(run_.clients) + " clients in 10 s");
    });
    run_.messages[run_.current].sent = Clock::now();
    http::async_write(stream_, req_, [this](beast::error_code ec, std::size_t) {
      if (ec) fail("publish: " + ec.message());
      res_ = {};
      http::async_read(stream_, buf_, res_, [this](beast::error_code ec, std::size_t) {
        if (ec) fail("publish answer: " + ec.message());
        if (res_.result() != http::status::accepted) fail("publish answered " + std::to_string(res_.result_int()) + ": " + res_.body());
        run_.answered = true;
        complete();
      });
    });
  }

  Run& run_;
  beast::tcp_stream stream_;
  asio::steady_timer timer_, deadline_;
  int gap_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
  beast::flat_buffer buf_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) fail("usage: ws_fanout_client PORT CLIENTS MESSAGES [GAP_MS [PID...]]");
  Run run;
  run.server = {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::atoi(argv[1]))};
  run.clients = std::strtoul(argv[2], nullptr, 10);
  run.messages.resize(std::strtoul(argv[3], nullptr, 10));
  int gap_ms = argc > 4 ? std::atoi(argv[4]) : 10;
  std::vector<std::string> pids(argv + std::min(argc, 5), argv + argc);
  std::vector<long> pid_cpu(pids.size());
  if (run.clients == 0 || run.messages.empty()) fail("CLIENTS and MESSAGES must be above 0");

  Publisher publisher(run, gap_ms);
  run.delivered = [&] { publisher.complete(); };
  asio::steady_timer opening(run.io);
  opening.expires_after(std::chrono::seconds(60));
  opening.async_wait([&](beast::error_code ec) {
    if (!ec && run.ready < run.clients) fail(std::to_string(run.ready) + " of " + std::to_string(run.clients) + " clients ready in 60 s");
  });
  long cpu_start = 0;
  Clock::time_point wall_start;
  asio::steady_timer poll(run.io);
  std::function<void()> wait_ready = [&] {
    if (run.ready == run.clients) {
      opening.cancel();
      cpu_start = cpu_us();
      for (std::size_t i = 0; i < pids.size(); ++i) pid_cpu[i] = pid_cpu_us(pids[i]);
      wall_start = Clock::now();
      publisher.start();
      return;
    }
    poll.expires_after(std::chrono::milliseconds(10));
    poll.async_wait([&](beast::error_code) { wait_ready(); });
  };
  Client::open_more(run);
  wait_ready();
  while (run.current < run.messages.size()) run.io.run_one();
  long cpu = cpu_us() - cpu_start;
  std::string servers = "{";
  for (std::size_t i = 0; i < pids.size(); ++i)
    servers += (i ? ", \"" : "\"") + pids[i] + "\": " + std::to_string(pid_cpu_us(pids[i]) - pid_cpu[i]);
  servers += "}";
  double wall = std::chrono::duration<double, std::micro>(Clock::now() - wall_start).count();

  auto us = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  std::string first = "[", last = "[";
  for (const Message& m : run.messages) {
    first += (first.size() > 1 ? "," : "") + std::to_string(us(m.sent, m.first));
    last += (last.size() > 1 ? "," : "") + std::to_string(us(m.sent, m.last));
  }
  std::printf("{\"clients\": %zu, \"messages\": %zu, \"gap_ms\": %d, \"first_us\": %s], \"last_us\": %s], "
              "\"client_cpu_us\": %ld, \"pid_cpu_us\": %s, \"wall_us\": %.0f}\n",
              run.clients, run.messages.size(), gap_ms, first.c_str(), last.c_str(), cpu, servers.c_str(), wall);
  std::fflush(stdout);
  std::_Exit(0);  // the clients' connections close with the process
}
