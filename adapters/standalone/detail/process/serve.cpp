// A process serving with its io threads (a single process, or a prefork worker after its fork): the app
// pool, recycling, fault containment, the signals it handles, and systemd's ticker.
#include <signal.h>

#include <boost/asio/signal_set.hpp>
#include <functional>
#include <optional>
#include <thread>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/exchange/inline_watch.hpp"
#include "csgi/adapters/standalone/detail/http3/h3.hpp"
#include "csgi/adapters/standalone/detail/process/binary_upgrade.hpp"
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/process/recycle.hpp"
#include "csgi/adapters/standalone/detail/process/server_impl.hpp"
#include "csgi/adapters/standalone/detail/process/signal_actions.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"

namespace csgi::standalone {

using namespace detail;
using boost::system::error_code;

int Server::Impl::serve(Shared& sh, bool in_worker) {
  // --reload: the app's library or module is loaded here, in each new worker; a failure ends the worker
  // before it is ready, and the master keeps the workers it has.
  if (in_worker && opt.reload.load) opt.reload.load();
  {
    std::lock_guard lock(mu);
    for (unsigned i = 0; i < opt.threads; ++i) threads.push_back(std::make_unique<IoThread>(sh, i));
  }
  for (auto& t : threads) sh.threads.push_back(t.get());
  // The app's pool: created here, in the process that serves (a prefork worker after its fork); joined
  // once the io threads are done and before they are destroyed (its jobs use their connections).
  std::optional<AppPool> pool;
  if (in_worker) make_fault_slots(threads, opt.app_threads);
  if (opt.app_threads > 0) {
    std::function<void(unsigned)> on_start;
    if (in_worker)
      on_start = [io = static_cast<unsigned>(threads.size())](unsigned i) {
        FaultSlot& slot = app_thread_fault_slot(io, i);
        take_fault_slot(slot);
        pool_fault_slot = &slot;
      };
    pool.emplace(opt.app_threads, sh.slot, std::move(on_start));
    sh.pool = &*pool;
  }
  std::optional<InlineWatch> inline_watch;
  if (sh.pool && opt.app_inline_first) {
    inline_watch.emplace(sh.errors, opt.app_threads);
    sh.inline_watch = &*inline_watch;
  }
  std::optional<Recycler> recycler;
  if (in_worker && (opt.max_requests > 0 || opt.max_worker_rss > 0)) {
    recycler.emplace(opt, [this, &sh](WorkerBoard::Cause cause, const std::string& why) { retire(sh, cause, why); });
    sh.recycler = &*recycler;
  }
  sh.accepting = static_cast<unsigned>(threads.size());
  if (in_worker) arm_fault_containment(sh, threads, [this](WorkerBoard::Cause cause) { notify_master(cause); });
  for (auto& t : threads) t->listen(sh.listeners, opt.reuseport);
  // HTTP/3: each io thread's UDP sockets of the TLS listeners (closed by its graceful stop).
  std::vector<std::vector<std::unique_ptr<QuicEndpoint>>> http3;
  http3.reserve(threads.size());  // the stop handlers keep references to its elements
  for (auto& t : threads) {
    http3.push_back(open_http3(*t));
    if (t->index > 0)
      t->on_stop = [&eps = http3.back()] {
        for (auto& e : eps) e->stop();
      };
  }
  // The signal set belongs to thread 0's io_context and must go before it does (below).
  std::optional<asio::signal_set> signals(std::in_place, threads[0]->ioc);
  std::optional<Ticker> ticker;  // systemd's watchdog and STATUS (or a worker's count for its master's)
  install_ticker(ticker, in_worker);
  threads[0]->on_stop = [&signals, &ticker, &eps = http3[0]] {
    for (auto& e : eps) e->stop();
    error_code ignore;
    if (signals) signals->cancel(ignore);
    if (ticker) ticker->cancel();
  };
  if (opt.handle_signals || in_worker) {
    signals->add(SIGTERM);
    signals->add(SIGINT);
    signals->add(SIGHUP);
    signals->add(SIGUSR1);
    if (!in_worker) signals->add(SIGUSR2);
  }
  // SIGHUP's TLS reload runs beside the io threads: fetching OCSP responses may take seconds. One at a
  // time; the last one is waited for when serving ends.
  std::future<void> tls_reload;
  std::function<void(const error_code&, int)> wait_signal = [&](const error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP)  // HTTP/3's certificates, each io thread's on that thread (thread 0 says a failure)
      for (std::size_t i = 0; i < threads.size(); ++i)
        asio::post(threads[i]->ioc, [&sh, &eps = http3[i], i] {
          for (auto& e : eps)
            if (std::string err = e->reload(); !err.empty() && i == 0)
              sh.errors.write("csgi: HTTP/3 certificates not reloaded, the previous ones stay: " + err);
        });
    if (on_signal(sh, in_worker, sig, tls_reload)) signals->async_wait(wait_signal);
  };
  if (opt.handle_signals || in_worker) signals->async_wait(wait_signal);
  if (in_worker) {
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    if (reports) reports->ready();
  } else {
    announce(sh.listeners);
    sd.ready(served_status());
    tell_upgrade_ready(upgrade_fd);
  }
  {
    std::lock_guard lock(mu);
    if (stop_requested)
      for (auto& t : threads) t->stop();
  }
  std::vector<std::thread> extra;
  for (std::size_t i = 1; i < threads.size(); ++i) extra.emplace_back([t = threads[i].get()] { t->run(); });
  // Thread 0 runs here; its signal wait ends with the stop.
  threads[0]->run();
  for (auto& th : extra) th.join();
  if (pool) pool->shutdown();
  disarm_fault_containment();  // a fault from here on (teardown) is not contained
  http3.clear();
  if (in_worker) {
    // Done serving: a SIGTERM that comes now (the master repeating a stop) must not find the default
    // action once the signal set is gone; the worker is about to exit anyway.
    sigset_t block;
    sigemptyset(&block);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&block, sig);
    ::sigprocmask(SIG_BLOCK, &block, nullptr);
    if (reports) reports->publish(stats.snapshot().requests_total);
  }
  ticker.reset();
  signals.reset();
  {
    std::lock_guard lock(mu);
    sh.threads.clear();
    threads.clear();
  }
  sh.pool = nullptr;
  sh.inline_watch = nullptr;
  sh.recycler = nullptr;
  return 0;
}

