#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>

using csgi::standalone::detail::Mailbox;
namespace asio = boost::asio;

TEST_CASE("mailbox: what app threads post runs on the io thread, in order; finishing lets run() end") {
  asio::io_context ioc{1};
  auto work = asio::make_work_guard(ioc);
  auto box = std::make_shared<Mailbox>(ioc, nullptr);
  std::vector<int> ran;  // on the io thread only
  int elsewhere = 0;     // tasks that ran on another thread
  std::thread::id io_thread;
  std::thread io([&] {
    io_thread = std::this_thread::get_id();
    ioc.run();
  });
  constexpr int per_thread = 2000;
  // Catch2's checks are made on this thread only, once the others are done.
  auto poster = [&](int base, int& refused) {
    for (int i = 0; i < per_thread; ++i) {
      auto f = [&, v = base + i] {
        elsewhere += std::this_thread::get_id() != io_thread;
        ran.push_back(v);
      };
      refused += !box->post(f);
    }
  };
  int refused_a = 0, refused_b = 0;
  std::thread a(poster, 0, std::ref(refused_a)), b(poster, 100000, std::ref(refused_b));
  a.join();
  b.join();
  CHECK(refused_a + refused_b == 0);
  // A last post marks the end; the io thread has run all before it.
  std::promise<void> done;
  auto last = [&] {
    box->finishing();  // from here posts go to the io_context, and the mailbox keeps nothing waiting
    done.set_value();
  };
  REQUIRE(box->post(last));
  REQUIRE(done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto after = [&] { ran.push_back(-1); };
  REQUIRE(box->post(after));
  work.reset();  // nothing else keeps run() going: it returns once `after` has run
  io.join();
  CHECK(elsewhere == 0);
  REQUIRE(ran.size() == 2 * per_thread + 1);
  CHECK(ran.back() == -1);
  ran.pop_back();
  std::vector<int> from_a, from_b;  // each poster's tasks in the order it posted them
  for (int v : ran) (v >= 100000 ? from_b : from_a).push_back(v);
  CHECK(std::is_sorted(from_a.begin(), from_a.end()));
  CHECK(std::is_sorted(from_b.begin(), from_b.end()));
  CHECK(from_a.size() == per_thread);
  box->close();
  auto refused = [] {};
  CHECK_FALSE(box->post(refused));
}