bool Server::Impl::on_signal(Shared& sh, bool in_worker, int sig, std::future<void>& tls_reload) {
  if (sig == SIGTERM || sig == SIGINT) {
    if (!in_worker) {
      sd.stopping("stopping: finishing the requests in flight");
      log_signal(sh, sig, "stopping gracefully: no new connections; requests in flight get up to " +
                              seconds_text(opt.graceful_timeout));
    }
    std::lock_guard lock(mu);
    stop_requested = true;
    for (auto& t : threads) t->stop();
    return false;
  }
  if (sig == SIGUSR2) {
    sh.errors.write("csgi: SIGUSR2 (binary upgrade) needs --workers: a master process that starts the new "
                    "binary while its workers serve; ignored");
  } else {
    // SIGUSR1 (and SIGHUP in a single process): reopen every log file of the process, the app's too;
    // SIGHUP also re-reads the TLS certificates.
    if (sig == SIGHUP && !in_worker) sd.reloading("reopening the log files");
    reopen_logs(sh);
    if (!in_worker)
      log_signal(sh, sig, sig == SIGHUP && sh.tls ? "reopened the log files; re-reading the TLS certificates"
                                                  : "reopened the log files");
    if (sig == SIGHUP && sh.tls) {
      try {
        if (!tls_reload.valid() || tls_reload.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
          tls_reload = std::async(std::launch::async, [&sh] { reload_tls(sh); });
        else
          sh.errors.write("csgi: SIGHUP: the TLS certificates are being re-read already");
      } catch (const std::exception& e) {
        sh.errors.write(std::string("csgi: SIGHUP: cannot re-read the TLS certificates: ") + e.what());
      }
    }
    if (sig == SIGHUP && !in_worker) sd.ready(served_status());
  }
  return true;
}

// With systemd's NOTIFY_SOCKET set: a single process pings the watchdog and updates STATUS from its io
// thread 0 (so a stuck thread 0 stops the pings), a worker adds its count to its master's.
void Server::Impl::install_ticker(std::optional<Ticker>& ticker, bool in_worker) {
  if (!sd.enabled()) return;
  ticker.emplace(threads[0]->ioc, sd.tick_interval(), [this, in_worker] {
    std::uint64_t n = stats.snapshot().requests_total;
    if (in_worker) {
      if (reports) reports->publish(n);
    } else {
      sd.tick(Clock::now(), n, "serving, ");
    }
  });
}

}  // namespace csgi::standalone
